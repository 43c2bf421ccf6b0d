"""Embedding a text file into `.npy` + ids (and TFRecord), in bounded memory.

The input is read twice as a stream: once to count its rows (and check
them: a row without text stops the run with `path:line: reason` before any
work), once to embed them `chunk_size` at a time. The embeddings go straight
into a memory-mapped `.npy`, so files larger than RAM work; memory holds one
chunk of texts and its vectors.
"""

import csv
import errno
import json
import os
import time

import numpy as np
from absl import logging

from bert_tf.data_prep.local_files import remove_partial_output
from bert_tf.data_prep.table_reader import BadRowError
from bert_tf.errors import UserInputError
from bert_tf.options.embed_options import EMBED_INPUT_FORMATS
from bert_tf.training.progress import progress_bar

# Rows embedded per chunk, in batches: sorting a chunk by length is what
# keeps padding low, so chunks are many batches long.
DEFAULT_CHUNK_SIZE = 4096


def input_format_of(path, file_format=None):
    if file_format:
        if file_format not in EMBED_INPUT_FORMATS:
            raise UserInputError(
                f"file_format must be one of {EMBED_INPUT_FORMATS}, got {file_format!r}",
                argument={"file_format": "input_format"},
            )
        return file_format
    extension = os.path.splitext(path)[1].lower()
    return {".tsv": "tsv", ".csv": "csv", ".jsonl": "jsonl"}.get(extension, "text")


def _open_text(path):
    # newline="" keeps \r inside csv fields; text lines strip their own ends.
    return open(path, encoding="utf-8", errors="strict", newline="")


def iter_rows(path, file_format, text_column=None, id_column=None):
    """Yields `(id, text)` for each row of `path`, streaming.

    Ids are the `id_column` values, else the 1-based line number.

    Raises:
        BadRowError: `path:line: reason` for a row without text (or id).
    """
    file_format = input_format_of(path, file_format)
    if file_format != "text" and text_column is None:
        raise UserInputError(
            f"{path}: text_column is needed for {file_format} input",
            argument="text_column",
        )
    with _open_text(path) as f:
        try:
            if file_format == "text":
                for line, raw in enumerate(f, 1):
                    text = raw.rstrip("\r\n")
                    if not text.strip():
                        raise BadRowError(path, line, "empty line")
                    yield str(line), text
            elif file_format == "jsonl":
                yield from _jsonl_rows(path, f, text_column, id_column)
            else:
                yield from _table_rows(path, f, file_format, text_column, id_column)
        except UnicodeDecodeError as exc:
            raise UserInputError(f"{path}: invalid UTF-8 ({exc.reason})") from None


def _jsonl_rows(path, f, text_column, id_column):
    for line, raw in enumerate(f, 1):
        if not raw.strip():
            raise BadRowError(path, line, "empty line")
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadRowError(path, line, f"invalid JSON: {exc}") from None
        text = value.get(text_column) if isinstance(value, dict) else None
        if not isinstance(text, str) or not text.strip():
            raise BadRowError(path, line, f"no text under {text_column!r}")
        row_id = str(line) if id_column is None else value.get(id_column)
        if row_id is None:
            raise BadRowError(path, line, f"no id under {id_column!r}")
        yield str(row_id), text


def _table_rows(path, f, file_format, text_column, id_column):
    dialect = {"delimiter": "\t", "quotechar": None} if file_format == "tsv" else {}
    reader = csv.reader(f, **dialect)
    header = next(reader, None)
    if header is None:
        return
    columns = {}
    for parameter, name in (("text_column", text_column), ("id_column", id_column)):
        if name is None:
            continue
        if name not in header:
            raise BadRowError(
                path,
                1,
                f"{parameter}={name!r} is not in the header {header}",
                argument=parameter,
            )
        columns[parameter] = header.index(name)
    start = 2
    for fields in reader:
        line, start = start, reader.line_num + 1
        if len(fields) != len(header):
            raise BadRowError(
                path, line, f"{len(fields)} columns, the header has {len(header)}"
            )
        text = fields[columns["text_column"]]
        if not text.strip():
            raise BadRowError(path, line, "empty text")
        row_id = fields[columns["id_column"]] if id_column else str(line)
        yield row_id, text


def count_rows(input_file, file_format=None, text_column=None, id_column=None):
    """The number of rows of `input_file`, every row read and checked.

    No model or TensorFlow is needed, so a tool can stop on a bad file, a
    missing column or an empty input before it loads a model.

    Raises:
        BadRowError: `path:line: reason` for the first bad row.
        UserInputError: an input without rows.
    """
    rows = sum(1 for _ in iter_rows(input_file, file_format, text_column, id_column))
    if rows == 0:
        raise UserInputError(f"{input_file}: no rows to embed")
    return rows


