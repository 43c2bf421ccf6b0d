"""The GLUE and XNLI processors: files, columns, guids and labels of each task.

``DataProcessor`` and the processors of the original (``cola``, ``mnli``,
``mrpc``, ``xnli``) read the same files, skip the same header, take the same
columns and build the same guids and labels; the rest of GLUE (``sst-2``,
``qqp``, ``qnli``, ``rte``, ``wnli``, ``sts-b``) is added in its standard file
layout. A malformed row raises ``BadRowError`` (``path:line: reason``) or, with
``skip_bad_rows=True``, is skipped, recorded in ``skipped`` and logged.

Labels: surrounding whitespace is stripped from every label before it is
checked, in every task (``"1 "`` is ``"1"``; the original would have failed
with a KeyError). A training set must not be empty (a header-only file stops
with an error naming it) and, for classification, must hold at least two
distinct labels unless ``allow_single_class=True``.
"""

import math
import os

from absl import logging

from bert_tf.data_prep.classifier_features import InputExample
from bert_tf.data_prep.table_reader import BadRowError
from bert_tf.data_prep.table_reader import RowProblem
from bert_tf.data_prep.table_reader import read_records
from bert_tf.errors import UserInputError

# How many skipped rows are spelled out in the log (the rest are only counted).
_LOGGED_SKIPS = 5


class DataProcessor:
    """Base class for data converters for sequence classification data sets.

    Args:
      skip_bad_rows: skip malformed rows (recorded in `skipped` and logged)
        instead of raising BadRowError.
      allow_single_class: accept classification training data whose examples
        all have the same label (by default an error: it usually means a cut
        or mis-parsed file, and the model cannot learn anything from it).

    Attributes:
      skipped: (path, line, reason) of every row skipped so far by this
        processor, over all files it has read.
    """

    is_regression = False
    # Whether examples have a text_b (a SavedModel then takes text_b too).
    text_pair = True

    def __init__(self, skip_bad_rows=False, allow_single_class=False):
        self.skip_bad_rows = skip_bad_rows
        self.allow_single_class = allow_single_class
        self.skipped = []

    def get_train_examples(self, data_dir):
        """Gets a collection of `InputExample`s for the train set."""
        raise NotImplementedError()

    def get_dev_examples(self, data_dir):
        """Gets a collection of `InputExample`s for the dev set."""
        raise NotImplementedError()

    def get_test_examples(self, data_dir):
        """Gets a collection of `InputExample`s for prediction."""
        raise NotImplementedError()

    def get_labels(self, data_dir=None):
        """Gets the list of labels for this data set ([None] for regression).

        `data_dir` is used only by CustomProcessor (its labels come from the
        train file); the GLUE tasks have fixed labels and ignore it.
        """
        raise NotImplementedError()

    @classmethod
    def _read_tsv(cls, input_file, quotechar=None):
        """Reads a tab separated value file into a list of rows (the original's
        helper, with strict decoding: a bad row raises BadRowError)."""
        if quotechar is not None:
            raise ValueError("only quotechar=None is supported")
        rows = []
        for line, fields, problem in read_records(input_file, "tsv"):
            if problem is not None:
                raise BadRowError(input_file, line, problem)
            rows.append(fields)
        return rows

    # Shared machinery of the GLUE-style processors.

    def _create_examples(self, path, build, has_header=True, num_columns=None):
        """Builds examples from the rows of a TSV file.

        Args:
          path: the file.
          build: function (row_index, fields) -> InputExample or None (row
            intentionally filtered out, e.g. another XNLI language); raises
            RowProblem for a bad row. `row_index` counts every record of the
            file from 0, header included (it is what the original's guids use).
          has_header: the first record is a header (skipped).
          num_columns: the number of columns every row must have; by default
            the header's.
        """
        examples = []
        skipped = []
        header_seen = not has_header
        for index, (line, fields, problem) in enumerate(read_records(path, "tsv")):
            if not header_seen:
                # Without a usable header the file cannot be interpreted at all.
                if problem is not None:
                    raise BadRowError(path, line, f"bad header: {problem}")
                header_seen = True
                if num_columns is None:
                    num_columns = len(fields)
                continue
            try:
                if problem is not None:
                    raise RowProblem(problem)
                if num_columns is not None and len(fields) != num_columns:
                    raise RowProblem(
                        f"expected {num_columns} tab-separated columns, found "
                        f"{len(fields)}"
                    )
                example = build(index, fields)
            except RowProblem as exc:
                self._bad_row(path, line, str(exc), skipped)
                continue
            if example is not None:
                examples.append(example)
        if not header_seen:
            raise BadRowError(path, 1, "empty file: expected a header row")
        self._log_skipped(path, skipped)
        return examples

    def _bad_row(self, path, line, reason, skipped):
        if not self.skip_bad_rows:
            raise BadRowError(path, line, reason)
        skipped.append((path, line, reason))

    def _log_skipped(self, path, skipped):
        if not skipped:
            return
        self.skipped.extend(skipped)
        shown = "; ".join(f"{p}:{n}: {r}" for p, n, r in skipped[:_LOGGED_SKIPS])
        logging.warning(
            "Skipped %d bad row(s) of %s (skip_bad_rows=True); first %d: %s",
            len(skipped),
            path,
            min(len(skipped), _LOGGED_SKIPS),
            shown,
        )

    def _checked_training_set(self, path, examples):
        """`examples` of the training file `path`, if they can train a model."""
        if not examples:
            skipped = sum(
                1 for skipped_path, _, _ in self.skipped if skipped_path == path
            )
            detail = (
                f"all {skipped} data rows were skipped"
                if skipped
                else ("an empty or header-only file")
            )
            raise UserInputError(f"{path}: no training example ({detail})")
        if not self.is_regression and not self.allow_single_class:
            labels = {example.label for example in examples}
            if len(labels) < 2:
                raise UserInputError(
                    f"{path}: all {len(examples)} training examples have the label "
                    f"{next(iter(labels))!r}; a classifier needs at least two "
                    "classes (a cut or mis-parsed file?). Pass "
                    "allow_single_class=True to train anyway.",
                    argument="allow_single_class",
                )
        return examples

    def _check_label(self, label):
        label = label.strip()
        if label not in self.get_labels():
            raise RowProblem(
                f"unknown label {label!r} (expected one of {self.get_labels()})"
            )
        return label


