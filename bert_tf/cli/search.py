r"""Searches an index run_retrieval.py filled: each query's best passages, with their text.

    bert-tf-search --index=/tmp/retrieval_output "who won super bowl 50?" \
      "where was it played?"
    cat questions.txt | bert-tf-search --index=/tmp/retrieval_output \
      --output_format=jsonl

Queries are the arguments after the flags, else one a line on stdin (blank
lines skipped). --index is a run_retrieval --output_dir (its
index_settings.json names the Milvus URI, collection and model), or a Milvus
URI with --collection (the collection records its model). Prints, per query,
the rank, score, passage id (and its document's), title and text of the
--top_k best passages; --rerank_checkpoint re-orders them by a
cross-encoder's scores. Needs the extra: pip install '.[retrieval]'.
"""

import sys

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.errors import UserInputError
from bert_tf.options.search_options import SearchOptions


def checked_input(options, arguments):
    """(options, index, queries): the queries (the arguments, else stdin's
    lines) and the index opened and checked, before TensorFlow loads."""
    from bert_tf.tasks.search import open_index

    queries = [q for q in arguments if q.strip()]
    if not arguments:
        if sys.stdin is None or sys.stdin.isatty():
            raise UserInputError(
                "no queries: give them after the flags, or one a line on stdin"
            )
        queries = _stdin_queries()
    if not queries:
        raise UserInputError("no queries: the arguments or stdin hold only blanks")
    return options, open_index(options), queries


def _stdin_queries():
    """stdin's non-blank lines, read as UTF-8 bytes: a line that is not
    UTF-8 is one error naming it (not a decoding traceback)."""
    queries = []
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # a text stream already (a test's StringIO)
        return [line.strip() for line in sys.stdin if line.strip()]
    for number, raw in enumerate(stream, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise UserInputError(
                f"stdin:{number}: not UTF-8 ({error.reason}: byte "
                f"{raw[error.start]:#04x} at column {error.start + 1})"
            ) from None
        if line.strip():
            queries.append(line.strip())
    return queries


COMMAND = Command(
    "search",
    __doc__,
    OptionFlags(SearchOptions),
    "bert_tf.tasks.search:run",
    required=("index",),
    check=checked_input,
    arguments=True,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
