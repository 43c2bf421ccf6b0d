"""The ``custom`` task: a classifier's data from the user's own files."""

import json
import os
import re

from bert_tf.data_prep.classifier_features import InputExample
from bert_tf.data_prep.glue_processors import DataProcessor
from bert_tf.data_prep.glue_processors import parse_score
from bert_tf.data_prep.table_reader import BadRowError
from bert_tf.data_prep.table_reader import RowProblem
from bert_tf.data_prep.table_reader import read_records
from bert_tf.errors import UserInputError


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
        of the train file (labels outside it are bad rows, in every file).
        Surrounding whitespace is stripped from labels ("pos " is "pos"); an
        empty label is a bad row.
      skip_bad_rows, allow_single_class: see DataProcessor.
      allow_header_like_first_row: with has_header=False, accept a first
        train row that looks like a header (its label and texts are single
        words and its label appears in no other row). By default that is an
        error: read as data, a header adds a bogus class.
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
        allow_single_class=False,
        allow_header_like_first_row=False,
    ):
        super().__init__(skip_bad_rows, allow_single_class)
        self.allow_header_like_first_row = allow_header_like_first_row
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
            raise UserInputError(
                f"custom task: no {split}_file was given", argument=f"{split}_file"
            )
        path = os.fspath(path)
        if data_dir and not os.path.isabs(path):
            path = os.path.join(data_dir, path)
        return path

    def _format(self, path):
        extension = os.path.splitext(path)[1].lower()
        if extension not in self._FORMATS:
            raise UserInputError(
                f"{path}: unknown file type {extension!r}; use .tsv, .csv or .jsonl"
            )
        return self._FORMATS[extension]

    def _read_split(self, data_dir, split):
        path = self._path(data_dir, split)
        file_format = self._format(path)
        # Training labels are collected from the data; dev/test are checked
        # against them.
        known_labels = None
        if not self.is_regression and (split != "train" or self._labels is not None):
            known_labels = set(self.get_labels(data_dir))

        examples, skipped = [], []
        columns = None  # resolved column positions (tsv/csv) or keys (jsonl)
        has_label = split != "test"
        num_columns = None
        data_index = 0
        first_data_line = None
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
                    raise RowProblem(problem)
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
            except RowProblem as exc:
                self._bad_row(path, line, str(exc), skipped)
                continue
            if row_index == 0:
                first_data_line = line
            examples.append(example)
        if header_pending:
            raise BadRowError(path, 1, "empty file: expected a header row")
        self._log_skipped(path, skipped)
        if split != "train":
            return examples
        if (
            first_data_line is not None
            and not self.has_header
            and file_format != "jsonl"
            and not self.is_regression
            and not self.allow_header_like_first_row
            and _looks_like_header(examples)
        ):
            first = examples[0]
            raise BadRowError(
                path,
                first_data_line,
                f"this row looks like a header (label {first.label!r} appears in "
                "no other row, its cells are single words) but has_header=False: "
                "pass has_header=True, or allow_header_like_first_row=True "
                "if it is data",
                argument=("has_header", "allow_header_like_first_row"),
            )
        return self._checked_training_set(path, examples)

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
                found = [i for i, name in enumerate(header) if name == column]
                if len(found) > 1:
                    raise BadRowError(
                        path,
                        line,
                        f"the header names {len(found)} columns {column!r} "
                        f"(columns {', '.join(str(i) for i in found)}): "
                        f"{role}_column is ambiguous; rename them or give an index",
                        argument=f"{role}_column",
                    )
                positions[role] = found[0]
            elif role == "label" and split == "test":
                has_label = False
            else:
                raise BadRowError(
                    path, line, f"no column named {column!r} in the header {header}"
                )
        _check_distinct(positions, f"{path}:{line}")
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
            _check_distinct(wanted, "the flags")
            return wanted, has_label
        for role, column in wanted.items():
            if column is not None and not isinstance(column, int):
                raise ValueError(
                    f"has_header=False needs 0-based column indexes, got {role} "
                    f"column {column!r}"
                )
        has_label = split != "test" or self.label_column < len(fields)
        _check_distinct(wanted, "the flags")
        return wanted, has_label

    def _build_example(
        self, split, row_index, fields, columns, has_label, num_columns, known_labels
    ):
        if num_columns is not None and len(fields) != num_columns:
            raise RowProblem(f"expected {num_columns} columns, found {len(fields)}")

        def get(role):
            column = columns[role]
            if isinstance(fields, dict):
                if column not in fields:
                    raise RowProblem(f"missing key {column!r}")
                return fields[column]
            if column >= len(fields):
                raise RowProblem(
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
            label = parse_score(get("label"))
        else:
            label = _as_label(get("label"))
            if known_labels is not None and label not in known_labels:
                raise RowProblem(
                    f"unknown label {label!r} (train labels: {sorted(known_labels)})"
                )
        return InputExample(
            guid=f"{split}-{row_index}", text_a=text_a, text_b=text_b, label=label
        )


def _as_text(value, role, allow_none):
    if value is None and allow_none:
        return None
    if not isinstance(value, str):
        raise RowProblem(f"{role} is not a string: {value!r}")
    return value


def _as_label(value):
    """A classification label as a string (JSON numbers/booleans as written),
    without surrounding whitespace."""
    if isinstance(value, bool | int | float):
        return json.dumps(value)
    if not isinstance(value, str):
        raise RowProblem(f"label is not a string or number: {value!r}")
    label = value.strip()
    if not label:
        raise RowProblem(f"empty label {value!r}")
    return label


_HEADER_CELL = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]{0,39}")


def _looks_like_header(examples):
    """The first example looks like a header row read as data: its label
    occurs in no other row and its label and texts are single words."""
    first = examples[0]
    if len(examples) < 2 or any(e.label == first.label for e in examples[1:]):
        return False
    cells = [first.label, first.text_a]
    if first.text_b is not None:
        cells.append(first.text_b)
    return all(_HEADER_CELL.fullmatch(cell) for cell in cells)


def _check_distinct(positions, where):
    """Raises if two roles read one column (e.g. the text is the label)."""
    seen = {}
    for role, position in positions.items():
        if position is None:
            continue
        if position in seen:
            both = f"{where}: {seen[position]}_column and {role}_column both name "
            raise UserInputError(
                f"{both}column {position!r}: a model would learn the label from its "
                "text"
                if "label" in (role, seen[position])
                else f"{both}column {position!r}",
                argument=(f"{seen[position]}_column", f"{role}_column"),
            )
        seen[position] = role