def _memory_map(output_file, shape):
    """The float32 `.npy` memory map `output_file`.tmp of `shape`, its disk
    blocks taken now. A write through a map to a full disk is a SIGBUS that
    kills the process (nothing to catch), so a disk without room for the
    whole array is an OSError naming `output_file` before any text is
    embedded, and the partial file is removed."""
    path = output_file + ".tmp"
    try:
        embeddings = np.lib.format.open_memmap(
            path, mode="w+", dtype=np.float32, shape=shape
        )
        if hasattr(os, "posix_fallocate"):  # (not on macOS or Windows)
            with open(path, "r+b") as f:
                try:
                    os.posix_fallocate(f.fileno(), 0, os.path.getsize(path))
                except OSError as error:
                    # A file system without it: written as before.
                    if error.errno not in (errno.EINVAL, errno.EOPNOTSUPP):
                        raise
    except OSError as error:
        remove_partial_output(path)
        if error.filename:
            raise
        raise OSError(error.errno, error.strerror, output_file) from None
    return embeddings


def embed_file(
    model,
    input_file,
    output_file,
    file_format=None,
    text_column=None,
    id_column=None,
    batch_size=32,
    chunk_size=DEFAULT_CHUNK_SIZE,
    output_tfrecord=None,
    rows=None,
):
    """Embeds every row of `input_file` with `model` (a `BertSentenceEncoder`,
    or a `bert_tf.serving.litert_model.LiteRTModel` of an embedding export).

    Writes `output_file` (float32 `.npy` [rows, dim], memory-mapped),
    `<output_file without .npy>.ids.txt` (one id per line, in row order) and,
    if given, `output_tfrecord` (a `tf.train.Example` per row: `id` bytes,
    `embedding` floats). `rows`: `count_rows`' answer when the caller has
    it already (the file is then read once less). Returns the number of rows.
    """
    if rows is None:
        rows = count_rows(input_file, file_format, text_column, id_column)
    directory = os.path.dirname(os.path.abspath(output_file))
    os.makedirs(directory, exist_ok=True)
    ids_file = os.path.splitext(output_file)[0] + ".ids.txt"
    embeddings = _memory_map(output_file, (rows, model.embedding_dim))
    writer = None
    if output_tfrecord:
        import tensorflow as tf

        writer = tf.io.TFRecordWriter(output_tfrecord + ".tmp")
    bar = progress_bar(rows, unit_name="text", stateful_metrics=["texts/s"])
    began = time.perf_counter()
    done = 0
    with open(ids_file + ".tmp", "w", encoding="utf-8") as ids:
        chunk = []
        for row in iter_rows(input_file, file_format, text_column, id_column):
            chunk.append(row)
            if len(chunk) == chunk_size:
                done = _embed_chunk(
                    model, chunk, done, embeddings, ids, writer, batch_size
                )
                bar.update(done, [("texts/s", done / (time.perf_counter() - began))])
                chunk = []
        if chunk:
            done = _embed_chunk(model, chunk, done, embeddings, ids, writer, batch_size)
    elapsed = time.perf_counter() - began
    bar.update(done, [("texts/s", done / elapsed)], finalize=True)
    embeddings.flush()
    del embeddings
    if writer is not None:
        writer.close()
        os.replace(output_tfrecord + ".tmp", output_tfrecord)
    # Complete files appear under their names only at the end.
    os.replace(output_file + ".tmp", output_file)
    os.replace(ids_file + ".tmp", ids_file)
    logging.info(
        "Embedded %d texts of %s in %.1f s (%.1f texts/s): %s, %s",
        done,
        input_file,
        elapsed,
        done / elapsed,
        output_file,
        ids_file,
    )
    return done


def _embed_chunk(model, chunk, done, embeddings, ids, writer, batch_size):
    for row_id, _ in chunk:
        if "\n" in row_id or "\r" in row_id:
            raise UserInputError(f"id {row_id!r} holds a line break")
    vectors = model.encode([text for _, text in chunk], batch_size=batch_size)
    embeddings[done : done + len(chunk)] = vectors
    ids.write("".join(f"{row_id}\n" for row_id, _ in chunk))
    if writer is not None:
        import tensorflow as tf

        for (row_id, _), vector in zip(chunk, vectors, strict=True):
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "id": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[row_id.encode()])
                        ),
                        "embedding": tf.train.Feature(
                            float_list=tf.train.FloatList(value=vector)
                        ),
                    }
                )
            )
            writer.write(example.SerializeToString())
    return done + len(chunk)
