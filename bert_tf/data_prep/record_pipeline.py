"""The tf.data pipelines that read every task's TFRecord files.

One reader for the classifier, SQuAD and pre-training records: each file is
checked first (every record's framing and CRC, the first record's features
against the task's feature spec, see ``check_record_files``), then records are
parsed by the task's ``tf.io.FixedLenFeature`` spec with int64 cast to int32
(tf.train.Example only stores int64; the original cast for TPUs, and the
models take int32), batched, and for training shuffled with a seed, repeated,
sharded per input pipeline and skipped to resume.

Training order, for a resumed run to see exactly the batches it would have
seen: records shuffled (seeded, reshuffled each epoch), repeated, parsed,
optionally mapped with their index in the endless stream, batched (optionally
re-cut into batches of similar length), whole batches dealt to the input
pipelines in turn (so N workers see the batches one worker would), then the
already-trained batches skipped.
"""

import tensorflow as tf
from absl import logging

from bert_tf.data_prep.tfrecord_files import check_tfrecord_file
from bert_tf.text.input_schema import ENCODER_INPUT_NAMES

__all__ = [
    "PAD_MULTIPLE",
    "check_record_files",
    "ordered_dataset",
    "parse_record",
    "sort_into_batches",
    "training_dataset_fn",
    "trim_to_longest",
]

# Batches are padded to the longest example, rounded up to this multiple so
# compiled steps see few distinct shapes and GEMMs stay aligned.
PAD_MULTIPLE = 8

_KIND = {tf.int64: "int64", tf.float32: "float", tf.string: "bytes"}


def parse_record(serialized, feature_spec):
    """Parses one serialized tf.train.Example; int64 features become int32.

    Args:
      serialized: a scalar string tensor.
      feature_spec: {name: tf.io.FixedLenFeature}.
    """
    example = tf.io.parse_single_example(serialized, feature_spec)
    return {
        name: tf.cast(tensor, tf.int32) if tensor.dtype == tf.int64 else tensor
        for name, tensor in example.items()
    }


def _expected_features(feature_spec):
    expected = {}
    for name, feature in feature_spec.items():
        shape = list(feature.shape)
        length = 1
        for size in shape:
            length *= size
        expected[name] = (_KIND[feature.dtype], length)
    return expected


def check_record_files(record_files, feature_spec):
    """Checks every record of each file and the first record's features.

    Returns the number of records of each file.

    Raises:
      bert_tf.data_prep.tfrecord_files.TFRecordError: ``file: record N at byte B:
        reason`` for a damaged or truncated file or a first record that lacks
        a feature of `feature_spec` or has another type or length (records of
        another task, or written with another max_seq_length).
    """
    if isinstance(record_files, str):
        record_files = [record_files]
    expected = _expected_features(feature_spec)
    counts = []
    for path in record_files:
        counts.append(check_tfrecord_file(str(path), expected))
        logging.info("Checked %s: %d records", path, counts[-1])
    return counts


def trim_to_longest(batch, sequence_features=ENCODER_INPUT_NAMES):
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


def _parsed(dataset, feature_spec):
    return dataset.map(
        lambda r: parse_record(r, feature_spec), num_parallel_calls=tf.data.AUTOTUNE
    )


def ordered_dataset(
    record_files,
    feature_spec,
    batch_size,
    *,
    pad_to_longest=False,
    repeat=False,
    drop_remainder=False,
    max_batches=None,
    check=True,
):
    """Eval/predict batches in file order.

    Args:
      record_files: a path or a list of paths, read one after the other.
      feature_spec: {name: tf.io.FixedLenFeature} of the records.
      batch_size: examples per batch (the last one partial unless
        `drop_remainder`).
      pad_to_longest: cut each batch to its longest example.
      repeat: read the files again and again (then give `max_batches`).
      drop_remainder: drop a last partial batch.
      max_batches: take at most this many batches.
      check: run ``check_record_files`` first.
    """
    files = [record_files] if isinstance(record_files, str) else list(record_files)
    if check:
        check_record_files(files, feature_spec)
    dataset = tf.data.TFRecordDataset(files)
    if repeat:
        dataset = dataset.repeat()
    dataset = _parsed(dataset, feature_spec)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    if pad_to_longest:
        dataset = dataset.map(trim_to_longest)
    if max_batches is not None:
        dataset = dataset.take(max_batches)
    return dataset.prefetch(tf.data.AUTOTUNE)


