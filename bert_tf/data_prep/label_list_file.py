"""``label_list.json``: the labels of a run's output_dir, in label-id order.

run_classifier.py and run_ner.py write it into their output_dir; runs that do
not train (``--do_eval`` / ``--do_predict`` alone) and export_saved_model.py
read it back. One JSON object, ``label_ids`` index its ``labels``:

    {"labels": ["0", "1"]}                                    a classifier
    {"labels": [], "regression": true}                        a regression (one output)
    {"labels": ["O", "B-PER", "I-PER"], "tag_scheme": "iob2"}  a tagger

Output dirs of older run_classifier versions hold a bare JSON list instead
(``[null]`` for regression); `read_label_list` reads both.

In memory, as everywhere in bert_tf, a regression's label list is ``[None]``
(`bert_tf.data_prep.classifier_features.is_regression_label_list`).
"""

import json
import os
from typing import NamedTuple

import tensorflow as tf
from absl import logging

from bert_tf.data_prep.classifier_features import is_regression_label_list
from bert_tf.errors import UserInputError

LABEL_LIST_FILE = "label_list.json"

__all__ = ["LABEL_LIST_FILE", "SavedLabelList", "read_label_list", "write_label_list"]


class SavedLabelList(NamedTuple):
    """What `read_label_list` found.

    Attributes:
        label_list: the labels in label-id order; ``[None]`` for a regression.
        tag_scheme: a tagger's tag scheme (e.g. ``"iob2"``), else None.
    """

    label_list: list
    tag_scheme: str | None = None

    @property
    def is_regression(self):
        return is_regression_label_list(self.label_list)


def write_label_list(output_dir, label_list, tag_scheme=None):
    """Logs the labels and writes ``output_dir/label_list.json``; returns its path.

    Args:
        output_dir: an existing directory.
        label_list: the labels in label-id order; ``[None]`` for a regression.
        tag_scheme: a tagger's tag scheme, saved beside its tags.
    """
    if is_regression_label_list(label_list):
        logging.info("Labels: none (regression, one output)")
        content = {"labels": [], "regression": True}
    else:
        logging.info(
            "Labels (%d, label_ids in this order): %s",
            len(label_list),
            ", ".join(repr(label) for label in label_list),
        )
        content = {"labels": list(label_list)}
    if tag_scheme is not None:
        content["tag_scheme"] = tag_scheme
    path = os.path.join(output_dir, LABEL_LIST_FILE)
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(json.dumps(content, ensure_ascii=False) + "\n")
    return path


def read_label_list(output_dir):
    """The `SavedLabelList` of ``output_dir/label_list.json``, or None without one.

    Raises:
        UserInputError: the file is not one `write_label_list` (or an older
            run_classifier) wrote.
    """
    path = os.path.join(output_dir, LABEL_LIST_FILE)
    if not tf.io.gfile.exists(path):
        return None
    with tf.io.gfile.GFile(path) as f:
        text = f.read()
    try:
        content = json.loads(text)
    except json.JSONDecodeError as e:
        raise UserInputError(f"{path}: not JSON ({e})") from None
    if isinstance(content, list):
        # An older run_classifier's bare list; [null] was a regression.
        return SavedLabelList(content)
    if not isinstance(content, dict) or not isinstance(content.get("labels"), list):
        raise UserInputError(f'{path}: expected a JSON object with a "labels" list')
    if content.get("regression"):
        return SavedLabelList([None], content.get("tag_scheme"))
    return SavedLabelList(content["labels"], content.get("tag_scheme"))
