"""Documents of JSON-lines, Parquet and plain-text files (a `datasets` export,
a data lake's table, your own text), read as a stream.

JSON-lines and plain text may be bzip2- or gzip-compressed. Plain text holds
one document per run of non-blank lines: a blank line separates documents, as
in create_pretraining_data's input.
"""

import json

from bert_tf.data_prep.corpus.compressed_files import decompression_error
from bert_tf.data_prep.corpus.compressed_files import open_decompressed
from bert_tf.data_prep.corpus.documents import RawDocument
from bert_tf.data_prep.corpus.extra import import_extra
from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError


def _lines(path):
    """(line number, decoded line) of a text file, strict UTF-8."""
    try:
        with open_decompressed(path) as stream:
            for number, raw in enumerate(stream, start=1):
                yield number, decode_line(raw, path, number)
    except (EOFError, OSError) as error:
        user_error = decompression_error(path, error)
        if user_error is None:
            raise
        raise user_error from None


def iter_jsonl_documents(path, name, text_column="text"):
    """Yields a `RawDocument` per line of a JSON-lines file (blank lines skipped).

    Args:
      path: the file.
      name: its name in the keys (``<name>:<line>``).
      text_column: the field holding the text.

    Raises:
      UserInputError: a line that is not a JSON object, or one without a
        string `text_column` (``file:line: ...``).
    """
    for number, line in _lines(path):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as error:
            raise UserInputError(f"{path}:{number}: not JSON ({error.msg})") from None
        if not isinstance(row, dict):
            raise UserInputError(
                f"{path}:{number}: a JSON object with a {text_column!r} field was "
                f"expected, got {type(row).__name__}"
            )
        if text_column not in row:
            raise UserInputError(
                f"{path}:{number}: no {text_column!r} field (it has "
                f"{', '.join(sorted(row)) or 'none'}); choose text_column",
                argument="text_column",
            )
        text = row[text_column]
        if text is None:
            text = ""
        if not isinstance(text, str):
            raise UserInputError(
                f"{path}:{number}: {text_column!r} is a {type(text).__name__}, not text"
            )
        yield RawDocument(f"{name}:{number}", text)


def iter_parquet_documents(path, name, text_column="text"):
    """Yields a `RawDocument` per row of a Parquet file (key ``<name>:row<n>``,
    n from 0), read a record batch at a time.

    Raises:
      UserInputError: pyarrow is missing, the file is not Parquet, or it has
        no string column `text_column`.
    """
    parquet = import_extra("pyarrow.parquet")
    import pyarrow

    try:
        table = parquet.ParquetFile(path)
    except pyarrow.ArrowInvalid as error:
        raise UserInputError(f"{path}: not a Parquet file ({error})") from None
    names = table.schema_arrow.names
    if text_column not in names:
        raise UserInputError(
            f"{path}: no column {text_column!r} (it has {', '.join(names)}); "
            "choose text_column",
            argument="text_column",
        )
    column_type = table.schema_arrow.field(text_column).type
    if not (
        pyarrow.types.is_string(column_type)
        or pyarrow.types.is_large_string(column_type)
    ):
        raise UserInputError(
            f"{path}: column {text_column!r} is {column_type}, not text"
        )
    row = 0
    for batch in table.iter_batches(columns=[text_column]):
        for text in batch.column(0).to_pylist():
            yield RawDocument(f"{name}:row{row}", text or "")
            row += 1


def iter_text_documents(path, name):
    """Yields a `RawDocument` per blank-line-separated block of a text file
    (key ``<name>:<first line>``; its lines joined by newlines)."""
    block, first = [], None
    for number, line in _lines(path):
        line = line.rstrip("\r\n")
        if line.strip():
            if not block:
                first = number
            block.append(line)
        elif block:
            yield RawDocument(f"{name}:{first}", "\n".join(block))
            block = []
    if block:
        yield RawDocument(f"{name}:{first}", "\n".join(block))
