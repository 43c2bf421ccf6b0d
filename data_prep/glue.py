"""GLUE / XNLI / custom-file processors and feature conversion of ``run_classifier.py``.

Reproduces the data side of google-research/bert's ``run_classifier.py`` (commit
eedf571): ``InputExample``, ``InputFeatures``, ``PaddingInputExample``, the
processors for ``cola``, ``mnli``, ``mrpc`` and ``xnli`` (same files, header
handling, columns, guids and labels), ``convert_single_example`` and
``convert_examples_to_features``. On every file the original can read, the
examples and features are identical.

Added on top of the original:

* Processors for the rest of GLUE in its standard file layout: ``sst-2``, ``qqp``,
  ``qnli``, ``rte``, ``wnli`` and ``sts-b`` (regression: ``is_regression = True``,
  the label is a float and ``get_labels()`` returns ``[None]``, i.e. one output).
  Test sets get a placeholder label (the first label, 0.0 for regression), as the
  original does for its tasks.
* ``mnli-mm``: MNLI whose dev/test sets are ``dev_mismatched.tsv`` /
  ``test_mismatched.tsv``. ``MnliProcessor.get_dev_examples(data_dir,
  matched=False)`` does the same for one call.
* ``XnliProcessor(language="zh")``: the language was hard-coded in the original.
  ``get_test_examples`` reads ``xnli.test.tsv`` (same layout and filter as the dev
  set, real labels) where the original raised NotImplementedError.
* ``custom``: ``CustomProcessor`` reads .tsv/.csv/.jsonl files with named or
  0-based indexed columns; labels are the sorted set found in the train file.
* Strict input checks. Files are decoded as strict UTF-8 line by line (the
  original dropped undecodable bytes); a UTF-8 byte-order mark at the start of a
  file is removed. A malformed row (undecodable bytes, a column count different
  from the header's, an unknown label, an unparsable regression score, ...)
  raises ``BadRowError`` (a ``ValueError``) whose message starts with
  ``path:line: reason`` (1-based physical line). With ``skip_bad_rows=True`` such
  rows are skipped instead, recorded in the processor's ``skipped`` list as
  ``(path, line, reason)`` and logged (count and first 5). Nothing is dropped
  silently. Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as for ``csv`` with
  ``newline=""``).

Guids of the remaining rows do not depend on skipped rows: they use the row index
in the file, as the original does.
"""

import codecs
import csv
import dataclasses
import json
import math
import os

from absl import logging

from bert_tf import tokenization

__all__ = [
    "PROCESSORS",
    "BadRowError",
    "ColaProcessor",
    "CustomProcessor",
    "DataProcessor",
    "InputExample",
    "InputFeatures",
    "MnliMismatchedProcessor",
    "MnliProcessor",
    "MrpcProcessor",
    "PaddingInputExample",
    "QnliProcessor",
    "QqpProcessor",
    "RteProcessor",
    "Sst2Processor",
    "StsbProcessor",
    "WnliProcessor",
    "XnliProcessor",
    "convert_examples_to_features",
    "convert_single_example",
    "get_processor",
    "is_regression_label_list",
    "read_records",
]

# How many skipped rows are spelled out in the log (the rest are only counted).
_LOGGED_SKIPS = 5


