"""Batch prediction: an exported SavedModel over TSV/JSONL/TFRecord rows, in Beam.

Rows are read per input file (``file:line`` keys unless an id column names
them), checked against the SavedModel's raw-text ``serving_default`` inputs,
spread over the workers and run through Beam's ``RunInference`` with a
``SavedModelHandler``; each row's outputs become one JSON line
``{"key": ..., <output>: ...}`` in the ``<output_file>-SSSSS-of-NNNNN``
shards. A row that cannot be read (bad UTF-8, JSON, field count, a missing or
non-text column) is counted and written, with its key and the reason, to the
``<output_file>.malformed-SSSSS-of-NNNNN`` shards; nothing is dropped.

The signature's inputs take the columns in this order: the text column goes
to ``text``, ``text_a``, ``question`` or ``query``; the pair column to
``text_b``, ``context`` or ``passages`` (the reranker's candidates: a JSON
list of strings, or one string, per row).
"""

import codecs
import dataclasses
import json
import os

from bert_tf.beam.runner_options import import_beam
from bert_tf.beam.runner_options import new_pipeline
from bert_tf.beam.runner_options import run_to_end
from bert_tf.beam.sharded_output import ReplaceShards
from bert_tf.beam.sharded_output import check_writable
from bert_tf.data_prep.strict_utf8 import describe_invalid_byte
from bert_tf.errors import UserInputError
from bert_tf.options.batch_prediction_options import BATCH_INPUT_FORMATS

beam = import_beam()

# Signature inputs by role: what the text column and the pair column feed.
FIRST_INPUTS = ("text", "text_a", "question", "query")
SECOND_INPUTS = ("text_b", "context", "passages")
_MALFORMED = "malformed"


@dataclasses.dataclass(frozen=True)
class Columns:
    """Which row fields feed the signature, and which names the row.

    Attributes:
      inputs: ``(signature input name, column)`` pairs.
      id_column: the column of each row's key (None: ``file:line``).
      list_inputs: signature inputs that take a list of strings per row.
    """

    inputs: tuple
    id_column: str | None = None
    list_inputs: tuple = ()


def version_dir(saved_model):
    """The SavedModel version directory of `saved_model` (itself or its highest
    numbered subdirectory with a saved_model.pb)."""
    import tensorflow as tf

    if tf.io.gfile.exists(os.path.join(saved_model, "saved_model.pb")):
        return saved_model
    if not tf.io.gfile.isdir(saved_model):
        raise UserInputError(f"saved_model={saved_model}: no such directory")
    versions = [
        int(name.rstrip("/"))
        for name in tf.io.gfile.listdir(saved_model)
        if name.rstrip("/").isdigit()
        and tf.io.gfile.exists(os.path.join(saved_model, name, "saved_model.pb"))
    ]
    if not versions:
        raise UserInputError(
            f"saved_model={saved_model}: neither a SavedModel version directory "
            "nor a base directory with one"
        )
    return os.path.join(saved_model, str(max(versions)))


def signature_inputs(version):
    """``{name: rank}`` of the string inputs of the export's serving_default
    (read from saved_model.pb, without loading the variables)."""
    import tensorflow as tf
    from tensorflow.core.protobuf import saved_model_pb2

    message = saved_model_pb2.SavedModel()
    with tf.io.gfile.GFile(os.path.join(version, "saved_model.pb"), "rb") as f:
        message.ParseFromString(f.read())
    for meta_graph in message.meta_graphs:
        signature = meta_graph.signature_def.get("serving_default")
        if signature is not None:
            return {
                name: len(info.tensor_shape.dim)
                for name, info in signature.inputs.items()
            }
    raise UserInputError(f"saved_model={version}: no serving_default signature")


