"""What run_classifier is asked to classify: a GLUE task, your files or TFDS."""

import dataclasses
import os

from bert_tf.data_prep import glue
from bert_tf.data_prep import tfds_input
from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import required
from bert_tf.options.option import option
from bert_tf.options.tfds_options import TfdsOptions


@dataclasses.dataclass(frozen=True)
class ClassifierOptions:
    """run_classifier's task options (flags of the same names).

    Args:
      task_name: a GLUE task (`bert_tf.data_prep.glue.PROCESSORS`), "custom"
        for your files, or None with a TFDS dataset (its task).
      data_dir: the task's directory (relative custom files are joined to it).
      xnli_language: XNLI's language.
      skip_bad_rows: skip malformed rows (counted) instead of stopping.
      allow_single_class: train even if every example has the same label.
      train_file, dev_file, test_file, text_a_column, text_b_column,
        label_column, has_header, is_regression, allow_header_like_first_row:
        the custom task's files and columns (columns as given on the command
        line: a name, or an index as digits).
      tfds: the `TfdsOptions`.

    Example:

    ```python
    options = ClassifierOptions(task_name="MRPC", data_dir="glue/MRPC")
    options.check(run_options)
    ```
    """

    task_name: str | None = option(
        None, "The name of the task to train.", run_defining=True
    )
    data_dir: str | None = option(
        None,
        "The input data dir. Should contain the .tsv files (or other data files) "
        "for the task.",
        run_defining=True,
    )
    skip_bad_rows: bool = option(
        False,
        "Skip malformed data rows (counted and logged) instead of stopping at the "
        "first.",
        run_defining=True,
    )
    xnli_language: str = option(
        "zh", "Language of the XNLI task (the original: zh).", run_defining=True
    )
    train_file: str | None = option(
        None, "custom task: training file (.tsv, .csv or .jsonl).", run_defining=True
    )
    dev_file: str | None = option(None, "custom task: dev file.")
    test_file: str | None = option(None, "custom task: test file.")
    text_a_column: str | None = option(
        "0", "custom task: first text column (name or index).", run_defining=True
    )
    text_b_column: str | None = option(
        None, "custom task: second text column, if any.", run_defining=True
    )
    label_column: str | None = option(
        "1", "custom task: label column (name or index).", run_defining=True
    )
    has_header: bool = option(
        True, "custom task: .tsv/.csv files start with a header.", run_defining=True
    )
    is_regression: bool = option(
        False, "custom task: the label is a real number.", run_defining=True
    )
    allow_single_class: bool = option(
        False,
        "Train even if every training example has the same label (by default an "
        "error naming the file: usually a cut or mis-parsed file).",
    )
    allow_header_like_first_row: bool = option(
        False,
        "custom task with --has_header=false: accept a first train row that looks "
        "like a header (single-word cells, a label found in no other row); by "
        "default an error, since it would become a bogus class.",
    )
    tfds: TfdsOptions = dataclasses.field(default_factory=TfdsOptions)

    def __post_init__(self):
        self._check_tfds()

    def _check_tfds(self):
        """--tfds_name replaces --data_dir (and the custom files); --task_name
        defaults to the config's task and must match it when given."""
        self.tfds.check(
            {
                "data_dir": self.data_dir,
                "train_file": self.train_file,
                "dev_file": self.dev_file,
                "test_file": self.test_file,
            },
            tfds_input.GLUE_CONFIGS,
        )
        name = self.tfds.tfds_name
        if not name:
            return
        task = tfds_input.GLUE_CONFIGS[tfds_input.config_key(name)].task
        if self.task_name is None:
            object.__setattr__(self, "task_name", task)
        elif self.task_name.lower() != task:
            raise UserInputError(
                f"--task_name={self.task_name} does not match "
                f"--tfds_name={name} (task {task}); drop --task_name"
            )

    @property
    def is_custom(self):
        return (self.task_name or "").lower() == "custom"

    def check(self, run):
        """The checks that need the `RunOptions` too, then the input paths.

        The original's order: something to do, the required flags, the
        task name, then (ours) that the files named exist.
        """
        run.at_least_one("do_train", "do_eval", "do_predict")
        if not (self.is_custom or self.tfds.tfds_name):
            required("data_dir", self.data_dir)
        required("task_name", self.task_name)
        # A task name given wrong is named before any flag missing.
        if self.task_name.lower() not in glue.PROCESSORS:
            raise UserInputError(
                f"--task_name: Task not found: {self.task_name!r}. Known tasks: "
                f"{', '.join(sorted(glue.PROCESSORS))}"
            )
        if not run.init_checkpoint:
            # A Google or Hugging Face model directory carries its vocab.txt.
            required("vocab_file", run.vocab_file)
        run.check_paths()
        if self.data_dir and not os.path.isdir(self.data_dir):
            existing_path("data_dir", self.data_dir)
        if self.is_custom:
            for name, wanted in (
                ("train_file", run.do_train),
                ("dev_file", run.do_eval),
                ("test_file", run.do_predict),
            ):
                path = getattr(self, name)
                if wanted and path:
                    existing_path(name, os.path.join(self.data_dir or "", path))
