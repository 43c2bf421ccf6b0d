"""Tests for bert_tf.data_prep.label_list_file: the one label_list.json format
run_classifier.py and run_ner.py write, and the older run_classifier list."""

import json

import pytest

from bert_tf.data_prep.label_list_file import LABEL_LIST_FILE
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.data_prep.label_list_file import write_label_list
from bert_tf.errors import UserInputError


def _file(directory):
    return json.loads((directory / LABEL_LIST_FILE).read_text(encoding="utf-8"))


def test_classification_round_trip(tmp_path):
    path = write_label_list(str(tmp_path), ["neg", "pos", "naïve"])
    assert path == str(tmp_path / "label_list.json")
    assert _file(tmp_path) == {"labels": ["neg", "pos", "naïve"]}
    saved = read_label_list(str(tmp_path))
    assert saved.label_list == ["neg", "pos", "naïve"]
    assert saved.tag_scheme is None and not saved.is_regression


def test_regression_round_trip(tmp_path):
    write_label_list(str(tmp_path), [None])
    assert _file(tmp_path) == {"labels": [], "regression": True}
    saved = read_label_list(str(tmp_path))
    assert saved.label_list == [None] and saved.is_regression


def test_tagging_round_trip(tmp_path):
    tags = ["O", "B-location", "I-location"]
    write_label_list(str(tmp_path), tags, tag_scheme="iob2")
    assert _file(tmp_path) == {"labels": tags, "tag_scheme": "iob2"}
    saved = read_label_list(str(tmp_path))
    assert saved.label_list == tags and saved.tag_scheme == "iob2"
    assert not saved.is_regression


@pytest.mark.parametrize(
    "old, expected, regression",
    [(["0", "1"], ["0", "1"], False), ([None], [None], True)],
)
def test_reads_the_older_run_classifier_list(tmp_path, old, expected, regression):
    (tmp_path / LABEL_LIST_FILE).write_text(json.dumps(old) + "\n")
    saved = read_label_list(str(tmp_path))
    assert saved.label_list == expected and saved.is_regression == regression
    assert saved.tag_scheme is None


def test_missing_file_is_none(tmp_path):
    assert read_label_list(str(tmp_path)) is None


@pytest.mark.parametrize(
    "text, message",
    [("{not json", "not JSON"), ('{"tags": ["O"]}', 'a "labels" list'), ("3", "")],
)
def test_bad_file_names_the_file(tmp_path, text, message):
    (tmp_path / LABEL_LIST_FILE).write_text(text)
    with pytest.raises(UserInputError, match=f"label_list.json: .*{message}"):
        read_label_list(str(tmp_path))
