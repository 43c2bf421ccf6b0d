"""Rows of a text table (.tsv, .csv or .jsonl) with the line each starts on.

Files are decoded as strict UTF-8 line by line (the original dropped
undecodable bytes); a UTF-8 byte-order mark at the start of a file is removed.
Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as for ``csv`` with
``newline=""``). A row that cannot be used is reported with its 1-based
physical line, never dropped: the processors turn it into ``BadRowError``
(``path:line: reason``) or a counted, logged skip.
"""

import codecs
import csv
import json

from bert_tf.data_prep.local_files import open_input_file
from bert_tf.data_prep.strict_utf8 import describe_invalid_byte
from bert_tf.errors import UserInputError

__all__ = ["BadRowError", "RowProblem", "read_records"]


class BadRowError(UserInputError):
    """A malformed input row; the message is ``path:line: reason``.

    Args:
      path: the file.
      line: 1-based physical line where the row starts (or the bad line).
      reason: what is wrong.
      argument: the parameters the reason names (`UserInputError`'s).
    """

    def __init__(self, path, line, reason, argument=None):
        super().__init__(f"{path}:{line}: {reason}", argument=argument)
        self.path = path
        self.line = line
        self.reason = reason


class RowProblem(Exception):
    """Raised by row builders; turned into a BadRowError or a skip."""


def _read_lines(path):
    """Returns the raw physical lines of `path` (bytes, line ends kept), BOM removed."""
    with open_input_file(path) as f:
        data = f.read()
    # GLUE's MRPC train/dev start with a UTF-8 BOM; it must not stick to the
    # first field (it would break column names of custom files).
    if data.startswith(codecs.BOM_UTF8):
        data = data[len(codecs.BOM_UTF8) :]
    # bytes.splitlines breaks only at \n, \r\n and \r, like csv with newline="";
    # str.splitlines would also break at \x0b, \x1c, U+2028, ... inside text.
    return data.splitlines(keepends=True)


def _decode_reason(exc):
    return f"invalid UTF-8 ({describe_invalid_byte(exc)})"


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
