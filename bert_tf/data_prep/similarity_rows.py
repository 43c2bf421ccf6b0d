"""Rows of sentence-similarity data: scored pairs and (anchor, positive[, negative]).

Scored pairs (STS-B, SICK): two texts and a similarity score, e.g. GLUE's
STS-B `train.tsv` with columns `sentence1`, `sentence2`, `score`. Retrieval
style rows: an anchor, a text that matches it and optionally one that does
not. Files are .tsv (GLUE's quoting-free TSV), .csv or .jsonl; columns are
named (the header row of .tsv/.csv, the keys of .jsonl) or given as 0-based
indexes (a .tsv/.csv without a header). A row that cannot be used stops the
read with `path:line: reason`.
"""

import dataclasses
import math
import os

import numpy as np

from bert_tf.data_prep.table_reader import BadRowError
from bert_tf.data_prep.table_reader import read_records
from bert_tf.errors import UserInputError

FORMATS = {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl", ".json": "jsonl"}


@dataclasses.dataclass
class SimilarityRows:
    """Texts by column (`texts[i][row]`), scores [rows] or None, file lines."""

    path: str
    texts: list
    scores: np.ndarray | None
    lines: list

    def __len__(self):
        return len(self.lines)


def file_format_of(path):
    extension = os.path.splitext(path)[1].lower()
    if extension not in FORMATS:
        raise UserInputError(
            f"{path}: unknown file type {extension!r}; expected .tsv, .csv or .jsonl"
        )
    return FORMATS[extension]


def _column_index(header, column, path):
    if isinstance(column, int):
        return column
    if header is None:
        raise UserInputError(f"{path}: column {column!r} needs a header row")
    if column not in header:
        raise UserInputError(
            f"{path}:1: no column {column!r} in the header (columns: {header})"
        )
    return header.index(column)


def _score(value, path, line):
    """A finite number: not text that is not one, not JSON's true/false, not
    nan or inf (they poison a correlation or a loss without a word)."""
    if isinstance(value, bool):
        raise BadRowError(path, line, f"score {value!r} is not a number")
    try:
        score = float(value)
    except (TypeError, ValueError):
        raise BadRowError(path, line, f"score {value!r} is not a number") from None
    if not math.isfinite(score):
        raise BadRowError(path, line, f"score {value!r} is not a finite number")
    return score


def read_similarity_rows(path, text_columns, score_column=None):
    """Reads the texts of `text_columns` (and float scores of `score_column`).

    Args:
        path: a .tsv, .csv or .jsonl file.
        text_columns: names (or 0-based indexes, for a file without header) of
            the text columns, e.g. ["sentence1", "sentence2"].
        score_column: name or index of the score column, or None.

    Raises:
        BadRowError: `path:line: reason` for an unusable row (missing column,
            empty text, a score that is not a number).
        UserInputError: an unknown file type or column.
    """
    file_format = file_format_of(path)
    columns = [*text_columns] + ([] if score_column is None else [score_column])
    named = all(isinstance(c, str) and not c.isdigit() for c in columns)
    columns = [c if named or isinstance(c, int) else int(c) for c in columns]
    texts = [[] for _ in text_columns]
    scores = []
    lines = []
    indexes = None
    for line, fields, problem in read_records(path, file_format):
        if problem is not None:
            raise BadRowError(path, line, problem)
        if file_format == "jsonl":
            values = []
            for column in columns:
                if str(column) not in fields:
                    raise BadRowError(path, line, f"no key {column!r}")
                values.append(fields[str(column)])
        else:
            if indexes is None:
                header = fields if named else None
                indexes = [_column_index(header, c, path) for c in columns]
                if named:
                    continue
            if len(fields) <= max(indexes):
                raise BadRowError(
                    path, line, f"{len(fields)} columns, column {max(indexes)} needed"
                )
            values = [fields[i] for i in indexes]
        for i, value in enumerate(values[: len(text_columns)]):
            if not isinstance(value, str) or not value.strip():
                raise BadRowError(
                    path, line, f"column {columns[i]!r} is empty or not text"
                )
            texts[i].append(value)
        if score_column is not None:
            scores.append(_score(values[-1], path, line))
        lines.append(line)
    if not lines:
        raise UserInputError(f"{path}: no rows")
    return SimilarityRows(
        path,
        texts,
        np.asarray(scores, np.float32) if score_column is not None else None,
        lines,
    )