@dataclasses.dataclass
class InputExample:
    """A single training/test example for simple sequence classification.

    Args:
      guid: unique id of the example, e.g. "train-12".
      text_a: the untokenized text of the first sequence.
      text_b: the untokenized text of the second sequence (pair tasks only).
      label: the label string (a float for regression tasks).
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | float | None = None


class PaddingInputExample:
    """Fake example that pads eval/predict sets to a multiple of the batch size.

    It becomes all-zero features with ``is_real_example=False``, which get weight
    0 in the metrics (the original needs it on TPU, where batches are fixed).
    """


@dataclasses.dataclass
class InputFeatures:
    """A single set of features of data (lists of length max_seq_length).

    Args:
      input_ids: token ids, zero-padded.
      input_mask: 1 for real tokens, 0 for padding.
      segment_ids: 0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding.
      label_id: index of the label in the label list (float for regression).
      is_real_example: False for PaddingInputExample features.
    """

    input_ids: list
    input_mask: list
    segment_ids: list
    label_id: int | float
    is_real_example: bool = True


class BadRowError(ValueError):
    """A malformed input row; the message is ``path:line: reason``.

    Args:
      path: the file.
      line: 1-based physical line where the row starts (or the bad line).
      reason: what is wrong.
    """

    def __init__(self, path, line, reason):
        super().__init__(f"{path}:{line}: {reason}")
        self.path = path
        self.line = line
        self.reason = reason


class _RowProblem(Exception):
    """Raised by row builders; turned into a BadRowError or a skip."""


# ---------------------------------------------------------------------------
# Reading files


def _read_lines(path):
    """Returns the raw physical lines of `path` (bytes, line ends kept), BOM removed."""
    with open(path, "rb") as f:
        data = f.read()
    # GLUE's MRPC train/dev start with a UTF-8 BOM; it must not stick to the
    # first field (it would break column names of custom files).
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # bytes.splitlines breaks only at \n, \r\n and \r, like csv with newline="";
    # str.splitlines would also break at \x0b, \x1c, U+2028, ... inside text.
    return data.splitlines(keepends=True)


def _decode_reason(exc):
    return (
        f"invalid UTF-8 ({exc.reason}: byte 0x{exc.object[exc.start]:02x} at "
        f"column {exc.start + 1})"
    )


def read_records(path, file_format="tsv"):
    """Yields ``(line, fields, problem)`` for each record of a text table.

    Args:
      path: the file.
      file_format: "tsv" (csv.reader, tab, quotechar=None, as the original's
        ``_read_tsv``: quotes are literal characters), "csv" (csv.reader default
        dialect; a quoted field may span lines) or "jsonl" (one JSON object per
        line; `fields` is the dict).

    `line` is the 1-based physical line where the record starts (or the line that
    is bad); `problem` is None or the reason the record is unusable (undecodable
    bytes, empty line, CSV or JSON error), in which case `fields` is None.
    """
    lines = _read_lines(path)
    if file_format == "jsonl":
        yield from _jsonl_records(lines)
        return
    if file_format == "tsv":
        dialect = {"delimiter": "\t", "quotechar": None}
    elif file_format == "csv":
        dialect = {}
    else:
        raise ValueError(f"Unknown file format {file_format!r} (tsv, csv or jsonl)")

    undecodable = {}

    def decoded_lines():
        for number, raw in enumerate(lines, 1):
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                # Keep feeding csv so later rows can still be read; the row
                # holding this line is reported below.
                undecodable[number] = _decode_reason(exc)
                yield raw.decode("utf-8", "replace")

    reader = csv.reader(decoded_lines(), **dialect)
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start, None, f"CSV error: {exc}"
            start = reader.line_num + 1
            continue
        end = reader.line_num
        bad_lines = [n for n in range(start, end + 1) if n in undecodable]
        if bad_lines:
            yield bad_lines[0], None, undecodable[bad_lines[0]]
        elif not fields:
            yield start, None, "empty line"
        else:
            yield start, fields, None
        start = end + 1


def _jsonl_records(lines):
    for number, raw in enumerate(lines, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield number, None, _decode_reason(exc)
            continue
        if not text.strip():
            yield number, None, "empty line"
            continue
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, None, f"invalid JSON: {exc}"
            continue
        if not isinstance(value, dict):
            yield number, None, f"expected a JSON object, got {type(value).__name__}"
            continue
        yield number, value, None


# ---------------------------------------------------------------------------
# Processors


class DataProcessor:
    """Base class for data converters for sequence classification data sets.

    Args:
      skip_bad_rows: skip malformed rows (recorded in `skipped` and logged)
        instead of raising BadRowError.

    Attributes:
      skipped: (path, line, reason) of every row skipped so far by this
        processor, over all files it has read.
    """

    is_regression = False
    # Whether examples have a text_b (a SavedModel then takes text_b too).
    text_pair = True

    def __init__(self, skip_bad_rows=False):
        self.skip_bad_rows = skip_bad_rows
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
            _RowProblem for a bad row. `row_index` counts every record of the
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
                    raise _RowProblem(problem)
                if num_columns is not None and len(fields) != num_columns:
                    raise _RowProblem(
                        f"expected {num_columns} tab-separated columns, found "
                        f"{len(fields)}"
                    )
                example = build(index, fields)
            except _RowProblem as exc:
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

    def _check_label(self, label):
        if label not in self.get_labels():
            raise _RowProblem(
                f"unknown label {label!r} (expected one of {self.get_labels()})"
            )
        return label


class XnliProcessor(DataProcessor):
    """Processor for the XNLI data set.

    Args:
      language: which language to read (the original hard-coded "zh"): train is
        multinli/multinli.train.{language}.tsv, dev/test are the rows of
        xnli.dev.tsv / xnli.test.tsv whose first column is `language`.
      skip_bad_rows: see DataProcessor.
    """

    def __init__(self, language="zh", skip_bad_rows=False):
        super().__init__(skip_bad_rows)
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
        return self._create_examples(path, build)

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
      skip_bad_rows: see DataProcessor.
    """

    def __init__(self, matched=True, skip_bad_rows=False):
        super().__init__(skip_bad_rows)
        self.matched = matched

    def get_train_examples(self, data_dir):
        return self._create_mnli_examples(os.path.join(data_dir, "train.tsv"), "train")

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
      skip_bad_rows: see DataProcessor.
    """

    def __init__(self, skip_bad_rows=False):
        super().__init__(matched=False, skip_bad_rows=skip_bad_rows)


class _SplitFilesProcessor(DataProcessor):
    """A GLUE task stored as train.tsv, dev.tsv and test.tsv in data_dir."""

    def get_train_examples(self, data_dir):
        return self._create_split(data_dir, "train")

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
      skip_bad_rows: see DataProcessor.
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
      skip_bad_rows: see DataProcessor.
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
      skip_bad_rows: see DataProcessor.
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
      skip_bad_rows: see DataProcessor.
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
      skip_bad_rows: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["entailment", "not_entailment"]


class RteProcessor(_IndexPairProcessor):
    """RTE: "index sentence1 sentence2 label" (not in the original).

    Args:
      skip_bad_rows: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["entailment", "not_entailment"]


