r"""Predicts every row of TSV/JSONL/TFRecord files with an exported SavedModel.

Any SavedModel that export_saved_model.py wrote (classifier, tagger with or
without CRF, span, embedding, reranker): its raw-text ``serving_default`` is
run over the rows through Apache Beam's RunInference (the [beam] extra), on
this machine (DirectRunner, the default) or on Dataflow, Flink or Spark.
Output: JSON lines ``{"key": ..., <output>: ...}`` in
``<output_file>-SSSSS-of-NNNNN``; rows that cannot be read go, with the
reason, to ``<output_file>.malformed-SSSSS-of-NNNNN`` and are counted.

    python batch_predict.py --saved_model=/tmp/stsb_export \
      --input_file='glue/STS-B/dev.tsv' --input_format=tsv \
      --text_column=sentence1 --text_pair_column=sentence2 \
      --output_file=/tmp/stsb_predictions \
      --beam_options='--direct_num_workers=2 --direct_running_mode=multi_processing'

Installed as `bert-tf-batch-predict`; also `python -m bert_tf.cli.batch_predict`
and `python batch_predict.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.options.batch_prediction_options import BATCH_INPUT_FORMATS
from bert_tf.options.batch_prediction_options import BatchPredictionOptions


def define_flags():
    # --- flags added for issue 44 ---
    flags.DEFINE_string(
        "saved_model",
        None,
        "An export_saved_model.py SavedModel: a version directory or its base "
        "directory (the highest version).",
    )
    flags.DEFINE_string(
        "input_file", None, "Input files: a glob, or comma-separated globs."
    )
    flags.DEFINE_enum(
        "input_format",
        None,
        list(BATCH_INPUT_FORMATS),
        "tsv (tab-separated, a header row names the columns), jsonl (one JSON "
        "object a line) or tfrecord (tf.train.Example, bytes features).",
    )
    flags.DEFINE_string(
        "output_file",
        None,
        "Prefix of the JSONL prediction shards (<output_file>-SSSSS-of-NNNNN).",
    )
    flags.DEFINE_string(
        "text_column",
        None,
        "Column of the first text (text, text_a, question or query).",
    )
    flags.DEFINE_string(
        "text_pair_column",
        None,
        "Column of the second text of pair models (text_b, context, or the "
        "reranker's passages: a string or a JSON list of strings).",
    )
    flags.DEFINE_string(
        "id_column", None, "Column of each row's key (default: file:line)."
    )
    flags.DEFINE_integer("batch_size", 32, "Rows per signature call at most.")
    common_flags.define_beam_flags(default_runner="DirectRunner")


def options(flags_obj):
    """(BatchPredictionOptions,) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    return (
        BatchPredictionOptions(
            saved_model=f.saved_model,
            input_file=f.input_file,
            input_format=f.input_format,
            output_file=f.output_file,
            text_column=f.text_column,
            text_pair_column=f.text_pair_column,
            id_column=f.id_column,
            batch_size=f.batch_size,
            beam=common_flags.beam_options(f),
        ),
    )


def predict(options):
    """Runs the pipeline, then reports the rows predicted and set aside."""
    from absl import logging

    from bert_tf.beam import batch_prediction

    stats = batch_prediction.run_pipeline(
        saved_model=options.saved_model,
        input_file=options.input_file,
        input_format=options.input_format,
        output_file=options.output_file,
        text_column=options.text_column,
        text_pair_column=options.text_pair_column,
        id_column=options.id_column,
        batch_size=options.batch_size,
        runner=options.beam.runner,
        beam_options=options.beam.beam_options,
    )
    logging.info("Predicted %d rows to %s-*", stats.rows, options.output_file)
    if stats.malformed:
        logging.warning(
            "%d malformed rows (not predicted) written with the reason to %s-*",
            stats.malformed,
            stats.malformed_prefix,
        )
    print(
        f"{stats.rows} rows predicted; {stats.malformed} malformed rows in "
        f"{stats.malformed_prefix}-*"
    )


COMMAND = Command(
    "batch_predict",
    __doc__,
    define_flags,
    predict,
    required=("saved_model", "input_file", "input_format", "output_file"),
    check=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
