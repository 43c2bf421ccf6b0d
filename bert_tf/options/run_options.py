"""What every run_* tool is asked to do: output_dir, model, batches, training."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_checkpoint
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import holds_a_text
from bert_tf.options.checks import positive
from bert_tf.options.checks import sequence_length_fits
from bert_tf.options.distribution_options import DistributionOptions
from bert_tf.options.export_options import ExportOptions
from bert_tf.options.option import option
from bert_tf.options.training_options import TrainingOptions
from bert_tf.text import tokenization

DTYPES = ("float32", "mixed_float16", "mixed_bfloat16")


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """The options every run shares (flags of the same names); checked when made.

    Args:
      output_dir: checkpoints, records, results.
      bert_config_file: the model's config (None: the one beside
        init_checkpoint).
      init_checkpoint: pre-trained (or fine-tuned) weights.
      vocab_file: the WordPiece vocabulary.
      do_lower_case: lower-case the text (None: the tool does not tokenize).
      max_seq_length: tokens per example.
      do_train, do_eval, do_predict: what the run does.
      eval_batch_size, predict_batch_size: inference batch sizes.
      pad_to_longest: cut each batch to its longest example (None: the tool
        always pads to max_seq_length).
      dtype: Keras mixed-precision policy, one of `DTYPES`.
      seed: random seed of initialisation and data order.
      training: the `TrainingOptions`.
      distribution: the `DistributionOptions`.
      export: the `ExportOptions`, or None for no export.

    Example:

    ```python
    run = RunOptions(output_dir="/tmp/out", vocab_file="vocab.txt", do_eval=True)
    run.check_config(BertConfig.from_json_file("bert_config.json"))
    ```
    """

    output_dir: str = option(
        help="The output directory where the model checkpoints will be written."
    )
    bert_config_file: str | None = option(
        None,
        "The config json file corresponding to the pre-trained BERT model. "
        "This specifies the model architecture.",
    )
    init_checkpoint: str | None = option(
        None,
        "Initial checkpoint (usually from a pre-trained BERT model): a Google "
        "checkpoint prefix or directory, or a Hugging Face directory.",
        run_defining=True,
    )
    vocab_file: str | None = option(
        None,
        "The vocabulary file that the BERT model was trained on (run_classifier, "
        "run_squad, run_ner: default, the one in the --init_checkpoint directory).",
        run_defining=True,
    )
    do_lower_case: bool | None = option(
        True,
        "Whether to lower case the input text. Should be True for uncased models and "
        "False for cased models.",
        run_defining=True,
        absent_when_none=True,
    )
    max_seq_length: int = option(
        128,
        "The maximum total input sequence length after WordPiece tokenization. "
        "Sequences longer than this will be truncated, and sequences shorter than this "
        "will be padded.",
        run_defining=True,
    )
    do_train: bool = option(False, "Whether to run training.")
    do_eval: bool = option(False, "Whether to run eval on the dev set.")
    do_predict: bool = option(False, "Whether to run the model in inference mode.")
    eval_batch_size: int = option(8, "Total batch size for eval.")
    predict_batch_size: int = option(8, "Total batch size for predict.")
    pad_to_longest: bool | None = option(
        None,
        "Cut each batch to its longest example instead of max_seq_length (same "
        "results, less work).",
        run_defining=True,
        absent_when_none=True,
        flag_default=True,
    )
    dtype: str = option(
        "float32",
        "Compute precision (Keras mixed-precision policy); variables stay float32.",
        choices=DTYPES,
        run_defining=True,
    )
    seed: int = option(
        12345, "Random seed for initialisation and data order.", run_defining=True
    )
    training: TrainingOptions = dataclasses.field(default_factory=TrainingOptions)
    distribution: DistributionOptions = dataclasses.field(
        default_factory=DistributionOptions
    )
    export: ExportOptions | None = None

    def __post_init__(self):
        if not self.output_dir:
            raise UserInputError("Flag --output_dir must be specified.")
        for name in ("eval_batch_size", "predict_batch_size", "max_seq_length"):
            positive(name, getattr(self, name))
        holds_a_text("max_seq_length", self.max_seq_length)
        check_choices(self)
        if self.do_train:
            self.training.check_trainable()
        if self.do_lower_case is not None:
            tokenization.validate_case_matches_checkpoint(
                self.do_lower_case, self.init_checkpoint or ""
            )

    def check_paths(self):
        """The input files named exist (local paths; before TensorFlow loads)."""
        existing_path("bert_config_file", self.bert_config_file)
        existing_path("vocab_file", self.vocab_file)
        existing_checkpoint("init_checkpoint", self.init_checkpoint)

    def check_config(self, config):
        """The original's check: max_seq_length ≤ the model's positions (None:
        the checkpoint's own length, e.g. a sentence-transformers model's)."""
        if self.max_seq_length is not None:
            sequence_length_fits(self.max_seq_length, config)

    def at_least_one(self, *names):
        """The original's `At least one of ... must be True.` for `names`."""
        if any(getattr(self, name) for name in names):
            return
        if len(names) == 3:
            raise UserInputError(
                "At least one of `do_train`, `do_eval` or `do_predict' must be True."
            )
        raise UserInputError(
            f"At least one of `{names[0]}` or `{names[1]}` must be True."
        )
