"""What run_squad is asked to answer: SQuAD files (or TFDS) and answer spans."""

import dataclasses

from bert_tf.data_prep import tfds_input
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import required
from bert_tf.options.option import option
from bert_tf.options.tfds_options import TfdsOptions
from bert_tf.serving.span_options import SpanOptions

TRAIN_ANSWERS = ("error", "first")


@dataclasses.dataclass(frozen=True)
class SquadOptions:
    """run_squad's task options (flags of the same names).

    Args:
      train_file, predict_file: SQuAD JSON files.
      doc_stride: tokens between the windows of a long context.
      max_query_length: question tokens kept.
      n_best_size: candidates in nbest_predictions.json.
      max_answer_length: longest answer, in tokens.
      verbose_logging: log every data-processing warning.
      version_2_with_negative: SQuAD 2.0 (questions without an answer).
      null_score_diff_threshold: predict no answer above it.
      train_answer: a training question with several answers: "error" or
        "first".
      tfds: the `TfdsOptions` (squad/v1.1, squad/v2.0).

    Example:

    ```python
    options = SquadOptions(train_file="train-v1.1.json", predict_file="dev-v1.1.json")
    options.check(run_options)
    ```
    """

    train_file: str | None = option(
        None, "SQuAD json for training. E.g., train-v1.1.json", run_defining=True
    )
    predict_file: str | None = option(
        None, "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json"
    )
    doc_stride: int = option(
        128,
        "When splitting up a long document into chunks, how much stride to take "
        "between chunks.",
        run_defining=True,
    )
    max_query_length: int = option(
        64,
        "The maximum number of tokens for the question. Questions longer than "
        "this will be truncated to this length.",
        run_defining=True,
    )
    n_best_size: int = option(
        20,
        "The total number of n-best predictions to generate in the "
        "nbest_predictions.json output file.",
    )
    max_answer_length: int = option(
        30,
        "The maximum length of an answer that can be generated. This is needed "
        "because the start and end predictions are not conditioned on one "
        "another.",
    )
    verbose_logging: bool = option(
        False,
        "If true, all of the warnings related to data processing will be printed. "
        "A number of warnings are expected for a normal SQuAD evaluation.",
    )
    version_2_with_negative: bool = option(
        False,
        "If true, the SQuAD examples contain some that do not have an answer.",
        run_defining=True,
    )
    null_score_diff_threshold: float = option(
        0.0, "If null_score - best_non_null is greater than the threshold predict null."
    )
    train_answer: str = option(
        "error",
        "A training question with several gold answers (as in dev files): error "
        "stops naming it (the original's behaviour); first trains on the first "
        "answer.",
        choices=TRAIN_ANSWERS,
    )
    tfds: TfdsOptions = dataclasses.field(default_factory=TfdsOptions)

    def __post_init__(self):
        self.span_options()  # its checks: positive sizes
        check_choices(self)
        self._check_tfds()

    def _check_tfds(self):
        """--tfds_name replaces --train_file/--predict_file; SQuAD 2.0 needs
        --version_2_with_negative and 1.1 must not have it."""
        self.tfds.check(
            {"train_file": self.train_file, "predict_file": self.predict_file},
            tfds_input.SQUAD_CONFIGS,
        )
        name = self.tfds.tfds_name
        if not name:
            return
        version_2 = tfds_input.SQUAD_CONFIGS[tfds_input.config_key(name)]
        if version_2 != self.version_2_with_negative:
            raise UserInputError(
                f"--tfds_name={name} needs "
                f"--version_2_with_negative={str(version_2).lower()}"
            )

    def check(self, run):
        """The original's `validate_flags_or_throw` (with the flag named in
        each message), then that the files named exist."""
        run.at_least_one("do_train", "do_predict")
        tfds = self.tfds.tfds_name
        if run.do_train and not (self.train_file or tfds):
            raise UserInputError(
                "If `do_train` is True, then `train_file` must be specified "
                "(--train_file)."
            )
        if run.do_predict and not (self.predict_file or tfds):
            raise UserInputError(
                "If `do_predict` is True, then `predict_file` must be specified "
                "(--predict_file)."
            )
        if run.do_eval and not run.do_predict:
            raise UserInputError(
                "`do_eval` scores the predictions: it needs --do_predict."
            )
        if not run.init_checkpoint:
            # A Google or Hugging Face model directory carries its vocab.txt.
            required("vocab_file", run.vocab_file)
        self.span_options().check_seq_length(run.max_seq_length)
        run.check_paths()
        if run.do_train:
            existing_path("train_file", self.train_file)
        if run.do_predict:
            existing_path("predict_file", self.predict_file)

    def training_fingerprints(self, run):
        """What a --do_train run records of its data (`train_file`'s
        fingerprint); None with --tfds_name (the task writes the file)."""
        if self.tfds.tfds_name:
            return None
        return [file_fingerprint(self.train_file)]

    def span_options(self):
        """The `SpanOptions` of these flags: what run_squad's predictions, the
        span SavedModel and `DocumentAnswers` share."""
        return SpanOptions.from_attributes(self)
