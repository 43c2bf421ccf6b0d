"""The classifier TFRecord files of ``run_classifier.py`` (train/eval/predict.tf_record).

Each record is a ``tf.train.Example`` with (spec §2.2):

==================  =======  ==============
feature             dtype    shape
==================  =======  ==============
input_ids           int64    [seq_length]
input_mask          int64    [seq_length]
segment_ids         int64    [seq_length]
label_ids           int64    scalar (written as a 1-element list)
is_real_example     int64    scalar (0 for PaddingInputExample features)
==================  =======  ==============

Extension: for regression tasks (STS-B, custom with ``is_regression``)
``label_ids`` is a float32 scalar (``float_list``); the original had no
regression task. Parsing casts every int64 feature to int32 as the original does
("TPU only supports int32"); the regression label stays float32.
"""

import collections

import tensorflow as tf
from absl import logging

from data_prep import glue

__all__ = [
    "FEATURE_SPEC",
    "record_dataset",
    "training_dataset_fn",
    "trim_to_longest",
    "feature_spec",
    "file_based_convert_examples_to_features",
    "parse_classifier_record",
    "write_classifier_records",
]


def feature_spec(seq_length, is_regression=False):
    """Returns the ``tf.io.FixedLenFeature`` dict of a classifier record.

    Args:
      seq_length: max_seq_length the records were written with.
      is_regression: label_ids is float32 instead of int64.
    """
    return {
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "label_ids": tf.io.FixedLenFeature(
            [], tf.float32 if is_regression else tf.int64
        ),
        "is_real_example": tf.io.FixedLenFeature([], tf.int64),
    }


# The name used in the task description; the same function.
FEATURE_SPEC = feature_spec


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def _serialize(feature, is_regression):
    features = collections.OrderedDict()
    features["input_ids"] = _int_feature(feature.input_ids)
    features["input_mask"] = _int_feature(feature.input_mask)
    features["segment_ids"] = _int_feature(feature.segment_ids)
    if is_regression:
        features["label_ids"] = _float_feature([feature.label_id])
    else:
        features["label_ids"] = _int_feature([feature.label_id])
    features["is_real_example"] = _int_feature([int(feature.is_real_example)])
    example = tf.train.Example(features=tf.train.Features(feature=features))
    return example.SerializeToString()


def write_classifier_records(features, output_file, is_regression=None):
    """Writes `InputFeatures` to a TFRecord file; returns how many were written.

    Args:
      features: iterable of ``glue.InputFeatures``.
      output_file: the .tf_record path.
      is_regression: write label_ids as float; by default inferred from the
        first feature (a float label_id means regression). Every feature must
        then agree, so a mixed list cannot silently produce mixed records.
    """
    count = 0
    with tf.io.TFRecordWriter(str(output_file)) as writer:
        for feature in features:
            label_is_float = isinstance(feature.label_id, float)
            if is_regression is None:
                is_regression = label_is_float
            elif label_is_float and not is_regression:
                raise ValueError(
                    f"feature {count}: float label_id {feature.label_id!r} in a "
                    "classification file (is_regression=False)"
                )
            writer.write(_serialize(feature, is_regression))
            count += 1
    return count


def file_based_convert_examples_to_features(
    examples, label_list, max_seq_length, tokenizer, output_file
):
    """Converts `InputExample`s to a TFRecord file (the original's function).

    Returns the number of records. Regression when label_list is [None].
    """
    is_regression = glue.is_regression_label_list(label_list)

    def features():
        for ex_index, example in enumerate(examples):
            if ex_index % 10000 == 0:
                logging.info("Writing example %d of %d", ex_index, len(examples))
            yield glue.convert_single_example(
                ex_index, example, label_list, max_seq_length, tokenizer
            )

    return write_classifier_records(features(), output_file, is_regression)


def parse_classifier_record(serialized, seq_length, is_regression=False):
    """Parses one serialized record; int64 features become int32.

    Args:
      serialized: a scalar string tensor (one tf.train.Example).
      seq_length: max_seq_length the records were written with.
      is_regression: label_ids is float32.
    """
    example = tf.io.parse_single_example(
        serialized, feature_spec(seq_length, is_regression)
    )
    # tf.Example only supports tf.int64, but the TPU only supports tf.int32.
    return {
        name: tf.cast(tensor, tf.int32) if tensor.dtype == tf.int64 else tensor
        for name, tensor in example.items()
    }


# Batches are padded to the longest example, rounded up to this multiple so
# compiled steps see few distinct shapes and GEMMs stay aligned.
PAD_MULTIPLE = 8


