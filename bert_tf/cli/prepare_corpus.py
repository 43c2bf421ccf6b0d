r"""Prepare a pretraining corpus: raw text in, create_pretraining_data's input out.

Reads MediaWiki XML dumps (pages-articles*.xml[.bz2], multistream too),
JSON-lines or Parquet files with a text column (a `datasets` export), or
plain text (a blank line between documents); turns wikitext into article text
with WikiExtractor (redirects, disambiguation pages and other namespaces
skipped and counted); drops lines with leftover markup, lines without letters
or with too few words, and short documents; splits sentences with Bling Fire;
removes exact and MinHash near duplicates; and writes
corpus-SSSSS-of-NNNNN.txt shards (one sentence per line, a blank line between
documents), each document's shard a seeded hash of its key, and
corpus_summary.json. --runner runs it as an Apache Beam pipeline with the same
output. Needs the [corpus] extra (pip install "bert_tf[corpus]").

    python data_prep/prepare_corpus.py \
      --input_file=enwiki-latest-pages-articles1.xml-p1p41242.bz2 \
      --output_dir=/tmp/corpus --num_shards=10
    python create_pretraining_data.py --input_file=/tmp/corpus/corpus-0000[1-9]-of-00010.txt ...
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.corpus_options import CorpusOptions


def run(options):
    """Writes the shards and the summary; prints the summary."""
    from bert_tf.data_prep.corpus.extra import check_extra
    from bert_tf.data_prep.corpus.readers import expand_input_patterns

    check_extra()
    arguments = dict(
        input_files=expand_input_patterns(options.input_file),
        output_dir=options.output_dir,
        input_format=options.input_format,
        text_column=options.text_column,
        num_shards=options.num_shards,
        random_seed=options.random_seed,
        rules=options.rules(),
        dedup_threshold=options.dedup_threshold,
    )
    if options.beam.uses_beam:
        from bert_tf.beam import corpus_preparation

        summary = corpus_preparation.run_pipeline(
            **arguments,
            runner=options.beam.runner,
            beam_options=options.beam.beam_options,
        )
    else:
        from bert_tf.data_prep.corpus.preparation import prepare_corpus

        summary = prepare_corpus(**arguments)
    print(summary.text(), end="")


COMMAND = Command(
    "prepare_corpus",
    __doc__,
    OptionFlags(CorpusOptions),
    run,
    required=("input_file", "output_dir"),
    uses_tensorflow=False,
    checkout_script="data_prep",
)


main = COMMAND.main


if __name__ == "__main__":
    main()
