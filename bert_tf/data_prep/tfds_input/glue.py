"""GLUE from TFDS: `TfdsGlueProcessor`, with the GLUE file processors' interface."""

import dataclasses

import numpy as np
from absl import logging

from bert_tf.data_prep import glue
from bert_tf.data_prep.tfds_input.builders import as_str
from bert_tf.data_prep.tfds_input.builders import check_split
from bert_tf.data_prep.tfds_input.builders import check_supported
from bert_tf.data_prep.tfds_input.builders import config_key
from bert_tf.data_prep.tfds_input.builders import load_builder
from bert_tf.data_prep.tfds_input.builders import scalar_rows
from bert_tf.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class _GlueConfig:
    """How one TFDS GLUE config maps onto a bert_tf classification task.

    `labels` maps TFDS class names to the task's label strings (None: a float
    regression label); `splits` are the default (train, eval, predict) splits,
    None where the config has none.
    """

    task: str
    text_a: str
    text_b: str | None
    labels: dict | None
    splits: tuple = ("train", "validation", "test")
    mismatched_eval: str | None = None


_BINARY = {"0": "0", "1": "1"}
_NLI = {name: name for name in ("entailment", "neutral", "contradiction")}
_QNLI = {name: name for name in ("entailment", "not_entailment")}
_MNLI_EVAL_ONLY = (None, "validation", "test")

# TFDS GLUE config -> task. The 0/1 tasks' TFDS class names are the files'
# labels in order (TFDS parses "0"/"1" as class ids).
GLUE_CONFIGS = {
    "glue/cola": _GlueConfig(
        "cola", "sentence", None, {"unacceptable": "0", "acceptable": "1"}
    ),
    "glue/sst2": _GlueConfig(
        "sst-2", "sentence", None, {"negative": "0", "positive": "1"}
    ),
    "glue/mrpc": _GlueConfig(
        "mrpc",
        "sentence1",
        "sentence2",
        {"not_equivalent": "0", "equivalent": "1"},
    ),
    "glue/qqp": _GlueConfig(
        "qqp",
        "question1",
        "question2",
        {"not_duplicate": "0", "duplicate": "1"},
    ),
    "glue/stsb": _GlueConfig("sts-b", "sentence1", "sentence2", None),
    "glue/mnli": _GlueConfig(
        "mnli",
        "premise",
        "hypothesis",
        _NLI,
        splits=("train", "validation_matched", "test_matched"),
        mismatched_eval="validation_mismatched",
    ),
    "glue/mnli_matched": _GlueConfig(
        "mnli", "premise", "hypothesis", _NLI, splits=_MNLI_EVAL_ONLY
    ),
    "glue/mnli_mismatched": _GlueConfig(
        "mnli-mm", "premise", "hypothesis", _NLI, splits=_MNLI_EVAL_ONLY
    ),
    "glue/qnli": _GlueConfig("qnli", "question", "sentence", _QNLI),
    "glue/rte": _GlueConfig("rte", "sentence1", "sentence2", _QNLI),
    "glue/wnli": _GlueConfig(
        "wnli",
        "sentence1",
        "sentence2",
        {"not_entailment": "0", "entailment": "1"},
    ),
    # The diagnostic set: MNLI-style pairs, a test split only.
    "glue/ax": _GlueConfig(
        "mnli", "premise", "hypothesis", _NLI, splits=(None, None, "test")
    ),
}


