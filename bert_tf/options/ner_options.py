"""What run_ner is asked to tag: CoNLL files (or TFDS conll2003), tags, windows."""

import dataclasses
import os

from bert_tf.data_prep import conll
from bert_tf.data_prep import tfds_input
from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import required
from bert_tf.options.tfds_options import TfdsOptions

SPLIT_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
# The run option that asks for each split.
SPLIT_RUN_OPTIONS = {"train": "do_train", "dev": "do_eval", "test": "do_predict"}


@dataclasses.dataclass(frozen=True)
class NerOptions:
    """run_ner's task options (flags of the same names).

    Args:
      data_dir: directory with train.txt, dev.txt, test.txt.
      train_file, dev_file, test_file: the files (instead of data_dir).
      tag_scheme: iob1, iob2 or bioes (`conll.TAG_SCHEMES`).
      strict_tags: stop at an ill-formed tag sequence.
      labels: entity types in label order (None: the training file's).
      doc_stride: tokens between the windows of a long sentence (None: half
        of max_seq_length - 2, set by `check`).
      tfds: the `TfdsOptions` (conll2003).
      use_crf: a linear-chain CRF over the tag logits (Viterbi predictions).
      crf_constrained: only well-formed IOB2 paths at decoding (needs use_crf).

    Example:

    ```python
    options = NerOptions(data_dir="conll2003", tag_scheme="iob1")
    options.check(run_options)
    ```
    """

    RUN_DEFINING = (
        "data_dir",
        "train_file",
        "doc_stride",
        "use_crf",
        "crf_constrained",
    )

    data_dir: str | None = None
    train_file: str | None = None
    dev_file: str | None = None
    test_file: str | None = None
    tag_scheme: str = "iob2"
    strict_tags: bool = False
    labels: tuple | None = None
    doc_stride: int | None = None
    tfds: TfdsOptions = dataclasses.field(default_factory=TfdsOptions)
    use_crf: bool = False
    crf_constrained: bool = False

    def __post_init__(self):
        if self.crf_constrained and not self.use_crf:
            raise UserInputError("--crf_constrained constrains the CRF: add --use_crf")
        if self.tag_scheme not in conll.TAG_SCHEMES:
            raise UserInputError(
                f"--tag_scheme={self.tag_scheme!r} is not one of "
                f"{', '.join(conll.TAG_SCHEMES)}"
            )
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(self.labels))

    def data_file(self, run, split):
        """--<split>_file, else data_dir/<CoNLL-2003 name>; with --tfds_name the
        file the task writes of the TFDS split in output_dir."""
        if self.tfds.tfds_name:
            return os.path.join(run.output_dir, f"tfds_{split}.txt")
        path = getattr(self, f"{split}_file")
        if path:
            return path
        if self.data_dir:
            return os.path.join(self.data_dir, SPLIT_FILES[split])
        raise UserInputError(
            f"--{SPLIT_RUN_OPTIONS[split]} needs --{split}_file or --data_dir"
        )

    def check(self, run):
        """The checks that need the `RunOptions`, then the input paths; sets
        the default `doc_stride`."""
        run.at_least_one("do_train", "do_eval", "do_predict")
        if not run.init_checkpoint:
            # A Google or Hugging Face model directory carries its vocab.txt.
            required("vocab_file", run.vocab_file)
        self.tfds.check(
            {
                "data_dir": self.data_dir,
                "train_file": self.train_file,
                "dev_file": self.dev_file,
                "test_file": self.test_file,
            },
            tfds_input.CONLL_CONFIGS,
        )
        if self.tfds.tfds_name and self.tag_scheme != "iob2":
            raise UserInputError(
                f"--tag_scheme={self.tag_scheme}: TFDS {self.tfds.tfds_name} "
                "tags are iob2"
            )
        run.check_paths()
        for split, option in SPLIT_RUN_OPTIONS.items():
            if getattr(run, option) and not self.tfds.tfds_name:
                existing_path(f"{split}_file", self.data_file(run, split))
        window = run.max_seq_length - 2
        if self.doc_stride is None:
            object.__setattr__(self, "doc_stride", max(1, window // 2))
        if not 1 <= self.doc_stride <= window:
            raise UserInputError(
                f"--doc_stride={self.doc_stride} must be between 1 and "
                f"max_seq_length - 2 = {window}, or windows would skip tokens"
            )
