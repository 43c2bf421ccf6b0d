"""Tests for bert_tf.data_prep.classifier_records: the run_classifier TFRecord schema (the
original's train/eval/predict.tf_record features), read by bert_tf.data_prep.record_pipeline."""

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data_prep import classifier_records
from bert_tf.data_prep import glue
from bert_tf.data_prep import record_pipeline
from bert_tf.text import tokenization


def _features():
    return [
        glue.InputFeatures([101, 7, 8, 102, 0], [1, 1, 1, 1, 0], [0, 0, 1, 1, 0], 2),
        glue.InputFeatures([101, 9, 102, 0, 0], [1, 1, 1, 0, 0], [0, 0, 0, 0, 0], 0),
        glue.InputFeatures([0] * 5, [0] * 5, [0] * 5, 0, is_real_example=False),
    ]


def _read(path, seq_length, is_regression=False):
    return [
        {name: tensor.numpy() for name, tensor in record.items()}
        for record in tf.data.TFRecordDataset(str(path)).map(
            lambda r: record_pipeline.parse_record(
                r, classifier_records.feature_spec(seq_length, is_regression)
            )
        )
    ]


def test_feature_spec_matches_the_original():
    spec = classifier_records.feature_spec(128)
    assert spec == {
        "input_ids": tf.io.FixedLenFeature([128], tf.int64),
        "input_mask": tf.io.FixedLenFeature([128], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([128], tf.int64),
        "label_ids": tf.io.FixedLenFeature([], tf.int64),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }
    regression = classifier_records.feature_spec(16, is_regression=True)
    assert regression["label_ids"] == tf.io.FixedLenFeature([], tf.float32)


def test_round_trip_classification(tmp_path):
    path = tmp_path / "train.tf_record"
    features = _features()
    assert classifier_records.write_classifier_records(features, path) == 3
    records = _read(path, 5)
    assert len(records) == 3
    for record, feature in zip(records, features, strict=True):
        assert {name: value.dtype for name, value in record.items()} == {
            "input_ids": np.int32,
            "input_mask": np.int32,
            "segment_ids": np.int32,
            "label_ids": np.int32,
            "is_real_example": np.int32,
        }
        assert record["input_ids"].tolist() == feature.input_ids
        assert record["input_mask"].tolist() == feature.input_mask
        assert record["segment_ids"].tolist() == feature.segment_ids
        assert record["label_ids"].shape == ()
        assert int(record["label_ids"]) == feature.label_id
        assert int(record["is_real_example"]) == int(feature.is_real_example)


def test_raw_record_layout(tmp_path):
    """Written as the original: int64 lists, label and flag as 1-element lists."""
    path = tmp_path / "x.tf_record"
    classifier_records.write_classifier_records(_features()[:1], path)
    raw = next(iter(tf.data.TFRecordDataset(str(path)))).numpy()
    example = tf.train.Example.FromString(raw).features.feature
    # (A protobuf map: the order of the keys is not kept.)
    assert set(example) == {
        "input_ids",
        "input_mask",
        "segment_ids",
        "label_ids",
        "is_real_example",
    }
    assert list(example["input_ids"].int64_list.value) == [101, 7, 8, 102, 0]
    assert list(example["label_ids"].int64_list.value) == [2]
    assert list(example["is_real_example"].int64_list.value) == [1]


def test_round_trip_regression(tmp_path):
    path = tmp_path / "eval.tf_record"
    features = [
        glue.InputFeatures([101, 5, 102], [1, 1, 1], [0, 0, 0], 3.8),
        glue.InputFeatures([0] * 3, [0] * 3, [0] * 3, 0.0, is_real_example=False),
    ]
    assert classifier_records.write_classifier_records(features, path) == 2
    records = _read(path, 3, is_regression=True)
    assert records[0]["label_ids"].dtype == np.float32
    assert records[0]["label_ids"] == np.float32(3.8)
    assert records[0]["input_ids"].dtype == np.int32
    assert records[1]["is_real_example"] == 0
    with pytest.raises(ValueError, match="float label_id 3.8 in a classification"):
        classifier_records.write_classifier_records(
            features, tmp_path / "bad.tf_record", is_regression=False
        )


def test_file_based_convert_and_dataset(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nhi\nthere\n", encoding="utf-8")
    tokenizer = tokenization.FullTokenizer(str(vocab), do_lower_case=True)
    examples = [
        glue.InputExample(f"t-{i}", "hi there", "hi" if i % 2 else None, str(i % 3))
        for i in range(5)
    ] + [glue.PaddingInputExample()]
    path = tmp_path / "predict.tf_record"
    count = classifier_records.file_based_convert_examples_to_features(
        examples, ["0", "1", "2"], 6, tokenizer, str(path)
    )
    assert count == 6
    records = _read(path, 6)
    assert records[0]["input_ids"].tolist() == [2, 4, 5, 3, 0, 0]
    assert records[1]["input_ids"].tolist() == [2, 4, 5, 3, 4, 3]
    assert [int(r["label_ids"]) for r in records] == [0, 1, 2, 0, 1, 0]
    assert [int(r["is_real_example"]) for r in records] == [1, 1, 1, 1, 1, 0]

    # Eval/predict: in order, the last batch short, cut to the longest
    # example rounded up to PAD_MULTIPLE (here the full 6).
    spec = classifier_records.feature_spec(6)
    batches = list(
        record_pipeline.ordered_dataset(str(path), spec, 4, pad_to_longest=True)
    )
    assert [b["input_ids"].shape[0] for b in batches] == [4, 2]
    assert batches[0]["label_ids"].numpy().tolist() == [0, 1, 2, 0]
    assert batches[0]["input_ids"].dtype == tf.int32
    # Training: repeats, shuffles, full batches only.
    dataset_fn = record_pipeline.training_dataset_fn(
        str(path), spec, 4, 1, shuffle_buffer=6, bucket_pool_batches=16
    )
    context = tf.distribute.InputContext()
    for batch in dataset_fn(context, 0).take(3):
        assert batch["input_ids"].shape == (4, 6)


def test_trim_to_longest_rounds_up_and_keeps_labels():
    mask = np.zeros((3, 128), "int32")
    mask[0, :10] = 1
    mask[1, :3] = 1
    batch = {
        "input_ids": tf.constant(mask * 7),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.zeros((3, 128), tf.int32),
        "label_ids": tf.constant([1, 0, 1]),
    }
    trimmed = record_pipeline.trim_to_longest(batch)
    assert trimmed["input_ids"].shape == (3, 16)  # longest 10 -> multiple of 8
    assert trimmed["input_mask"].numpy().sum() == 13  # no real token lost
    assert trimmed["label_ids"].numpy().tolist() == [1, 0, 1]


def test_training_batches_are_seeded_and_skippable(tmp_path):
    features = [
        glue.InputFeatures([i + 1, 2, 0, 0], [1, 1, 0, 0], [0, 0, 0, 0], i % 2)
        for i in range(10)
    ]
    path = str(tmp_path / "train.tf_record")
    classifier_records.write_classifier_records(features, path)
    context = tf.distribute.InputContext()
    dataset_fn = record_pipeline.training_dataset_fn(
        path, classifier_records.feature_spec(4), 2, 7, shuffle_buffer=10
    )
    first = [
        b["input_ids"][:, 0].numpy().tolist() for b in dataset_fn(context, 0).take(8)
    ]
    again = [
        b["input_ids"][:, 0].numpy().tolist() for b in dataset_fn(context, 0).take(8)
    ]
    skipped = [
        b["input_ids"][:, 0].numpy().tolist() for b in dataset_fn(context, 3).take(5)
    ]
    assert first == again and skipped == first[3:]
    assert sorted(sum(first[:5], [])) == list(range(1, 11))  # epoch 1: each once
    assert first[:5] != first[5:]  # reshuffled every epoch


def test_length_buckets_group_similar_lengths_and_keep_every_example(tmp_path):
    rng = np.random.default_rng(0)
    features = []
    for i in range(64):
        length = int(rng.integers(2, 33))
        ids = [i + 1] + [5] * (length - 1) + [0] * (32 - length)
        features.append(
            glue.InputFeatures(ids, [1] * length + [0] * (32 - length), [0] * 32, 0)
        )
    path = str(tmp_path / "train.tf_record")
    classifier_records.write_classifier_records(features, path)
    dataset_fn = record_pipeline.training_dataset_fn(
        path,
        classifier_records.feature_spec(32),
        8,
        3,
        shuffle_buffer=64,
        bucket_pool_batches=8,
        pad_to_longest=True,
    )
    batches = list(
        dataset_fn(tf.distribute.InputContext(), 0).take(8)
    )  # one pool = one epoch
    firsts = sorted(int(i) for b in batches for i in b["input_ids"][:, 0].numpy())
    assert firsts == list(range(1, 65))  # every example exactly once
    spans = [int(np.ptp(b["input_mask"].numpy().sum(axis=1))) for b in batches]
    assert max(spans) <= 12  # random batches of 8 from 2..32 would span ~25
    widths = [b["input_ids"].shape[1] for b in batches]
    assert min(widths) < 32  # short batches are cut to their longest example
