"""What run_pretraining is asked to pre-train on: records and their masks."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.option import option


@dataclasses.dataclass(frozen=True)
class PretrainingOptions:
    """run_pretraining's task options (flags of the same names).

    Args:
      input_file: TFRecord files of create_pretraining_data (a glob or
        comma-separated).
      max_predictions_per_seq: masked positions per sequence (as the records).
      max_eval_steps: eval batches.
      dynamic_masking: draw new masks each time a record is read (needs
        the run's vocab_file).
      masked_lm_prob: with dynamic_masking, the share of tokens masked.

    Example:

    ```python
    options = PretrainingOptions(input_file="/tmp/tf_examples.tfrecord")
    options.check(run_options)
    ```
    """

    input_file: str | None = option(
        None,
        "Input TF example files (can be a glob or comma separated).",
        run_defining=True,
    )
    max_predictions_per_seq: int = option(
        20,
        "Maximum number of masked LM predictions per sequence. Must match data "
        "generation.",
        run_defining=True,
    )
    max_eval_steps: int = option(100, "Maximum number of eval steps.")
    dynamic_masking: bool = option(
        False,
        "Draw new masked-LM predictions each time a record is read (per epoch) "
        "instead of using the masks in the records. Needs --vocab_file.",
        run_defining=True,
    )
    masked_lm_prob: float = option(
        0.15, "--dynamic_masking: share of tokens to predict.", run_defining=True
    )

    def check(self, run):
        """The original's checks, with the flag named in each message."""
        run.at_least_one("do_train", "do_eval")
        if not run.bert_config_file and not run.init_checkpoint:
            # An --init_checkpoint directory brings its own config (the
            # runner reads it, and names both flags when it has none).
            raise UserInputError(
                "Flag --bert_config_file must be specified (or an "
                "--init_checkpoint with a config beside it).",
                argument=("bert_config_file", "init_checkpoint"),
            )
        required("input_file", self.input_file)
        for name in ("max_predictions_per_seq", "max_eval_steps"):
            positive(name, getattr(self, name))
        if self.dynamic_masking and not run.vocab_file:
            raise UserInputError(
                "--dynamic_masking needs --vocab_file (for the [MASK] id)"
            )
        if not 0.0 < self.masked_lm_prob < 1.0:
            raise UserInputError(
                f"--masked_lm_prob must be in (0, 1), got {self.masked_lm_prob}"
            )
        if run.export is not None:
            raise UserInputError(
                "--export_dir: run_pretraining.py trains the pre-training heads; "
                "export the pre-trained encoder with export_saved_model.py "
                "--model_type=encoder --init_checkpoint=OUTPUT_DIR --vocab_file=..."
            )
        run.check_paths()
