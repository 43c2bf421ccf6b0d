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
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.batch_prediction_options import BATCH_RUNNER
from bert_tf.options.batch_prediction_options import BatchPredictionOptions
from bert_tf.options.beam_options import BeamOptions
from bert_tf.options.option import fields_by_name
from bert_tf.options.option import metadata

# --runner's help without "Not given: in this process" (a runner is needed).
_RUNNER_HELP = metadata(fields_by_name(BeamOptions)["runner"])["help"].replace(
    " Not given: in this process, as before.", ""
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
    OptionFlags(
        BatchPredictionOptions,
        changed=(Flag("runner", help=_RUNNER_HELP, default=BATCH_RUNNER),),
    ),
    predict,
    required=("saved_model", "input_file", "input_format", "output_file"),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
