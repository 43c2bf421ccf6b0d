"""SQuAD from TFDS, written back as SQuAD JSON for the file reader."""

import collections
import json
import os

from absl import logging

from bert_tf.data_prep.tfds_input.builders import as_str
from bert_tf.data_prep.tfds_input.builders import check_split
from bert_tf.data_prep.tfds_input.builders import check_supported
from bert_tf.data_prep.tfds_input.builders import config_key
from bert_tf.data_prep.tfds_input.builders import load_builder
from bert_tf.data_prep.tfds_input.builders import rows

# TFDS SQuAD config -> whether it is SQuAD 2.0 (impossible questions).
SQUAD_CONFIGS = {"squad/v1.1": False, "squad/v2.0": True}
SQUAD_SPLITS = ("train", "validation")


def squad_json(tfds_name, split, data_dir=None, download=True):
    """A TFDS SQuAD split as a SQuAD JSON dict (`{"version", "data"}`).

    Questions are grouped into articles by title and into paragraphs by
    context, in the order TFDS stores them.
    """
    check_supported(tfds_name, SQUAD_CONFIGS)
    version_2 = SQUAD_CONFIGS[config_key(tfds_name)]
    builder = load_builder(tfds_name, data_dir, download)
    check_split(builder, tfds_name, split, "split", "tfds_split_*")
    articles = collections.OrderedDict()
    num_questions = 0
    for row in rows(builder, split):
        title = as_str(row["title"])
        paragraphs = articles.setdefault(title, collections.OrderedDict())
        qas = paragraphs.setdefault(as_str(row["context"]), [])
        qa = {
            "id": as_str(row["id"]),
            "question": as_str(row["question"]),
            "answers": _answers(row["answers"]),
        }
        if version_2:
            qa["is_impossible"] = bool(row["is_impossible"])
            qa["plausible_answers"] = _answers(row["plausible_answers"])
        qas.append(qa)
        num_questions += 1
    logging.info(
        "TFDS %s[%s]: %d questions in %d articles",
        tfds_name,
        split,
        num_questions,
        len(articles),
    )
    return {
        "version": "v2.0" if version_2 else "1.1",
        "data": [
            {
                "title": title,
                "paragraphs": [
                    {"context": context, "qas": qas}
                    for context, qas in paragraphs.items()
                ],
            }
            for title, paragraphs in articles.items()
        ],
    }


def _answers(answers):
    return [
        {"answer_start": int(start), "text": as_str(text)}
        for text, start in zip(answers["text"], answers["answer_start"], strict=True)
    ]


def write_squad_json(tfds_name, split, path, data_dir=None, download=True):
    """Writes a TFDS SQuAD split to `path` as SQuAD JSON; returns `path`."""
    dataset = squad_json(tfds_name, split, data_dir, download)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dataset, f, ensure_ascii=False)
    return path