def training_dataset_fn(
    record_files,
    feature_spec,
    batch_size,
    seed,
    shuffle_buffer,
    *,
    interleave_files=False,
    indexed_map=None,
    bucket_pool_batches=1,
    pad_to_longest=False,
    check=True,
):
    """`dataset_fn(input_context, skip_batches)` for the Trainer.

    Args:
      record_files: a path or a list of paths.
      feature_spec: {name: tf.io.FixedLenFeature} of the records.
      batch_size: global batch size (split over the replicas).
      seed: shuffle seed (the same batches on every run with this seed).
      shuffle_buffer: records in the shuffle buffer; the record count for a
        full shuffle each epoch.
      interleave_files: the original pre-training reader: the file list
        shuffled and repeated, ``min(4, n_files)`` files read at a time, then
        the records shuffled (instead of reading the files in order).
      indexed_map: optional ``fn(index, features) -> features`` applied to
        every parsed record, `index` counting records in the endless stream
        (new values each epoch, the same after a resume).
      bucket_pool_batches: when > 1, every run of that many batches is re-cut
        into batches of similar length (``sort_into_batches``).
      pad_to_longest: cut each batch to its longest example.
      check: run ``check_record_files`` first (once, here).
    """
    files = [record_files] if isinstance(record_files, str) else list(record_files)
    if check:
        check_record_files(files, feature_spec)

    def records():
        if interleave_files:
            dataset = tf.data.Dataset.from_tensor_slices(tf.constant(files))
            dataset = dataset.shuffle(
                len(files), seed=seed, reshuffle_each_iteration=True
            )
            dataset = dataset.repeat()
            dataset = dataset.interleave(
                tf.data.TFRecordDataset,
                cycle_length=min(4, len(files)),
                num_parallel_calls=tf.data.AUTOTUNE,
                deterministic=True,
            )
            dataset = dataset.shuffle(
                shuffle_buffer, seed=seed, reshuffle_each_iteration=True
            )
        else:
            dataset = tf.data.TFRecordDataset(files)
            dataset = dataset.shuffle(
                max(1, shuffle_buffer), seed=seed, reshuffle_each_iteration=True
            )
            dataset = dataset.repeat()
        return _parsed(dataset, feature_spec)

    return _stream_dataset_fn(
        records,
        batch_size,
        seed,
        indexed_map=indexed_map,
        bucket_pool_batches=bucket_pool_batches,
        pad_to_longest=pad_to_longest,
    )


def in_memory_training_dataset_fn(
    arrays,
    batch_size,
    seed,
    *,
    bucket_pool_batches=1,
    pad_to_longest=False,
    sequence_features=ENCODER_INPUT_NAMES,
):
    """`training_dataset_fn` for features held in memory instead of records.

    Args:
      arrays: {name: array [examples, ...]}, the features of every example.
      batch_size, seed, bucket_pool_batches, pad_to_longest: as
        `training_dataset_fn` (a full shuffle each epoch).
      sequence_features: the entries `pad_to_longest` cuts.
    """
    num_examples = len(next(iter(arrays.values())))

    def examples():
        dataset = tf.data.Dataset.from_tensor_slices(arrays)
        dataset = dataset.shuffle(
            num_examples, seed=seed, reshuffle_each_iteration=True
        )
        return dataset.repeat()

    return _stream_dataset_fn(
        examples,
        batch_size,
        seed,
        bucket_pool_batches=bucket_pool_batches,
        pad_to_longest=pad_to_longest,
        sequence_features=sequence_features,
    )


def _stream_dataset_fn(stream, batch_size, seed, **batching):
    """The Trainer's `dataset_fn(context, skip_batches)`: the batches
    (`_training_batches`, `batching` its options) of the endless, shuffled
    stream of examples that `stream()` makes for each input pipeline."""

    def dataset_fn(context, skip_batches):
        per_replica = context.get_per_replica_batch_size(batch_size)
        return _training_batches(
            stream(), per_replica, seed, context, skip_batches, **batching
        )

    return dataset_fn


def _training_batches(
    dataset,
    per_replica,
    seed,
    context,
    skip_batches,
    *,
    indexed_map=None,
    bucket_pool_batches=1,
    pad_to_longest=False,
    sequence_features=ENCODER_INPUT_NAMES,
):
    """One input pipeline's batches of an endless stream of examples."""
    if indexed_map is not None:
        dataset = dataset.enumerate().map(
            indexed_map, num_parallel_calls=tf.data.AUTOTUNE
        )
    if bucket_pool_batches > 1:
        dataset = dataset.batch(per_replica * bucket_pool_batches, drop_remainder=True)
        dataset = dataset.flat_map(
            lambda pool: sort_into_batches(pool, per_replica, seed)
        )
    else:
        dataset = dataset.batch(per_replica, drop_remainder=True)
    # Whole batches go to input pipelines in turn: the same batches as one.
    dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
    dataset = dataset.skip(skip_batches)
    if pad_to_longest:
        dataset = dataset.map(lambda batch: trim_to_longest(batch, sequence_features))
    return dataset.prefetch(tf.data.AUTOTUNE)