class XnliProcessor(DataProcessor):
    """Processor for the XNLI data set.

    Args:
      language: which language to read (the original hard-coded "zh"): train is
        multinli/multinli.train.{language}.tsv, dev/test are the rows of
        xnli.dev.tsv / xnli.test.tsv whose first column is `language`.
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def __init__(self, language="zh", skip_bad_rows=False, allow_single_class=False):
        super().__init__(skip_bad_rows, allow_single_class)
        self.language = language

    def get_train_examples(self, data_dir):
        def build(i, line):
            label = line[2]
            if label == "contradictory":
                label = "contradiction"
            return InputExample(
                guid=f"train-{i}",
                text_a=line[0],
                text_b=line[1],
                label=self._check_label(label),
            )

        path = os.path.join(data_dir, "multinli", f"multinli.train.{self.language}.tsv")
        return self._checked_training_set(path, self._create_examples(path, build))

    def get_dev_examples(self, data_dir):
        return self._create_language_examples(
            os.path.join(data_dir, "xnli.dev.tsv"), "dev"
        )

    def get_test_examples(self, data_dir):
        """Reads xnli.test.tsv like the dev set (the original did not implement
        it); the test file carries real labels, which are kept."""
        return self._create_language_examples(
            os.path.join(data_dir, "xnli.test.tsv"), "test"
        )

    def _create_language_examples(self, path, set_type):
        def build(i, line):
            if line[0] != self.language:
                return None
            return InputExample(
                guid=f"{set_type}-{i}",
                text_a=line[6],
                text_b=line[7],
                label=self._check_label(line[1]),
            )

        return self._create_examples(path, build)

    def get_labels(self, data_dir=None):
        return ["contradiction", "entailment", "neutral"]


class MnliProcessor(DataProcessor):
    """Processor for the MultiNLI data set (GLUE version).

    Args:
      matched: dev/test default to dev_matched.tsv / test_matched.tsv (True, the
        original) or dev_mismatched.tsv / test_mismatched.tsv (False).
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def __init__(self, matched=True, skip_bad_rows=False, allow_single_class=False):
        super().__init__(skip_bad_rows, allow_single_class)
        self.matched = matched

    def get_train_examples(self, data_dir):
        path = os.path.join(data_dir, "train.tsv")
        return self._checked_training_set(
            path, self._create_mnli_examples(path, "train")
        )

    def get_dev_examples(self, data_dir, matched=None):
        """dev_matched.tsv (guids "dev_matched-*") or, with matched=False,
        dev_mismatched.tsv ("dev_mismatched-*")."""
        name = "dev_matched" if self._matched(matched) else "dev_mismatched"
        return self._create_mnli_examples(os.path.join(data_dir, name + ".tsv"), name)

    def get_test_examples(self, data_dir, matched=None):
        """test_matched.tsv (guids "test-*", as the original) or, with
        matched=False, test_mismatched.tsv ("test_mismatched-*")."""
        if self._matched(matched):
            path, guid_prefix = os.path.join(data_dir, "test_matched.tsv"), "test"
        else:
            path = os.path.join(data_dir, "test_mismatched.tsv")
            guid_prefix = "test_mismatched"
        return self._create_mnli_examples(path, guid_prefix, is_test=True)

    def get_labels(self, data_dir=None):
        return ["contradiction", "entailment", "neutral"]

    def _matched(self, matched):
        return self.matched if matched is None else matched

    def _create_mnli_examples(self, path, guid_prefix, is_test=False):
        def build(i, line):
            if is_test:
                label = "contradiction"
            else:
                label = self._check_label(line[-1])
            return InputExample(
                guid=f"{guid_prefix}-{line[0]}",
                text_a=line[8],
                text_b=line[9],
                label=label,
            )

        return self._create_examples(path, build)


