"""bert_tf.data_prep.record_pipeline and bert_tf.data_prep.tfrecord_files: every TFRecord input
is checked as it is read (framing, CRC, first record's features), on real
pre-training records of sample_text.txt and classifier records of real MRPC rows.

Framing and CRCs are compared with TensorFlow's own writer and reader.
"""

import os
import struct

import pytest
import tensorflow as tf

from bert_tf.data_prep import classifier_records
from bert_tf.data_prep import glue
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep import tfrecord_files
from bert_tf.data_prep.pretraining import create_pretraining_data
from bert_tf.data_prep.pretraining import pretraining_feature_spec
from bert_tf.tasks import pretraining as pretraining_task
from bert_tf.text import tokenization

SEQ = 64
MAX_PRED = 10


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def pretraining_records(shared_data, vocab_file, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("pre") / "sample.tfrecord")
    count = create_pretraining_data(
        [os.path.join(shared_data, "bert_sample_text", "sample_text.txt")],
        [path],
        vocab_file,
        max_seq_length=SEQ,
        max_predictions_per_seq=MAX_PRED,
        dupe_factor=2,
    )
    return path, count


@pytest.fixture(scope="module")
def classifier_file(shared_data, vocab_file, tmp_path_factory):
    processor = glue.get_processor("mrpc")
    examples = processor.get_dev_examples(os.path.join(shared_data, "glue", "MRPC"))
    path = str(tmp_path_factory.mktemp("cls") / "eval.tf_record")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    classifier_records.file_based_convert_examples_to_features(
        examples[:40], processor.get_labels(), SEQ, tokenizer, path
    )
    return path


def _offsets(data):
    """Byte offset of each record of a TFRecord file's bytes."""
    offsets, position = [], 0
    while position < len(data):
        offsets.append(position)
        (length,) = struct.unpack_from("<Q", data, position)
        position += length + 16
    return offsets


def test_framing_matches_tensorflow(tmp_path):
    records = [b"", b"x", bytes(range(256)) * 9]
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    data, sizes = tfrecord_files.frame_records(records)
    with open(path, "rb") as f:
        assert f.read() == data
    assert sizes == [len(r) + 16 for r in records]
    assert [d for _, d in tfrecord_files.iter_checked_records(path)] == records


def test_intact_files_pass_and_keep_their_count(pretraining_records, classifier_file):
    path, count = pretraining_records
    spec = pretraining_feature_spec(SEQ, MAX_PRED)
    assert record_pipeline.check_record_files([path], spec) == [count]
    assert record_pipeline.check_record_files(
        classifier_file, classifier_records.feature_spec(SEQ)
    ) == [40]


def test_truncated_pretraining_file_stops_naming_file_record_and_byte(
    pretraining_records, tmp_path
):
    path, count = pretraining_records
    with open(path, "rb") as f:
        data = f.read()
    offsets = _offsets(data)
    assert len(offsets) == count
    middle = count // 2
    cases = {
        # Cut inside a record header: TensorFlow's reader would stop there.
        "header": (offsets[middle] + 5, "the file ends inside the record header"),
        # Cut inside a record's data.
        "data": (offsets[middle] + 40, "the file ends inside the record "),
    }
    for name, (cut, reason) in cases.items():
        cut_path = str(tmp_path / f"cut-{name}.tfrecord")
        with open(cut_path, "wb") as f:
            f.write(data[:cut])
        if name == "header":
            # What TensorFlow makes of it: fewer records, no error.
            read = sum(1 for _ in tf.data.TFRecordDataset(cut_path))
            assert read == middle
        message = rf"cut-{name}\.tfrecord: record {middle} at byte {offsets[middle]}: "
        with pytest.raises(tfrecord_files.TFRecordError, match=message + reason):
            pretraining_task.training_dataset_fn([path, cut_path], SEQ, MAX_PRED, 8, 1)
        with pytest.raises(tfrecord_files.TFRecordError, match=message + reason):
            pretraining_task.eval_dataset([cut_path], SEQ, MAX_PRED, 8, 2)


def test_damaged_bytes_fail_the_crc(pretraining_records, tmp_path):
    path, _ = pretraining_records
    with open(path, "rb") as f:
        data = bytearray(f.read())
    offsets = _offsets(bytes(data))
    spec = pretraining_feature_spec(SEQ, MAX_PRED)
    for name, position, reason in (
        ("payload", offsets[3] + 12 + 20, "data CRC mismatch"),
        ("length", offsets[5] + 1, "length CRC mismatch"),
    ):
        damaged = bytearray(data)
        damaged[position] ^= 0x01
        bad = tmp_path / f"{name}.tfrecord"
        bad.write_bytes(bytes(damaged))
        record = 3 if name == "payload" else 5
        with pytest.raises(
            tfrecord_files.TFRecordError,
            match=rf"{name}\.tfrecord: record {record} at byte "
            rf"{offsets[record]}: {reason}",
        ):
            record_pipeline.check_record_files([str(bad)], spec)


def test_records_of_another_task_or_length_name_the_file(
    pretraining_records, classifier_file
):
    path, _ = pretraining_records
    # A classifier record given to run_pretraining.
    with pytest.raises(
        tfrecord_files.TFRecordError,
        match=r"eval\.tf_record: record 0 at byte 0: not the expected record "
        r"schema: no feature 'masked_lm_positions'",
    ):
        pretraining_task.training_dataset_fn([classifier_file], SEQ, MAX_PRED, 8, 1)
    # Pre-training records read with another max_seq_length.
    with pytest.raises(
        tfrecord_files.TFRecordError,
        match=r"'input_ids' is int64\[64\], expected int64\[128\]",
    ):
        pretraining_task.eval_dataset([path], 128, MAX_PRED, 8, 1)
    # A regression spec on classification records: the label type differs.
    with pytest.raises(
        tfrecord_files.TFRecordError,
        match=r"'label_ids' is int64\[1\], expected float\[1\]",
    ):
        record_pipeline.ordered_dataset(
            classifier_file, classifier_records.feature_spec(SEQ, True), 8
        )
    # A text file is not a TFRecord file.
    with pytest.raises(tfrecord_files.TFRecordError, match="record 0 at byte 0"):
        record_pipeline.check_record_files(
            [os.path.join(os.path.dirname(__file__), "conftest.py")],
            classifier_records.feature_spec(SEQ),
        )


def test_checked_pipeline_reads_every_record_in_file_order(classifier_file):
    dataset = record_pipeline.ordered_dataset(
        classifier_file, classifier_records.feature_spec(SEQ), 16
    )
    batches = list(dataset)
    assert [b["input_ids"].shape[0] for b in batches] == [16, 16, 8]
    assert batches[0]["input_ids"].dtype == tf.int32
    raw = [
        tf.train.Example.FromString(r.numpy()).features.feature["input_ids"]
        for r in tf.data.TFRecordDataset(classifier_file)
    ]
    assert batches[0]["input_ids"][0].numpy().tolist() == list(raw[0].int64_list.value)
