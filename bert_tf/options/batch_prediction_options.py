"""What batch_predict.py is asked to predict: a SavedModel over table rows."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.beam_options import BeamOptions
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.option import option

BATCH_INPUT_FORMATS = ("tsv", "jsonl", "tfrecord")
# Batch prediction always runs on Beam: here by default.
BATCH_RUNNER = "DirectRunner"


@dataclasses.dataclass(frozen=True)
class BatchPredictionOptions:
    """batch_predict's flags (issue 44), checked before TensorFlow loads.

    Args:
      saved_model: an export_saved_model version directory, or its base.
      input_file: glob (or comma-separated globs) of the input files.
      input_format: one of `BATCH_INPUT_FORMATS`.
      output_file: prefix of the JSONL prediction shards.
      text_column: the column of the signature's first text.
      text_pair_column: the column of its second text (pair models).
      id_column: the column of each row's key (default ``file:line``).
      batch_size: rows per signature call at most.
      beam: the runner (`BeamOptions`; DirectRunner by default).

    Example:

    ```python
    BatchPredictionOptions(saved_model="/models/stsb", input_file="dev.tsv",
                           input_format="tsv", output_file="/tmp/pred",
                           text_column="sentence1", text_pair_column="sentence2")
    ```
    """

    saved_model: str = option(
        help="An export_saved_model.py SavedModel: a version directory or its base "
        "directory (the highest version)."
    )
    input_file: str = option(help="Input files: a glob, or comma-separated globs.")
    input_format: str = option(
        help="tsv (tab-separated, a header row names the columns), jsonl (one JSON "
        "object a line) or tfrecord (tf.train.Example, bytes features).",
        choices=BATCH_INPUT_FORMATS,
    )
    output_file: str = option(
        help="Prefix of the JSONL prediction shards (<output_file>-SSSSS-of-NNNNN)."
    )
    text_column: str = option(
        help="Column of the first text (text, text_a, question or query)."
    )
    text_pair_column: str | None = option(
        None,
        "Column of the second text of pair models (text_b, context, or the "
        "reranker's passages: a string or a JSON list of strings).",
    )
    id_column: str | None = option(
        None, "Column of each row's key (default: file:line)."
    )
    batch_size: int = option(32, "Rows per signature call at most.")
    beam: BeamOptions = BeamOptions(runner=BATCH_RUNNER)

    def __post_init__(self):
        for name in ("saved_model", "input_file", "output_file", "text_column"):
            required(name, getattr(self, name))
        existing_path("saved_model", self.saved_model)
        check_choices(self)
        positive("batch_size", self.batch_size)
        if not self.beam.uses_beam:
            raise UserInputError("--runner: batch prediction runs on a Beam runner")
