"""What run_ner is asked to tag: CoNLL files (or TFDS conll2003), tags, windows."""

import dataclasses
import os

from bert_tf.data_prep import conll
from bert_tf.data_prep import tfds_input
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import required
from bert_tf.options.option import option
from bert_tf.options.tfds_options import TfdsOptions

# The CRF transitions' learning rate over the encoder's (--use_crf). They
# start at 0 and Adam moves each by about one learning rate per step: at 1e-4
# they stay near 0 in a fine-tuning run (the CRF then decodes like argmax). At
# 100x they learn IOB2's grammar within the run (benchmarks/ner_minilm.py:
# docs/guides/ner.md); 100x is also the usual BERT-CRF recipe (encoder 5e-5, CRF 5e-3).
CRF_LEARNING_RATE_MULTIPLIER = 100.0

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
      crf_learning_rate_multiplier: the CRF transitions (`cls/crf/*`) train at
        this times --learning_rate (needs use_crf; None: 100 with use_crf,
        `CRF_LEARNING_RATE_MULTIPLIER`).

    Example:

    ```python
    options = NerOptions(data_dir="conll2003", tag_scheme="iob1")
    options.check(run_options)
    ```
    """

    data_dir: str | None = option(
        None,
        "Directory with train.txt, dev.txt and test.txt (the CoNLL-2003 names).",
        run_defining=True,
    )
    train_file: str | None = option(
        None, "Training file (instead of data_dir).", run_defining=True
    )
    dev_file: str | None = option(None, "Dev file, for --do_eval.")
    test_file: str | None = option(None, "Test file, for --do_predict.")
    tag_scheme: str = option(
        "iob2",
        "How the files' tags are written: iob1 (CoNLL-2003's original), iob2 "
        "(BIO) or bioes (IOBES). Predictions are written in the same scheme.",
        choices=conll.TAG_SCHEMES,
    )
    strict_tags: bool = option(
        False,
        "Stop at an ill-formed tag sequence (e.g. I-X after O in iob2) instead of "
        "reading it as conlleval does.",
    )
    labels: tuple | None = option(
        None,
        "Entity types, in label order (e.g. PER,LOC,ORG,MISC); default: those of "
        "the training file, sorted.",
    )
    doc_stride: int | None = option(
        None,
        "Sentences longer than max_seq_length - 2 tokens are cut into windows "
        "this many tokens apart (default: half of max_seq_length - 2); each word "
        "is scored in the window where it has most context.",
        run_defining=True,
    )
    tfds: TfdsOptions = dataclasses.field(default_factory=TfdsOptions)
    use_crf: bool = option(
        False,
        "A linear-chain CRF over the tag logits: trained by its log-likelihood "
        "over each sentence's words, predictions decoded by Viterbi (also in the "
        "SavedModel). Eval/predict/export of a CRF run need it too.",
        run_defining=True,
    )
    crf_constrained: bool = option(
        False,
        "With --use_crf: decode only well-formed IOB2 tag sequences (no I-X after "
        "O or another type, none first).",
        run_defining=True,
    )
    # absent_when_none: softmax runs have no CRF factor; their identity stays as it was.
    crf_learning_rate_multiplier: float | None = option(
        None,
        "With --use_crf: the CRF transitions train at this times --learning_rate "
        "(the same warmup and decay). Default 100: at the encoder's rate they "
        "hardly leave 0 in a fine-tuning run.",
        run_defining=True,
        absent_when_none=True,
    )

    def __post_init__(self):
        if self.crf_constrained and not self.use_crf:
            raise UserInputError("--crf_constrained constrains the CRF: add --use_crf")
        multiplier = self.crf_learning_rate_multiplier
        if multiplier is not None and not self.use_crf:
            raise UserInputError(
                "--crf_learning_rate_multiplier sets the CRF's learning rate: "
                "add --use_crf"
            )
        if multiplier is not None and not multiplier > 0:
            raise UserInputError(
                f"--crf_learning_rate_multiplier: must be positive, got {multiplier}"
            )
        if self.use_crf and multiplier is None:
            # Resolved here, so run_settings.json records the value trained with.
            object.__setattr__(
                self, "crf_learning_rate_multiplier", CRF_LEARNING_RATE_MULTIPLIER
            )
        check_choices(self)
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

    def training_fingerprints(self, run):
        """What a --do_train run records of its data (the train file's
        fingerprint); None with --tfds_name (the task writes the file)."""
        if self.tfds.tfds_name:
            return None
        return [file_fingerprint(self.data_file(run, "train"))]

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
        for split, run_option in SPLIT_RUN_OPTIONS.items():
            if getattr(run, run_option) and not self.tfds.tfds_name:
                existing_path(f"{split}_file", self.data_file(run, split))
        window = run.max_seq_length - 2
        if self.doc_stride is None:
            object.__setattr__(self, "doc_stride", max(1, window // 2))
        if not 1 <= self.doc_stride <= window:
            raise UserInputError(
                f"--doc_stride={self.doc_stride} must be between 1 and "
                f"max_seq_length - 2 = {window}, or windows would skip tokens"
            )
