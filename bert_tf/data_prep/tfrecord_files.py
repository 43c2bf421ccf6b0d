"""TFRecord files without TensorFlow: framing, checked reading, Example decoding.

A TFRecord file is a sequence of records, each framed as: the data length
(uint64), the masked CRC-32C of those 8 bytes (uint32), the data, the masked
CRC-32C of the data (uint32), all little-endian. The masked CRC is the
CRC-32C rotated right by 15 bits plus 0xA282EAD8 (mod 2**32). These are the
bytes ``tf.io.TFRecordWriter`` writes.

CRC-32C comes from the ``google-crc32c`` library (hardware instructions where
the CPU has them), which ``benchmarks/record_encoding_speed.py`` measures
against the hand-written numpy CRC this project had: an order of magnitude
faster, so the hand-written one was removed.

``check_tfrecord_file`` reads a whole file once and stops at the first damaged
record with ``file: record N at byte B: reason``; a file cut inside a record
(a truncated copy, a full disk) is an error, never fewer records.
"""

import struct

import google_crc32c

from bert_tf.data_prep.local_files import open_input_file
from bert_tf.errors import UserInputError

__all__ = [
    "TFRecordError",
    "check_tfrecord_file",
    "decode_example",
    "frame_records",
    "iter_checked_records",
    "masked_crc32c",
]

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
# Reading granularity of check_tfrecord_file (records are read whole).
_READ_SIZE = 1 << 24


class TFRecordError(UserInputError):
    """A TFRecord file that is damaged or holds other records than expected."""


def masked_crc32c(data):
    """TFRecord's masked CRC-32C of a bytes-like object (an int)."""
    crc = google_crc32c.value(data)
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + _MASK_DELTA) & 0xFFFFFFFF


def frame_records(records):
    """Frames serialized records as TFRecord: returns (bytes, framed sizes)."""
    pieces = []
    sizes = []
    for record in records:
        length = struct.pack("<Q", len(record))
        pieces.append(length)
        pieces.append(_FOOTER.pack(masked_crc32c(length)))
        pieces.append(record)
        pieces.append(_FOOTER.pack(masked_crc32c(record)))
        sizes.append(len(record) + 16)
    return b"".join(pieces), sizes


def _open(path):
    if "://" in path:
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "rb")
    return open_input_file(path)


def iter_checked_records(path):
    """Yields (byte offset, data) of each record of a TFRecord file, checked.

    Raises:
      TFRecordError: ``path: record N at byte B: reason`` for a bad length or
        data CRC, or a record cut short by the end of the file.
    """
    with _open(path) as reader:
        buffer = b""
        base = 0  # file offset of buffer[0]
        position = 0  # offset in buffer
        index = 0
        eof = False

        def need(size):
            nonlocal buffer, base, position, eof
            while len(buffer) - position < size and not eof:
                chunk = reader.read(max(_READ_SIZE, size))
                if not chunk:
                    eof = True
                    break
                buffer = buffer[position:] + chunk
                base += position
                position = 0
            return len(buffer) - position >= size

        while need(1):
            where = f"{path}: record {index} at byte {base + position}"
            if not need(12):
                raise TFRecordError(
                    f"{where}: the file ends inside the record header (truncated file?)"
                )
            length, length_crc = _HEADER.unpack_from(buffer, position)
            if masked_crc32c(buffer[position : position + 8]) != length_crc:
                raise TFRecordError(
                    f"{where}: length CRC mismatch (damaged file, or not a "
                    "TFRecord file?)"
                )
            if not need(12 + length + 4):
                raise TFRecordError(
                    f"{where}: the file ends inside the record "
                    f"({length} data bytes announced; truncated file?)"
                )
            start = position + 12
            data = buffer[start : start + length]
            (data_crc,) = _FOOTER.unpack_from(buffer, start + length)
            if masked_crc32c(data) != data_crc:
                raise TFRecordError(f"{where}: data CRC mismatch (damaged file)")
            yield base + position, data
            position = start + length + 4
            index += 1