SEQUENCE_FEATURES = ("input_ids", "input_mask", "segment_ids")


def trim_to_longest(batch, sequence_features=SEQUENCE_FEATURES):
    """Cuts a padded batch to its longest example (rounded up to PAD_MULTIPLE).

    BERT's output at a real position does not depend on trailing padding (the
    padded keys are masked), so this changes no result, only the work.
    `sequence_features` are the entries cut (a tagger's per-token labels too).
    """
    seq_length = tf.shape(batch["input_ids"])[1]
    longest = tf.reduce_max(tf.reduce_sum(batch["input_mask"], axis=1))
    length = tf.minimum(
        seq_length, (longest + PAD_MULTIPLE - 1) // PAD_MULTIPLE * PAD_MULTIPLE
    )
    length = tf.maximum(length, 1)
    return {
        name: value[:, :length] if name in sequence_features else value
        for name, value in batch.items()
    }


def record_dataset(
    record_file, seq_length, is_regression, batch_size, pad_to_longest=True
):
    """Eval/predict batches, in file order, the last one partial."""
    dataset = tf.data.TFRecordDataset(record_file).map(
        lambda r: parse_classifier_record(r, seq_length, is_regression),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    dataset = dataset.batch(batch_size)
    if pad_to_longest:
        dataset = dataset.map(trim_to_longest)
    return dataset.prefetch(tf.data.AUTOTUNE)


def sort_into_batches(pool, batch_size, seed):
    """Splits a pool of examples into batches of similar length, in random order.

    All examples of the pool are kept, each exactly once; only which examples
    share a batch changes, so short sentences are not padded to long ones.
    """
    order = tf.argsort(tf.reduce_sum(pool["input_mask"], axis=1), stable=True)
    pool = {name: tf.gather(value, order) for name, value in pool.items()}
    batches = tf.data.Dataset.from_tensor_slices(pool).batch(
        batch_size, drop_remainder=True
    )
    # Batches leave a pool in random order, not shortest first.
    return batches.shuffle(64, seed=seed, reshuffle_each_iteration=True)


def training_dataset_fn(
    record_file,
    num_examples,
    seq_length,
    is_regression,
    batch_size,
    seed,
    pad_to_longest=True,
    bucket_pool_batches=16,
):
    """`dataset_fn(input_context, skip_batches)` for the Trainer.

    Each epoch is a full shuffle of the training set (seeded, so a resumed
    run sees the same batches); the original shuffled a repeated stream with
    a buffer of only 100 records. With `bucket_pool_batches` > 1, every run of
    that many batches is re-cut into batches of similar length (see
    `sort_into_batches`); with `pad_to_longest`, each batch is cut to its
    longest example. Both leave every example's loss the same and remove work.
    """

    def dataset_fn(context, skip_batches):
        return shuffled_training_batches(
            tf.data.TFRecordDataset(record_file),
            num_examples,
            batch_size,
            seed,
            context,
            skip_batches,
            parse=lambda r: parse_classifier_record(r, seq_length, is_regression),
            pad_to_longest=pad_to_longest,
            bucket_pool_batches=bucket_pool_batches,
        )

    return dataset_fn


def shuffled_training_batches(
    dataset,
    num_examples,
    batch_size,
    seed,
    context,
    skip_batches,
    parse=None,
    pad_to_longest=True,
    bucket_pool_batches=16,
    sequence_features=SEQUENCE_FEATURES,
):
    """One input pipeline's training batches of `dataset` (see
    `training_dataset_fn`): seeded full shuffles, repeated, `parse`d, cut into
    per-replica batches (of similar lengths with `bucket_pool_batches` > 1),
    sharded over pipelines, the first `skip_batches` skipped, and trimmed to
    their longest example with `pad_to_longest` (`sequence_features` cut).
    """
    per_replica = context.get_per_replica_batch_size(batch_size)
    dataset = dataset.shuffle(num_examples, seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
    if parse is not None:
        dataset = dataset.map(parse, num_parallel_calls=tf.data.AUTOTUNE)
    if bucket_pool_batches > 1:
        dataset = dataset.batch(per_replica * bucket_pool_batches, drop_remainder=True)
        dataset = dataset.flat_map(
            lambda pool: sort_into_batches(pool, per_replica, seed)
        )
    else:
        dataset = dataset.batch(per_replica, drop_remainder=True)
    # Whole batches go to workers in turn: same batches as one worker.
    dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
    dataset = dataset.skip(skip_batches)
    if pad_to_longest:
        dataset = dataset.map(lambda batch: trim_to_longest(batch, sequence_features))
    return dataset.prefetch(tf.data.AUTOTUNE)
