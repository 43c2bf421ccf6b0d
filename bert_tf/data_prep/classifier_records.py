"""The classifier TFRecord files of ``run_classifier.py`` (train/eval/predict.tf_record).

``label_ids`` index the label list run_classifier.py saves as ``label_list.json``
(`bert_tf.data_prep.label_list_file`).

Each record is a ``tf.train.Example`` with (the original's schema):

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
regression task. ``bert_tf.data_prep.record_pipeline`` reads them (int64 features become
int32, as the original cast them; the regression label stays float32).
"""

import collections

import tensorflow as tf

from bert_tf.data_prep import glue

__all__ = [
    "feature_spec",
    "file_based_convert_examples_to_features",
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
    # deterministic: map entries in sorted key order. Without it their order
    # follows a per-process hash seed, so the same run wrote other bytes each time.
    return example.SerializeToString(deterministic=True)


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
    features = glue.convert_examples_to_features(
        examples, label_list, max_seq_length, tokenizer
    )
    return write_classifier_records(
        features, output_file, glue.is_regression_label_list(label_list)
    )
