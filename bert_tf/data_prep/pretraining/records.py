"""The pre-training record: its schema, and its bytes without TensorFlow.

Each record is a ``tf.train.Example`` with:

=====================  =======  =======================
feature                dtype    length
=====================  =======  =======================
input_ids              int64    max_seq_length (0-padded)
input_mask             int64    max_seq_length
segment_ids            int64    max_seq_length
masked_lm_positions    int64    max_predictions_per_seq (sorted, 0-padded)
masked_lm_ids          int64    max_predictions_per_seq
masked_lm_weights      float    max_predictions_per_seq (1.0 real, 0.0 pad)
next_sentence_labels   int64    1 (1 = B is a random segment)
=====================  =======  =======================

``RecordEncoder`` writes the bytes of
``tf.train.Example.SerializeToString(deterministic=True)`` directly: importing
TensorFlow costs seconds and hundreds of MB, which this pure-Python pipeline
avoids for local files, and building the message with the ``protobuf``
runtime instead is slower (``benchmarks/record_encoding_speed.py``).
"""

import collections
import struct

from bert_tf.data_prep import tfrecord_files

# The features in the order of the table above (the order they are logged in).
FEATURE_NAMES = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def expected_features(max_seq_length, max_predictions_per_seq):
    """{name: (kind, length)} of a record, for ``check_tfrecord_file``."""
    return {
        "input_ids": ("int64", max_seq_length),
        "input_mask": ("int64", max_seq_length),
        "segment_ids": ("int64", max_seq_length),
        "masked_lm_positions": ("int64", max_predictions_per_seq),
        "masked_lm_ids": ("int64", max_predictions_per_seq),
        "masked_lm_weights": ("float", max_predictions_per_seq),
        "next_sentence_labels": ("int64", 1),
    }


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The ``tf.io.FixedLenFeature`` dict the original run_pretraining reads."""
    import tensorflow as tf

    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64
        ),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.float32
        ),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def parse_pretraining_record(serialized, max_seq_length, max_predictions_per_seq):
    """Parses one serialized record; int64 features become int32 (as the original).

    Args:
      serialized: a scalar string tensor (one tf.train.Example).
      max_seq_length: the length the records were written with.
      max_predictions_per_seq: the prediction count they were written with.
    """
    from bert_tf.data_prep.record_pipeline import parse_record

    return parse_record(
        serialized, pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    )


def padded_features(instance, tokenizer, max_seq_length, max_predictions_per_seq):
    """The original's padded feature lists of an instance (name → list)."""
    input_ids = tokenizer.convert_tokens_to_ids(instance.tokens)
    if len(input_ids) > max_seq_length:
        raise AssertionError(f"{len(input_ids)} tokens > {max_seq_length}")
    padding = [0] * (max_seq_length - len(input_ids))
    input_mask = [1] * len(input_ids) + padding
    segment_ids = list(instance.segment_ids) + padding
    input_ids = input_ids + padding

    masked_lm_ids = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
    num_pad = max_predictions_per_seq - len(masked_lm_ids)
    masked_lm_positions = list(instance.masked_lm_positions) + [0] * num_pad
    masked_lm_weights = [1.0] * len(masked_lm_ids) + [0.0] * num_pad
    masked_lm_ids = masked_lm_ids + [0] * num_pad
    return {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
        "masked_lm_positions": masked_lm_positions,
        "masked_lm_ids": masked_lm_ids,
        "masked_lm_weights": masked_lm_weights,
        "next_sentence_labels": [int(instance.is_random_next)],
    }


def instance_to_example(instance, tokenizer, max_seq_length, max_predictions_per_seq):
    """Converts a ``TrainingInstance`` to a padded ``tf.train.Example``.

    The writer does not use it (see ``RecordEncoder``, same bytes); it is kept
    for callers that want the proto.
    """
    import tensorflow as tf

    features = collections.OrderedDict()
    for name, values in padded_features(
        instance, tokenizer, max_seq_length, max_predictions_per_seq
    ).items():
        if name == "masked_lm_weights":
            feature = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        features[name] = feature
    return tf.train.Example(features=tf.train.Features(feature=features))


def _varint(value):
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = tuple(_varint(value) for value in range(1 << 14))


def _len_varint(value):
    return _SMALL_VARINTS[value] if value < 16384 else _varint(value)