def check_tfrecord_file(path, expected_features=None):
    """Checks every record of a TFRecord file; returns the record count.

    Args:
      path: a local or ``gs://``-style path.
      expected_features: optional {name: (kind, length)} with kind "int64",
        "float" or "bytes" and length the number of values (None: any). The
        first record must be a ``tf.train.Example`` with these features
        (others are allowed, as tf.io.parse_example allows them): records of another task (a classifier file given to
        run_pretraining, another max_seq_length) stop here, naming the file.

    Raises:
      TFRecordError: a damaged record or a first record of another schema.
    """
    count = 0
    for offset, data in iter_checked_records(path):
        if count == 0 and expected_features is not None:
            _check_schema(path, offset, data, expected_features)
        count += 1
    return count


def _check_schema(path, offset, data, expected_features):
    where = f"{path}: record 0 at byte {offset}"
    try:
        features = decode_example(data)
    except (ValueError, IndexError) as exc:
        raise TFRecordError(f"{where}: not a tf.train.Example ({exc})") from None
    found = {name: (kind, len(values)) for name, (kind, values) in features.items()}
    problems = []
    for name, (kind, length) in expected_features.items():
        if name not in found:
            problems.append(f"no feature {name!r}")
        elif found[name][0] != kind or (
            length is not None and found[name][1] != length
        ):
            problems.append(
                f"{name!r} is {found[name][0]}[{found[name][1]}], expected "
                f"{kind}[{'any' if length is None else length}]"
            )
    if problems:
        raise TFRecordError(
            f"{where}: not the expected record schema: {'; '.join(problems)} "
            "(records written for another task or other lengths?)"
        )


def _read_varint(data, position):
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _read_field(data, position):
    """One length-delimited field: (field number, payload, next position)."""
    tag, position = _read_varint(data, position)
    if tag & 7 != 2:
        raise ValueError(f"unexpected wire type {tag & 7}")
    length, position = _read_varint(data, position)
    if position + length > len(data):
        raise ValueError("a field runs past the end of its message")
    return tag >> 3, data[position : position + length], position + length


_KINDS = {1: "bytes", 2: "float", 3: "int64"}


def decode_example(data):
    """A serialized ``tf.train.Example`` → {name: (kind, list of values)}.

    kind is "int64", "float" or "bytes". Packed lists, as TensorFlow writes
    them (unpacked int64 / float values are not read). int64 values are
    returned as two's complement unsigned ints (the records of this project
    hold no negative values).
    """
    decoded = {}
    if not data:
        return decoded
    _, features, _ = _read_field(data, 0)
    position = 0
    while position < len(features):
        _, entry, position = _read_field(features, position)
        _, key, offset = _read_field(entry, 0)
        _, feature, _ = (
            _read_field(entry, offset)
            if offset < len(entry)
            else (
                0,
                b"",
                0,
            )
        )
        if not feature:
            decoded[key.decode()] = ("int64", [])
            continue
        kind, values, _ = _read_field(feature, 0)
        if kind not in _KINDS:
            raise ValueError(f"unknown Feature field {kind}")
        if kind == 1:  # bytes_list: repeated bytes
            items = []
            offset = 0
            while offset < len(values):
                _, item, offset = _read_field(values, offset)
                items.append(bytes(item))
            decoded[key.decode()] = ("bytes", items)
            continue
        _, packed, _ = _read_field(values, 0) if values else (0, b"", 0)
        if kind == 2:
            numbers = [value for (value,) in struct.iter_unpack("<f", bytes(packed))]
        else:
            numbers = []
            offset = 0
            while offset < len(packed):
                number, offset = _read_varint(packed, offset)
                numbers.append(number)
        decoded[key.decode()] = (_KINDS[kind], numbers)
    return decoded