class TfdsGlueProcessor(glue.DataProcessor):
    """GLUE examples from TFDS, with the interface of the GLUE file processors.

    `data_dir` arguments of the get_* methods are ignored (the TFDS data
    directory is given once, to the constructor).

    Args:
      tfds_name: a key of GLUE_CONFIGS, optionally with a version
        (`glue/mrpc:2.0.0`).
      data_dir: TFDS data directory (TFDS's default, ~/tensorflow_datasets,
        when None).
      train_split, eval_split, predict_split: TFDS split names (TFDS slicing
        such as `train[:10%]` works); by default the config's train,
        validation (MNLI: validation_matched) and test splits.
      text_a_feature, text_b_feature, label_feature: feature names; by default
        the config's. `text_b_feature=""` makes a single-sentence task.
      download: download and prepare the dataset when it is not in
        `data_dir`.
      skip_bad_rows: skip labelled-split rows without a label (label -1),
        recorded in `skipped` and logged, instead of raising.
      allow_single_class: see `glue.DataProcessor`.

    Example:
      >>> processor = TfdsGlueProcessor("glue/mrpc", data_dir="/data/tfds")
      >>> examples = processor.get_train_examples()
      >>> examples[0].label in processor.get_labels()
      True
    """

    def __init__(
        self,
        tfds_name,
        data_dir=None,
        train_split=None,
        eval_split=None,
        predict_split=None,
        text_a_feature=None,
        text_b_feature=None,
        label_feature=None,
        download=True,
        skip_bad_rows=False,
        allow_single_class=False,
    ):
        super().__init__(skip_bad_rows, allow_single_class)
        check_supported(tfds_name, GLUE_CONFIGS)
        self.tfds_name = tfds_name
        self.data_dir = data_dir
        config = GLUE_CONFIGS[config_key(tfds_name)]
        self.task_name = config.task
        self.train_split = train_split or config.splits[0]
        self.eval_split = eval_split or config.splits[1]
        self.predict_split = predict_split or config.splits[2]
        self.text_a_feature = text_a_feature or config.text_a
        self.text_b_feature = (
            config.text_b if text_b_feature is None else text_b_feature or None
        )
        self.label_feature = label_feature or "label"
        self.download = download
        self.text_pair = self.text_b_feature is not None
        self.is_regression = config.labels is None
        self._class_names = config.labels
        self._mismatched_split = config.mismatched_eval
        # As MnliProcessor: run_classifier also evaluates the mismatched dev
        # set when the matched one is the eval split.
        self.matched = bool(config.mismatched_eval) and eval_split in (
            None,
            config.splits[1],
        )
        self._label_list = glue.get_processor(config.task).get_labels()
        self._builder = None

    def get_labels(self, data_dir=None):
        return list(self._label_list)

    def get_train_examples(self, data_dir=None):
        return self._checked_training_set(
            f"TFDS {self.tfds_name}[{self.train_split}]",
            self._examples(self.train_split, "train", "train_split"),
        )

    def get_dev_examples(self, data_dir=None, matched=None):
        """The eval split; with matched=False (MNLI), validation_mismatched."""
        if matched is False:
            if not self._mismatched_split:
                raise UserInputError(f"{self.tfds_name} has no mismatched dev set")
            return self._examples(self._mismatched_split, "dev_mismatched", None)
        return self._examples(self.eval_split, "dev", "eval_split")

    def get_test_examples(self, data_dir=None):
        return self._examples(
            self.predict_split, "test", "predict_split", unlabelled=True
        )

    def builder(self):
        """The TFDS builder (prepared on first use)."""
        if self._builder is None:
            self._builder = load_builder(self.tfds_name, self.data_dir, self.download)
            self._check_features(self._builder)
        return self._builder

    def _check_features(self, builder):
        features = builder.info.features
        wanted = {
            "text_a_feature": self.text_a_feature,
            "text_b_feature": self.text_b_feature,
            "label_feature": self.label_feature,
        }
        for parameter, name in wanted.items():
            if name is not None and name not in features:
                raise UserInputError(
                    f"TFDS {self.tfds_name} has no feature {name!r} ({parameter}); "
                    f"its features: {', '.join(sorted(features.keys()))}",
                    argument={parameter: f"tfds_{parameter}"},
                )
        label = features[self.label_feature]
        names = getattr(label, "names", None)
        if self.is_regression:
            if names is not None:
                raise UserInputError(
                    f"TFDS {self.tfds_name}: {self.label_feature!r} is a class label, "
                    "but the task is a regression"
                )
            self._id_to_label = None
            return
        if names is None or set(names) != set(self._class_names):
            raise UserInputError(
                f"TFDS {self.tfds_name}: label feature {self.label_feature!r} has "
                f"classes {names}, expected {sorted(self._class_names)}"
            )
        # By name: the class's index in TFDS need not be its index here.
        self._id_to_label = [self._class_names[name] for name in names]

    def _examples(self, split, set_type, parameter, unlabelled=False):
        # The tools' flags: train_split is --tfds_split_train.
        flag = parameter and "tfds_split_" + parameter.removesuffix("_split")
        if split is None:
            raise UserInputError(
                f"TFDS {self.tfds_name} has no {set_type} split; name one with "
                f"{parameter}",
                argument={parameter: flag},
            )
        builder = self.builder()
        check_split(builder, self.tfds_name, split, parameter, flag)
        has_idx = "idx" in builder.info.features
        rows = []
        for row in scalar_rows(builder, split):
            index = int(row["idx"]) if has_idx else len(rows)
            rows.append((index, row))
        # idx is the row's index in the source file: file order.
        rows.sort(key=lambda item: item[0])
        examples, skipped = [], []
        for index, row in rows:
            label = self._label(row[self.label_feature], unlabelled)
            if label is None:
                self._bad_row(
                    f"TFDS {self.tfds_name}[{split}]",
                    f"idx {index}",
                    "no label (-1) in a labelled split",
                    skipped,
                )
                continue
            text_b = None
            if self.text_b_feature is not None:
                text_b = as_str(row[self.text_b_feature])
            examples.append(
                glue.InputExample(
                    guid=f"{set_type}-{index}",
                    text_a=as_str(row[self.text_a_feature]),
                    text_b=text_b,
                    label=label,
                )
            )
        self._log_skipped(f"TFDS {self.tfds_name}[{split}]", skipped)
        logging.info("TFDS %s[%s]: %d examples", self.tfds_name, split, len(examples))
        return examples

    def _label(self, value, unlabelled):
        """The task's label of a TFDS label value; None for a missing label in a
        labelled split."""
        if self.is_regression:
            # TFDS stores float32: its shortest decimal form is the file's
            # score (e.g. 3.8, not 3.799999952316284), as the file path reads it.
            value = float(str(np.float32(value)))
            if value == -1.0:
                return 0.0 if unlabelled else None
            return value
        value = int(value)
        if value == -1:
            return self._label_list[0] if unlabelled else None
        return self._id_to_label[value]