def columns_for(inputs, text_column, text_pair_column=None, id_column=None):
    """``Columns`` mapping the tool's columns onto the signature `inputs`.

    Raises:
      UserInputError: the signature takes another number of texts than
        given, or an input this tool does not know.
    """
    first = [name for name in FIRST_INPUTS if name in inputs]
    second = [name for name in SECOND_INPUTS if name in inputs]
    unknown = sorted(set(inputs) - set(first) - set(second))
    if unknown or len(first) != 1 or len(second) > 1:
        raise UserInputError(
            f"saved_model=: serving_default takes {', '.join(sorted(inputs))}; "
            "batch prediction feeds one text (and one pair text) per row"
        )
    if not text_column:
        raise UserInputError("text_column= is required")
    if second and not text_pair_column:
        raise UserInputError(
            f"text_pair_column=: the SavedModel takes {first[0]} and {second[0]}; "
            f"give the column of {second[0]}"
        )
    if text_pair_column and not second:
        raise UserInputError(
            f"text_pair_column={text_pair_column}: the SavedModel takes only {first[0]}"
        )
    pairs = [(first[0], text_column)]
    if second:
        pairs.append((second[0], text_pair_column))
    return Columns(
        inputs=tuple(pairs),
        id_column=id_column or None,
        list_inputs=tuple(name for name in inputs if inputs[name] == 2),
    )


class _RowError(Exception):
    """Why a row cannot be predicted (goes to the malformed output)."""


def _text(value, column, as_list):
    if as_list:
        if isinstance(value, str):
            return [value]
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value
        raise _RowError(f"column {column!r}: not a string or a list of strings")
    if not isinstance(value, str):
        raise _RowError(f"column {column!r}: not a string ({type(value).__name__})")
    return value


def _example(fields, columns, default_key):
    """(key, {signature input: text}) of a row's fields (a dict)."""
    key = default_key
    if columns.id_column:
        if columns.id_column not in fields:
            raise _RowError(f"no column {columns.id_column!r}")
        key = str(fields[columns.id_column])
    example = {}
    for name, column in columns.inputs:
        if column not in fields:
            raise _RowError(f"no column {column!r}")
        example[name] = _text(fields[column], column, name in columns.list_inputs)
    return key, example