class WnliProcessor(_IndexPairProcessor):
    """WNLI: "index sentence1 sentence2 label", labels 0/1 (not in the original).

    Args:
      skip_bad_rows: see DataProcessor.
    """

    def get_labels(self, data_dir=None):
        return ["0", "1"]


def _parse_score(text):
    """A regression label: a finite float, else _RowProblem."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise _RowProblem(f"label {text!r} is not a number") from None
    if not math.isfinite(value):
        raise _RowProblem(f"label {text!r} is not a finite number")
    return value


class StsbProcessor(_SplitFilesProcessor):
    """STS-B regression (not in the original): sentence1/sentence2 in columns
    7/8, the float "score" in the last column; test has no score (0.0 is used).

    ``get_labels()`` returns ``[None]``: one output, and convert_single_example
    then uses the float label as label_id.

    Args:
      skip_bad_rows: see DataProcessor.
    """

    is_regression = True

    def get_labels(self, data_dir=None):
        return [None]

    def _build(self, set_type, i, line):
        label = 0.0 if set_type == "test" else _parse_score(line[-1])
        return InputExample(
            guid=f"{set_type}-{line[0]}", text_a=line[7], text_b=line[8], label=label
        )


class CustomProcessor(DataProcessor):
    """Examples from user files (task "custom").

    The format follows the extension: .tsv (tab, quotes are literal, as GLUE),
    .csv (csv module default dialect) or .jsonl (one JSON object per line). Every
    row of a .tsv/.csv file must have as many columns as the header (or, without
    header, as the first row). Guids are "{train,dev,test}-N", N the 0-based data
    row index in the file. Relative file names are joined to `data_dir`.

    Args:
      train_file, dev_file, test_file: the files (each optional).
      text_a_column: the first text: a column name (header / JSON key) or a
        0-based index (files without header).
      text_b_column: the second text, or None for single-sentence tasks. An
        empty text_b means a single sentence (as in the original).
      label_column: the label column. In the test file it is optional (all
        rows then get the placeholder first label, or 0.0 for regression).
      has_header: whether .tsv/.csv files start with a header row (ignored for
        .jsonl).
      is_regression: float labels; get_labels() returns [None].
      labels: explicit label list; by default the sorted set of label strings
        of the train file (dev/test labels outside it are bad rows).
      skip_bad_rows: see DataProcessor.
    """

    _FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl"}

    def __init__(
        self,
        train_file=None,
        dev_file=None,
        test_file=None,
        text_a_column=0,
        text_b_column=None,
        label_column=1,
        has_header=True,
        is_regression=False,
        labels=None,
        skip_bad_rows=False,
    ):
        super().__init__(skip_bad_rows)
        self.files = {"train": train_file, "dev": dev_file, "test": test_file}
        self.text_a_column = text_a_column
        self.text_b_column = text_b_column
        self.text_pair = text_b_column is not None
        self.label_column = label_column
        self.has_header = has_header
        self.is_regression = is_regression
        self._labels = list(labels) if labels is not None else None
        self._train_cache = None
        self._data_dir = None  # last data_dir seen, for get_labels()
        for name in (text_a_column, label_column):
            if name is None:
                raise ValueError("text_a_column and label_column are required")

    def get_train_examples(self, data_dir=None):
        return list(self._train_examples(data_dir))

    def get_dev_examples(self, data_dir=None):
        return self._read_split(data_dir, "dev")

    def get_test_examples(self, data_dir=None):
        return self._read_split(data_dir, "test")

    def get_labels(self, data_dir=None):
        """[None] for regression; else the explicit `labels`, or the sorted label
        strings of the train file (read on first use; relative file names are
        joined to `data_dir`, by default the last one passed to this processor)."""
        if self.is_regression:
            return [None]
        if self._labels is None:
            if data_dir is None:
                data_dir = self._data_dir
            examples = self._train_examples(data_dir)
            self._labels = sorted({example.label for example in examples})
        return list(self._labels)

    def _train_examples(self, data_dir):
        # get_labels and get_train_examples share one read (and one skip log).
        if self._train_cache is None or self._train_cache[0] != data_dir:
            self._train_cache = (data_dir, self._read_split(data_dir, "train"))
        return self._train_cache[1]

    def _path(self, data_dir, split):
        if data_dir is not None:
            self._data_dir = data_dir
        path = self.files[split]
        if path is None:
            raise ValueError(f"custom task: no {split}_file was given")
        path = os.fspath(path)
        if data_dir and not os.path.isabs(path):
            path = os.path.join(data_dir, path)
        return path

    def _format(self, path):
        extension = os.path.splitext(path)[1].lower()
        if extension not in self._FORMATS:
            raise ValueError(
                f"{path}: unknown file type {extension!r}; use .tsv, .csv or .jsonl"
            )
        return self._FORMATS[extension]

    def _read_split(self, data_dir, split):
        path = self._path(data_dir, split)
        file_format = self._format(path)
        # Training labels are collected from the data; dev/test are checked
        # against them.
        known_labels = None
        if split != "train" and not self.is_regression:
            known_labels = set(self.get_labels(data_dir))

        examples, skipped = [], []
        columns = None  # resolved column positions (tsv/csv) or keys (jsonl)
        has_label = split != "test"
        num_columns = None
        data_index = 0
        header_pending = self.has_header and file_format != "jsonl"
        for line, fields, problem in read_records(path, file_format):
            if header_pending:
                if problem is not None:
                    raise BadRowError(path, line, f"bad header: {problem}")
                header_pending = False
                num_columns = len(fields)
                columns, has_label = self._resolve_names(path, line, fields, split)
                continue
            row_index = data_index
            data_index += 1
            try:
                if problem is not None:
                    raise _RowProblem(problem)
                if columns is None:
                    # First data row of a header-less file or of a .jsonl file.
                    num_columns = None if file_format == "jsonl" else len(fields)
                    columns, has_label = self._resolve_first_row(fields, split)
                example = self._build_example(
                    split,
                    row_index,
                    fields,
                    columns,
                    has_label,
                    num_columns,
                    known_labels,
                )
            except _RowProblem as exc:
                self._bad_row(path, line, str(exc), skipped)
                continue
            examples.append(example)
        if header_pending:
            raise BadRowError(path, 1, "empty file: expected a header row")
        self._log_skipped(path, skipped)
        return examples

    def _wanted_columns(self):
        return {
            "text_a": self.text_a_column,
            "text_b": self.text_b_column,
            "label": self.label_column,
        }

    def _resolve_names(self, path, line, header, split):
        """Maps column names (or indexes) to positions using the header row."""
        positions = {}
        has_label = True
        for role, column in self._wanted_columns().items():
            if column is None:
                positions[role] = None
            elif isinstance(column, int):
                if not 0 <= column < len(header):
                    if role == "label" and split == "test":
                        has_label = False
                        continue
                    raise BadRowError(
                        path,
                        line,
                        f"{role} column index {column} is out of range "
                        f"for a header of {len(header)} columns",
                    )
                positions[role] = column
            elif column in header:
                positions[role] = header.index(column)
            elif role == "label" and split == "test":
                has_label = False
            else:
                raise BadRowError(
                    path, line, f"no column named {column!r} in the header {header}"
                )
        return positions, has_label

    def _resolve_first_row(self, fields, split):
        """Columns of a header-less .tsv/.csv (0-based indexes) or a .jsonl file
        (keys). A test file is labelled if its first row has the label column."""
        wanted = self._wanted_columns()
        if isinstance(fields, dict):
            for role, column in wanted.items():
                if column is not None and not isinstance(column, str):
                    raise ValueError(
                        f".jsonl files need column names (keys), got {role} "
                        f"column {column!r}"
                    )
            has_label = split != "test" or self.label_column in fields
            return wanted, has_label
        for role, column in wanted.items():
            if column is not None and not isinstance(column, int):
                raise ValueError(
                    f"has_header=False needs 0-based column indexes, got {role} "
                    f"column {column!r}"
                )
        has_label = split != "test" or self.label_column < len(fields)
        return wanted, has_label

    def _build_example(
        self, split, row_index, fields, columns, has_label, num_columns, known_labels
    ):
        if num_columns is not None and len(fields) != num_columns:
            raise _RowProblem(f"expected {num_columns} columns, found {len(fields)}")

        def get(role):
            column = columns[role]
            if isinstance(fields, dict):
                if column not in fields:
                    raise _RowProblem(f"missing key {column!r}")
                return fields[column]
            if column >= len(fields):
                raise _RowProblem(
                    f"{role} column {column} is out of range for {len(fields)} columns"
                )
            return fields[column]

        text_a = _as_text(get("text_a"), "text_a", allow_none=False)
        text_b = None
        if columns["text_b"] is not None:
            text_b = _as_text(get("text_b"), "text_b", allow_none=True)
        if not has_label:
            label = 0.0 if self.is_regression else self.get_labels()[0]
        elif self.is_regression:
            label = _parse_score(get("label"))
        else:
            label = _as_label(get("label"))
            if known_labels is not None and label not in known_labels:
                raise _RowProblem(
                    f"unknown label {label!r} (train labels: {sorted(known_labels)})"
                )
        return InputExample(
            guid=f"{split}-{row_index}", text_a=text_a, text_b=text_b, label=label
        )


def _as_text(value, role, allow_none):
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise _RowProblem(f"{role} is not a string: {value!r}")
    return value


def _as_label(value):
    """A classification label as a string (JSON numbers/booleans as written)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    raise _RowProblem(f"label is not a string or number: {value!r}")


