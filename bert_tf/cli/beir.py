r"""Converts SQuAD-style JSON or a table of (query, passage) pairs to the BEIR layout.

run_retrieval.py and run_reranker.py read BEIR directories (corpus.jsonl,
queries.jsonl, qrels/<split>.tsv); this writes one:

    bert-tf-beir --squad_file=$SQUAD_DIR/dev-v1.1.json --output_dir=/tmp/squad_beir
    bert-tf-beir --pairs_file=faq.tsv --query_column=question \
      --passage_column=answer --output_dir=/tmp/faq_beir
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.beir_options import BeirOptions


def convert(options):
    """Writes the BEIR directory and prints what it holds."""
    from bert_tf.data_prep import beir_conversion

    if options.squad_file:
        counts = beir_conversion.squad_to_beir(options.squad_file, options.output_dir)
    else:
        counts = beir_conversion.pairs_to_beir(
            options.pairs_file,
            options.output_dir,
            options.query_column,
            options.passage_column,
        )
    shown = ", ".join(f"{count} {name}" for name, count in counts.items())
    print(f"{options.output_dir}: {shown}")


COMMAND = Command(
    "beir",
    __doc__,
    OptionFlags(BeirOptions),
    convert,
    uses_tensorflow=False,
    checkout_script=False,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
