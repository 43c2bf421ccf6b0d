"""Which reader a file gets (``input_format``), and the inputs' names in keys."""

import glob
import os

from bert_tf.data_prep.corpus.documents import RawDocument
from bert_tf.data_prep.corpus.text_inputs import iter_jsonl_documents
from bert_tf.data_prep.corpus.text_inputs import iter_parquet_documents
from bert_tf.data_prep.corpus.text_inputs import iter_text_documents
from bert_tf.data_prep.corpus.wiki_dump import iter_wiki_pages
from bert_tf.errors import UserInputError

INPUT_FORMATS = ("auto", "wikipedia", "jsonl", "parquet", "text")
_COMPRESSION = (".bz2", ".gz")
_BY_EXTENSION = {
    ".xml": "wikipedia",
    ".jsonl": "jsonl",
    ".json": "jsonl",
    ".ndjson": "jsonl",
    ".parquet": "parquet",
}


def expand_input_patterns(input_file):
    """The files of a comma-separated list of paths and globs, each glob's
    matches sorted, in the order given (a file named twice is read once).

    Raises:
      UserInputError: a part matches no file.
    """
    files = []
    for pattern in input_file.split(","):
        pattern = pattern.strip()
        if not pattern:
            continue
        if glob.has_magic(pattern):
            matches = sorted(p for p in glob.glob(pattern) if os.path.isfile(p))
        else:
            matches = [pattern] if os.path.exists(pattern) else []
        if not matches:
            raise UserInputError(
                f"input_file: {pattern!r} matches no file", argument="input_file"
            )
        files.extend(m for m in matches if m not in files)
    if not files:
        raise UserInputError(
            f"input_file: no file given in {input_file!r}", argument="input_file"
        )
    return files


def resolve_format(path, input_format="auto"):
    """The format of `path`: `input_format`, or with ``auto`` its extension's
    (``.xml``/``*-pages-articles*.bz2`` dump, ``.jsonl``/``.json``,
    ``.parquet``; compressed ``.bz2``/``.gz`` looked through); anything else
    is plain text."""
    if input_format != "auto":
        return input_format
    name = os.path.basename(path).lower()
    for suffix in _COMPRESSION:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            if "pages-articles" in name or "pages-meta" in name:
                return "wikipedia"
    return _BY_EXTENSION.get(os.path.splitext(name)[1], "text")


def input_names(paths):
    """Each path's name in the keys: relative to the folder all inputs share,
    so the keys (and the shards) do not depend on where the corpus lies."""
    absolute = [os.path.abspath(p) for p in paths]
    root = os.path.commonpath([os.path.dirname(p) for p in absolute])
    return [os.path.relpath(p, root) for p in absolute]


def iter_raw_documents(path, name, input_format, text_column="text"):
    """Yields the `RawDocument`s of one file in the given (resolved) format."""
    if input_format == "wikipedia":
        for page in iter_wiki_pages(path):
            yield RawDocument(page.key, page=page)
    elif input_format == "jsonl":
        yield from iter_jsonl_documents(path, name, text_column)
    elif input_format == "parquet":
        yield from iter_parquet_documents(path, name, text_column)
    elif input_format == "text":
        yield from iter_text_documents(path, name)
    else:
        raise UserInputError(
            f"input_format={input_format!r}: one of {', '.join(INPUT_FORMATS)}",
            argument="input_format",
        )