class MnliMismatchedProcessor(MnliProcessor):
    """MNLI with the mismatched dev/test sets by default (task "mnli-mm").

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def __init__(self, skip_bad_rows=False, allow_single_class=False):
        super().__init__(
            matched=False,
            skip_bad_rows=skip_bad_rows,
            allow_single_class=allow_single_class,
        )


class _SplitFilesProcessor(DataProcessor):
    """A GLUE task stored as train.tsv, dev.tsv and test.tsv in data_dir."""

    def get_train_examples(self, data_dir):
        return self._checked_training_set(
            os.path.join(data_dir, "train.tsv"), self._create_split(data_dir, "train")
        )

    def get_dev_examples(self, data_dir):
        return self._create_split(data_dir, "dev")

    def get_test_examples(self, data_dir):
        return self._create_split(data_dir, "test")

    def _create_split(self, data_dir, set_type):
        path = os.path.join(data_dir, set_type + ".tsv")
        return self._create_examples(
            path, lambda i, line: self._build(set_type, i, line)
        )

    def _build(self, set_type, i, line):
        raise NotImplementedError()


class MrpcProcessor(_SplitFilesProcessor):
    """Processor for the MRPC data set (GLUE version).

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _build(self, set_type, i, line):
        label = "0" if set_type == "test" else self._check_label(line[0])
        return InputExample(
            guid=f"{set_type}-{i}", text_a=line[3], text_b=line[4], label=label
        )


class ColaProcessor(_SplitFilesProcessor):
    """Processor for the CoLA data set (GLUE version).

    train.tsv and dev.tsv have no header (4 columns: source, label, original
    mark, sentence); test.tsv has the header "index\\tsentence".

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    text_pair = False

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _create_split(self, data_dir, set_type):
        path = os.path.join(data_dir, set_type + ".tsv")
        is_test = set_type == "test"

        def build(i, line):
            if is_test:
                return InputExample(guid=f"test-{i}", text_a=line[1], label="0")
            return InputExample(
                guid=f"{set_type}-{i}", text_a=line[3], label=self._check_label(line[1])
            )

        # Only the test set has a header.
        return self._create_examples(
            path, build, has_header=is_test, num_columns=None if is_test else 4
        )


class Sst2Processor(_SplitFilesProcessor):
    """SST-2: train/dev "sentence\\tlabel", test "index\\tsentence" (not in the original).

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    text_pair = False

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _build(self, set_type, i, line):
        if set_type == "test":
            return InputExample(guid=f"test-{i}", text_a=line[1], label="0")
        return InputExample(
            guid=f"{set_type}-{i}", text_a=line[0], label=self._check_label(line[1])
        )


class QqpProcessor(_SplitFilesProcessor):
    """QQP: "id qid1 qid2 question1 question2 is_duplicate"; test "id question1
    question2" (not in the original).

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["0", "1"]

    def _build(self, set_type, i, line):
        if set_type == "test":
            text_a, text_b, label = line[1], line[2], "0"
        else:
            text_a, text_b, label = line[3], line[4], self._check_label(line[5])
        return InputExample(
            guid=f"{set_type}-{line[0]}", text_a=text_a, text_b=text_b, label=label
        )


class _IndexPairProcessor(_SplitFilesProcessor):
    """Columns index, text_a, text_b, label (test: no label): QNLI/RTE/WNLI."""

    def _build(self, set_type, i, line):
        if set_type == "test":
            label = self.get_labels()[0]
        else:
            label = self._check_label(line[3])
        return InputExample(
            guid=f"{set_type}-{line[0]}", text_a=line[1], text_b=line[2], label=label
        )


class QnliProcessor(_IndexPairProcessor):
    """QNLI: "index question sentence label" (not in the original).

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["entailment", "not_entailment"]


class RteProcessor(_IndexPairProcessor):
    """RTE: "index sentence1 sentence2 label" (not in the original).

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["entailment", "not_entailment"]


class WnliProcessor(_IndexPairProcessor):
    """WNLI: "index sentence1 sentence2 label", labels 0/1 (not in the original).

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["0", "1"]


def parse_score(text):
    """A regression label: a finite float, else RowProblem."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise RowProblem(f"label {text!r} is not a number") from None
    if not math.isfinite(value):
        raise RowProblem(f"label {text!r} is not a finite number")
    return value


class StsbProcessor(_SplitFilesProcessor):
    """STS-B regression (not in the original): sentence1/sentence2 in columns
    7/8, the float "score" in the last column; test has no score (0.0 is used).

    ``get_labels()`` returns ``[None]``: one output, and convert_single_example
    then uses the float label as label_id.

    Args:
      skip_bad_rows, allow_single_class: see DataProcessor.
    """

    is_regression = True

    def get_labels(self, data_dir=None):
        return [None]

    def _build(self, set_type, i, line):
        label = 0.0 if set_type == "test" else parse_score(line[-1])
        return InputExample(
            guid=f"{set_type}-{line[0]}", text_a=line[7], text_b=line[8], label=label
        )