# Feature names in the order ``SerializeToString(deterministic=True)`` writes
# the map entries (sorted keys), and each name's (key prefix, list kind tag):
# Feature.int64_list is field 3 (tag 0x1a), Feature.float_list field 2 (0x12).
_INT64_LIST = b"\x1a"
_FLOAT_LIST = b"\x12"
_SORTED_FEATURES = tuple(
    (b"\x0a" + _len_varint(len(name)) + name.encode(), kind)
    for name, kind in (
        ("input_ids", _INT64_LIST),
        ("input_mask", _INT64_LIST),
        ("masked_lm_ids", _INT64_LIST),
        ("masked_lm_positions", _INT64_LIST),
        ("masked_lm_weights", _FLOAT_LIST),
        ("next_sentence_labels", _INT64_LIST),
        ("segment_ids", _INT64_LIST),
    )
)
_FLOAT_ONE = struct.pack("<f", 1.0)


def _entry_header(key_prefix, kind, size):
    """The bytes of a Features map entry before its packed values (`size`
    bytes): entry (field 1 of Features) → key (1) and Feature (2) → the list
    (Feature field 3 for int64, 2 for float) → its packed values (field 1)."""
    values = b"\x0a" + _len_varint(size)
    feature = kind + _len_varint(len(values) + size) + values
    body = key_prefix + b"\x12" + _len_varint(len(feature) + size) + feature
    return b"\x0a" + _len_varint(len(body) + size) + body


class RecordEncoder:
    """Serializes instances to the bytes of the original's ``tf.train.Example``.

    ``encode(...)`` returns exactly what ``instance_to_example(...)
    .SerializeToString(deterministic=True)`` returns (map entries in sorted key
    order, packed lists), several times faster and without TensorFlow: each
    token's varint and each entry header (per value size) is precomputed, so
    a record is a few joins.
    """

    def __init__(self, vocab, max_seq_length, max_predictions_per_seq):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self._token_varint = {token: _varint(index) for token, index in vocab.items()}
        self._position_varint = [
            _varint(value) for value in range(max(max_seq_length, 128))
        ]
        self._headers = [{} for _ in _SORTED_FEATURES]

    def _header(self, feature_index, size):
        headers = self._headers[feature_index]
        header = headers.get(size)
        if header is None:
            header = headers[size] = _entry_header(
                *_SORTED_FEATURES[feature_index], size
            )
        return header

    def _positions(self, positions):
        table = self._position_varint
        size = len(table)
        return b"".join([table[p] if 0 <= p < size else _varint(p) for p in positions])

    def encode(self, tokens, num_segment_a, positions, labels, is_random_next):
        """Record of ``[CLS] A [SEP] B [SEP]`` tokens (num_segment_a of them in
        segment 0), the masked positions and their original tokens.

        Raises:
          KeyError: a token is not in the vocabulary (as the original).
          AssertionError: more tokens than max_seq_length (as the original).
        """
        segment_ids = b"\x00" * num_segment_a + b"\x01" * (len(tokens) - num_segment_a)
        return self._encode(tokens, segment_ids, positions, labels, is_random_next)

    def encode_instance(self, instance):
        """Record of a ``TrainingInstance`` (any segment ids)."""
        segment_ids = self._positions(instance.segment_ids)
        return self._encode(
            instance.tokens,
            segment_ids,
            instance.masked_lm_positions,
            instance.masked_lm_labels,
            instance.is_random_next,
        )

    def _encode(self, tokens, segment_ids, positions, labels, is_random_next):
        token_varint = self._token_varint.__getitem__
        num_tokens = len(tokens)
        if num_tokens > self.max_seq_length:
            raise AssertionError(f"{num_tokens} tokens > {self.max_seq_length}")
        zeros = b"\x00" * (self.max_seq_length - num_tokens)
        num_predictions = len(labels)
        num_pad = max(0, self.max_predictions_per_seq - num_predictions)
        pred_zeros = b"\x00" * num_pad
        header = self._header
        parts = []
        # In _SORTED_FEATURES order.
        for index, values in enumerate(
            (
                b"".join(map(token_varint, tokens)) + zeros,  # input_ids
                b"\x01" * num_tokens + zeros,  # input_mask
                b"".join(map(token_varint, labels)) + pred_zeros,  # masked_lm_ids
                self._positions(positions) + pred_zeros,  # masked_lm_positions
                _FLOAT_ONE * num_predictions + b"\x00" * (4 * num_pad),  # weights
                b"\x01" if is_random_next else b"\x00",  # next_sentence_labels
                segment_ids + zeros,  # segment_ids
            )
        ):
            parts.append(header(index, len(values)))
            parts.append(values)
        features = b"".join(parts)
        return b"\x0a" + _len_varint(len(features)) + features


def decode_record(data):
    """A serialized pre-training record → {feature name: list of values}.

    Needs no TensorFlow; used to log records and by the benchmark.
    """
    return {
        name: values
        for name, (_, values) in tfrecord_files.decode_example(data).items()
    }
