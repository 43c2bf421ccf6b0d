"""Record encoding and TFRecord framing without TensorFlow: library or hand-written?

Generates one pass of pre-training instances from SQuAD v1.1 dev contexts (the
corpus of ``create_pretraining_data_speed.py``; seq 128, 20 predictions) and
times, on the same serialized records:

* CRC-32C of every record (TFRecord framing): ``google-crc32c`` (used by
  ``data_prep/tfrecord_files.py``), the ``crc32c`` package when installed, and
  the numpy table implementation this project used before (kept here only for
  the comparison);
* serializing each instance as a ``tf.train.Example``: the hand-written
  ``RecordEncoder`` (used by ``data_prep/pretraining``) against the
  ``protobuf`` runtime filling an Example message built from the same
  descriptor (``SerializeToString(deterministic=True)``), checking the bytes
  are equal.

    BERT_TF_DATA=/path/to/shared/data python benchmarks/record_encoding_speed.py
"""

import argparse
import os
import random
import sys
import tempfile
import time

import numpy as np

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cpu_flags import cpu_description  # noqa: E402
from create_pretraining_data_speed import write_squad_corpus  # noqa: E402

from bert_tf.data_prep import tfrecord_files  # noqa: E402
from bert_tf.data_prep.pretraining import GenerationOptions  # noqa: E402
from bert_tf.data_prep.pretraining import RecordEncoder  # noqa: E402
from bert_tf.data_prep.pretraining import read_documents  # noqa: E402
from bert_tf.data_prep.pretraining.instances import generate  # noqa: E402
from bert_tf.text import tokenization  # noqa: E402

SEQ = 128
MAX_PRED = 20


def _numpy_crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return np.array(table, dtype=np.uint32)


_NUMPY_CRC32C_TABLE = _numpy_crc32c_table()


def numpy_masked_crc32c(buffers):
    """The former hand-written CRC: a byte-wise table CRC run on all strings
    at once (right-aligned in a matrix; the 0xFFFFFFFF start added per length)."""
    table = _NUMPY_CRC32C_TABLE
    lengths = np.fromiter(map(len, buffers), dtype=np.int64, count=len(buffers))
    width = int(lengths.max())
    matrix = np.zeros((len(buffers), width), dtype=np.uint8)
    for row, buffer in enumerate(buffers):
        matrix[row, width - len(buffer) :] = np.frombuffer(buffer, dtype=np.uint8)
    crc = np.zeros(len(buffers), dtype=np.uint32)
    for column in np.ascontiguousarray(matrix.T):
        crc = table[crc.astype(np.uint8) ^ column] ^ (crc >> 8)
    init = [0xFFFFFFFF]
    for _ in range(width):
        init.append(int(table[init[-1] & 0xFF]) ^ (init[-1] >> 8))
    crc ^= np.array(init, dtype=np.uint32)[lengths]
    crc ^= np.uint32(0xFFFFFFFF)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)