def _lines(path):
    """(line number, raw line) of `path`, a UTF-8 BOM before the first line
    removed (as the TSV/CSV readers of `bert_tf.data_prep.table_reader`)."""
    import tensorflow as tf

    with tf.io.gfile.GFile(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            yield number, raw


def _decoded(raw):
    try:
        return raw.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        raise _RowError(f"not UTF-8 ({describe_invalid_byte(exc)})") from None


def _tsv_rows(path):
    header = None
    for number, raw in _lines(path):
        key = f"{path}:{number}"
        try:
            fields = _decoded(raw).split("\t")
            if header is None:
                header = fields
                continue
            if len(fields) != len(header):
                raise _RowError(f"{len(fields)} fields, the header has {len(header)}")
            yield key, dict(zip(header, fields, strict=True))
        except _RowError as error:
            yield key, error


def _jsonl_rows(path):
    for number, raw in _lines(path):
        key = f"{path}:{number}"
        try:
            text = _decoded(raw)
            if not text.strip():
                raise _RowError("empty line")
            try:
                fields = json.loads(text)
            except json.JSONDecodeError as error:
                raise _RowError(f"not JSON ({error.msg})") from None
            if not isinstance(fields, dict):
                raise _RowError("not a JSON object")
            yield key, fields
        except _RowError as error:
            yield key, error


def _tfrecord_rows(path):
    import tensorflow as tf

    number = 0
    try:
        for number, record in enumerate(tf.data.TFRecordDataset(path), start=1):
            key = f"{path}:{number}"
            try:
                example = tf.train.Example.FromString(record.numpy())
            except Exception:  # a protobuf DecodeError
                yield key, _RowError("not a tf.train.Example")
                continue
            fields = {}
            for name, feature in example.features.feature.items():
                values = [v.decode("utf-8", "strict") for v in feature.bytes_list.value]
                if len(values) == 1:
                    values = values[0]
                fields[name] = values if feature.bytes_list.value else None
            yield key, fields
    except UnicodeDecodeError as exc:
        yield (
            f"{path}:{number + 1}",
            _RowError(f"not UTF-8 ({describe_invalid_byte(exc)})"),
        )
    except tf.errors.DataLossError as error:
        # The framing is broken: the records after it cannot be found.
        yield f"{path}:{number + 1}", _RowError(f"corrupt TFRecord ({error.message})")


_READERS = {"tsv": _tsv_rows, "jsonl": _jsonl_rows, "tfrecord": _tfrecord_rows}


class _ReadRows(beam.DoFn):
    """path → (key, example), or (key, reason) to the malformed output."""

    def __init__(self, input_format, columns):
        self._read = _READERS[input_format]
        self._columns = columns
        self._rows = beam.metrics.Metrics.counter(__name__, "rows")
        self._malformed = beam.metrics.Metrics.counter(__name__, _MALFORMED)

    def process(self, path):
        for default_key, fields in self._read(path):
            try:
                if isinstance(fields, _RowError):
                    raise fields
                key, example = _example(fields, self._columns, default_key)
            except _RowError as error:
                self._malformed.inc()
                yield beam.pvalue.TaggedOutput(
                    _MALFORMED,
                    json.dumps(
                        {"key": default_key, "error": str(error)}, ensure_ascii=False
                    ),
                )
                continue
            self._rows.inc()
            yield key, (default_key, example)


def _unique_key(grouped, id_column):
    """(key, [(row, example), ...]) → (key, example); two rows with one
    key are refused (their predictions could not be told apart)."""
    key, rows = grouped
    rows = sorted(rows)
    if len(rows) > 1:
        where = ", ".join(row for row, _ in rows[:3])
        more = f" and {len(rows) - 3} more" if len(rows) > 3 else ""
        raise UserInputError(
            f"id_column={id_column}: the value {key!r} keys {len(rows)} rows "
            f"({where}{more}); its values must be unique (without id_column= "
            "each row is keyed by file:line)",
            argument="id_column",
        )
    return key, rows[0][1]


def _prediction_line(keyed):
    key, result = keyed
    return json.dumps({"key": key, **result.inference}, ensure_ascii=False)


@dataclasses.dataclass
class PredictionStats:
    """Rows predicted and malformed rows written aside.

    Attributes:
      rows: rows read and predicted.
      malformed: rows written to the malformed output instead.
      malformed_prefix: that output's prefix.
    """

    rows: int = 0
    malformed: int = 0
    malformed_prefix: str = ""


def build(
    pipeline,
    input_files,
    input_format,
    columns,
    version,
    output_file,
    batch_size=32,
    label="BatchPredict",
):
    """Adds the stages to `pipeline` under `label`; see the module doc."""
    from apache_beam.ml.inference.base import KeyedModelHandler
    from apache_beam.ml.inference.base import RunInference

    from bert_tf.beam.saved_model_handler import SavedModelHandler

    rows = (
        pipeline
        | f"{label}/InputFiles" >> beam.Create(sorted(input_files))
        | f"{label}/ReadRows"
        >> beam.ParDo(_ReadRows(input_format, columns)).with_outputs(
            _MALFORMED, main="rows"
        )
    )
    # Whole batches: Beam's adaptive batching from 1 row up calls the
    # signature on a few rows at a time.
    handler = KeyedModelHandler(
        SavedModelHandler(version, min_batch_size=batch_size, max_batch_size=batch_size)
    )
    if columns.id_column:
        # Grouped by key (which spreads one file's rows over the workers):
        # a key given to two rows is refused before any prediction is
        # written.
        keyed = (
            rows.rows
            | f"{label}/GroupByKey" >> beam.GroupByKey()
            | f"{label}/UniqueKeys" >> beam.Map(_unique_key, columns.id_column)
        )
    else:
        # file:line keys are unique. One file's rows come from one reader:
        # spread them over the workers.
        keyed = (
            rows.rows
            | f"{label}/SpreadRows" >> beam.Reshuffle()
            | f"{label}/DropRow" >> beam.MapTuple(lambda key, row: (key, row[1]))
        )
    predictions = (
        keyed
        | f"{label}/Predict" >> RunInference(handler)
        | f"{label}/ToJson" >> beam.Map(_prediction_line)
        | f"{label}/WritePredictions" >> beam.io.WriteToText(output_file)
    )
    predictions | f"{label}/OnlyTheseShards" >> ReplaceShards(output_file)
    malformed_prefix = f"{output_file}.malformed"
    malformed = rows[_MALFORMED] | f"{label}/WriteMalformed" >> beam.io.WriteToText(
        malformed_prefix
    )
    malformed | f"{label}/OnlyTheseMalformed" >> ReplaceShards(malformed_prefix)
    return predictions, malformed


def run_pipeline(
    saved_model,
    input_file,
    input_format,
    output_file,
    text_column,
    text_pair_column=None,
    id_column=None,
    batch_size=32,
    runner="DirectRunner",
    beam_options="",
):
    """Predicts every row; returns ``PredictionStats``.

    Args:
      saved_model: a SavedModel version directory or its base directory.
      input_file: a glob (or comma-separated globs) of input files.
      input_format: "tsv" (a header row names the columns), "jsonl" or
        "tfrecord" (tf.train.Example with bytes features).
      output_file: prefix of the JSONL prediction shards.
      text_column, text_pair_column, id_column: see the module doc.
      batch_size: rows per signature call at most.
      runner, beam_options: see ``runner_options.pipeline_options``.
    """
    import tensorflow as tf

    if input_format not in BATCH_INPUT_FORMATS:
        raise UserInputError(
            f"input_format={input_format!r} is not one of {', '.join(BATCH_INPUT_FORMATS)}"
        )
    if batch_size < 1:
        raise UserInputError(f"batch_size must be >= 1, got {batch_size}")
    version = version_dir(saved_model)
    columns = columns_for(
        signature_inputs(version), text_column, text_pair_column, id_column
    )
    input_files = []
    for pattern in input_file.split(","):
        if pattern:
            matches = tf.io.gfile.glob(pattern)
            if not matches:
                raise UserInputError(f"input_file={pattern}: matches no file")
            input_files.extend(matches)
    if not input_files:
        raise UserInputError("input_file= names no file")
    check_writable("output_file", output_file)
    pipeline = new_pipeline(runner, beam_options)
    build(
        pipeline, input_files, input_format, columns, version, output_file, batch_size
    )
    result = run_to_end(pipeline, output_file)
    from apache_beam.metrics.metric import MetricsFilter

    stats = PredictionStats(malformed_prefix=f"{output_file}.malformed")
    query = result.metrics().query(MetricsFilter().with_namespace(__name__))
    for counter in query["counters"]:
        name = counter.key.metric.name
        setattr(stats, name, getattr(stats, name) + (counter.committed or 0))
    if stats.malformed and not stats.rows:
        raise UserInputError(
            f"input_file={input_file}: none of its {stats.malformed} rows could "
            f"be read (first: {_first_malformed(stats.malformed_prefix)}); the "
            f"reasons are in {stats.malformed_prefix}-*",
            argument="input_file",
        )
    return stats


def _first_malformed(prefix):
    """'<key>: <reason>' of the first line of the malformed shards."""
    from apache_beam.io.filesystems import FileSystems

    paths = sorted(m.path for m in FileSystems.match([prefix + "-*"])[0].metadata_list)
    for path in paths:
        with FileSystems.open(path, compression_type="uncompressed") as f:
            line = f.readline()
        if line.strip():
            row = json.loads(line)
            return f"{row['key']}: {row['error']}"
    return "no reason written"