# Lower-case task name -> processor class (called with the options).
PROCESSORS = {
    "cola": ColaProcessor,
    "custom": CustomProcessor,
    "mnli": MnliProcessor,
    "mnli-mm": MnliMismatchedProcessor,
    "mrpc": MrpcProcessor,
    "qnli": QnliProcessor,
    "qqp": QqpProcessor,
    "rte": RteProcessor,
    "sst-2": Sst2Processor,
    "sts-b": StsbProcessor,
    "wnli": WnliProcessor,
    "xnli": XnliProcessor,
}


def get_processor(task_name, **options):
    """Returns the processor for `task_name` (case-insensitive).

    Args:
      task_name: a key of PROCESSORS.
      **options: constructor arguments, e.g. skip_bad_rows=True, language="de"
        (xnli), matched=False (mnli), train_file=... (custom).
    """
    key = task_name.lower()
    if key not in PROCESSORS:
        raise ValueError(
            f"Task not found: {task_name!r}. Known tasks: {', '.join(sorted(PROCESSORS))}"
        )
    return PROCESSORS[key](**options)


# ---------------------------------------------------------------------------
# Features


def is_regression_label_list(label_list):
    """True for the regression label list ([None], or None)."""
    return label_list is None or list(label_list) == [None]


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
    """Converts a single `InputExample` into a single `InputFeatures`.

    Exactly the original: [CLS] A [SEP] (B [SEP]); a pair is truncated to
    max_seq_length - 3 by popping from the longer side (B on a tie), a single
    sequence is cut to max_seq_length - 2; zero padding. Regression (label_list
    [None]): label_id is float(example.label). The first 5 examples are logged.
    """
    regression = is_regression_label_list(label_list)
    if isinstance(example, PaddingInputExample):
        return InputFeatures(
            input_ids=[0] * max_seq_length,
            input_mask=[0] * max_seq_length,
            segment_ids=[0] * max_seq_length,
            label_id=0.0 if regression else 0,
            is_real_example=False,
        )
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be at least 3, got {max_seq_length}")

    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = None
    if example.text_b:
        tokens_b = tokenizer.tokenize(example.text_b)

    # As in the original, a text_b that tokenizes to nothing makes a single
    # sequence (no second [SEP], single-sequence truncation).
    if tokens_b:
        # Account for [CLS], [SEP], [SEP] with "- 3".
        tokenization.truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        # Account for [CLS] and [SEP] with "- 2".
        tokens_a = tokens_a[0 : (max_seq_length - 2)]

    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)

    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    # Zero-pad up to the sequence length (the pad id is the literal 0).
    padding = max_seq_length - len(input_ids)
    input_ids = input_ids + [0] * padding
    input_mask += [0] * padding
    segment_ids += [0] * padding

    if regression:
        label_id = float(example.label)
    else:
        # A dict, as the original's label_map (a repeated label maps to its
        # last index).
        label_map = {label: i for i, label in enumerate(label_list)}
        if example.label not in label_map:
            raise ValueError(
                f"example {example.guid}: label {example.label!r} is not in the "
                f"label list {list(label_list)}"
            )
        label_id = label_map[example.label]

    if ex_index < 5:
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(tokens))
        logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
        logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
        logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
        logging.info("label: %s (id = %s)", example.label, label_id)

    return InputFeatures(
        input_ids=input_ids,
        input_mask=input_mask,
        segment_ids=segment_ids,
        label_id=label_id,
        is_real_example=True,
    )


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
    """Converts a list of `InputExample`s to a list of `InputFeatures`."""
    features = []
    for ex_index, example in enumerate(examples):
        if ex_index % 10000 == 0:
            logging.info("Writing example %d of %d", ex_index, len(examples))
        features.append(
            convert_single_example(
                ex_index, example, label_list, max_seq_length, tokenizer
            )
        )
    return features