def example_class():
    """tf.train.Example as a protobuf runtime class, without TensorFlow."""
    from google.protobuf import descriptor_pb2
    from google.protobuf import descriptor_pool
    from google.protobuf import message_factory

    field = descriptor_pb2.FieldDescriptorProto
    file = descriptor_pb2.FileDescriptorProto(
        name="bench_example.proto", package="tensorflow", syntax="proto3"
    )

    def message(name, *fields):
        proto = file.message_type.add(name=name)
        for number, (field_name, kind, label, type_name) in enumerate(fields, 1):
            added = proto.field.add(
                name=field_name, number=number, type=kind, label=label
            )
            if type_name:
                added.type_name = type_name
        return proto

    repeated, optional = field.LABEL_REPEATED, field.LABEL_OPTIONAL
    message("BytesList", ("value", field.TYPE_BYTES, repeated, None))
    message("FloatList", ("value", field.TYPE_FLOAT, repeated, None))
    message("Int64List", ("value", field.TYPE_INT64, repeated, None))
    message(
        "Feature",
        ("bytes_list", field.TYPE_MESSAGE, optional, ".tensorflow.BytesList"),
        ("float_list", field.TYPE_MESSAGE, optional, ".tensorflow.FloatList"),
        ("int64_list", field.TYPE_MESSAGE, optional, ".tensorflow.Int64List"),
    )
    features = message(
        "Features",
        (
            "feature",
            field.TYPE_MESSAGE,
            repeated,
            ".tensorflow.Features.FeatureEntry",
        ),
    )
    entry = features.nested_type.add(name="FeatureEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=field.TYPE_STRING, label=optional)
    entry.field.add(
        name="value",
        number=2,
        type=field.TYPE_MESSAGE,
        label=optional,
        type_name=".tensorflow.Feature",
    )
    message(
        "Example", ("features", field.TYPE_MESSAGE, optional, ".tensorflow.Features")
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    return message_factory.GetMessageClass(
        pool.FindMessageTypeByName("tensorflow.Example")
    )


def protobuf_encoder(tokenizer):
    example_type = example_class()
    vocab = tokenizer.vocab

    def encode(tokens, num_segment_a, positions, labels, is_random_next):
        pad = [0] * (SEQ - len(tokens))
        pred_pad = [0] * (MAX_PRED - len(labels))
        example = example_type()
        feature = example.features.feature
        feature["input_ids"].int64_list.value.extend(
            [vocab[token] for token in tokens] + pad
        )
        feature["input_mask"].int64_list.value.extend([1] * len(tokens) + pad)
        feature["segment_ids"].int64_list.value.extend(
            [0] * num_segment_a + [1] * (len(tokens) - num_segment_a) + pad
        )
        feature["masked_lm_positions"].int64_list.value.extend(
            list(positions) + pred_pad
        )
        feature["masked_lm_ids"].int64_list.value.extend(
            [vocab[token] for token in labels] + pred_pad
        )
        feature["masked_lm_weights"].float_list.value.extend(
            [1.0] * len(labels) + [0.0] * len(pred_pad)
        )
        feature["next_sentence_labels"].int64_list.value.append(int(is_random_next))
        return example.SerializeToString(deterministic=True)

    return encode


def best_of(repeats, function):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        best = min(best, time.perf_counter() - start)
    return best, result


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        sys.exit("set BERT_TF_DATA to the shared data folder")
    vocab = os.path.join(data, "vocab", "bert-base-uncased", "vocab.txt")
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    with tempfile.TemporaryDirectory() as tmp:
        corpus = os.path.join(tmp, "squad.txt")
        write_squad_corpus(os.path.join(data, "squad", "dev-v1.1.json"), corpus)
        documents, _ = read_documents([corpus], tokenizer)
    options = GenerationOptions(max_seq_length=SEQ, dupe_factor=1)
    pairs = generate(
        documents, lambda *pair: pair, list(tokenizer.vocab), options, random.Random(1)
    )
    encoder = RecordEncoder(tokenizer.vocab, SEQ, MAX_PRED)
    encode_protobuf = protobuf_encoder(tokenizer)
    n = len(pairs)
    print(f"{n} instances (one pass over SQuAD v1.1 dev contexts)")

    hand_s, records = best_of(
        args.repeats, lambda: [encoder.encode(*pair) for pair in pairs]
    )
    proto_s, proto_records = best_of(
        args.repeats, lambda: [encode_protobuf(*pair) for pair in pairs]
    )
    assert records == proto_records, "protobuf bytes differ"
    print(
        f"serialize: RecordEncoder {hand_s * 1e3:.0f} ms "
        f"({hand_s / n * 1e6:.1f} us/record), protobuf runtime "
        f"{proto_s * 1e3:.0f} ms ({proto_s / n * 1e6:.1f} us/record): "
        f"{proto_s / hand_s:.2f}x; identical bytes"
    )

    expected = [int(value) for value in numpy_masked_crc32c(records)]
    timings = {}
    timings["numpy (former)"], _ = best_of(
        args.repeats, lambda: numpy_masked_crc32c(records)
    )
    timings["google-crc32c"], got = best_of(
        args.repeats, lambda: [tfrecord_files.masked_crc32c(r) for r in records]
    )
    assert got == expected
    try:
        import crc32c

        def crc32c_package():
            result = []
            for record in records:
                crc = crc32c.crc32c(record)
                crc = ((crc >> 15) | (crc << 17)) & 0xFFFFFFFF
                result.append((crc + 0xA282EAD8) & 0xFFFFFFFF)
            return result

        timings["crc32c"], got = best_of(args.repeats, crc32c_package)
        assert got == expected
    except ImportError:
        print("(crc32c package not installed: skipped)")
    mean = sum(map(len, records)) / n
    print(f"masked CRC-32C of the {n} records ({mean:.0f} bytes each):")
    for name, seconds in timings.items():
        print(f"  {name:15s} {seconds * 1e3:7.1f} ms")
    framing_s, _ = best_of(args.repeats, lambda: tfrecord_files.frame_records(records))
    print(f"frame_records (google-crc32c): {framing_s * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
