"""SQuAD JSON for the tests: a dataset of (context, qas) paragraphs, its
questions, and the file it is written to.

tests/test_squad.py (reading, metrics) and tests/test_squad_features.py
(features, write_predictions) both use them.
"""

import json


def write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f)
    return str(path)


def make_dataset(*paragraphs):
    """{"data": [...]} with one article holding (context, qas) paragraphs."""
    return {
        "version": "test",
        "data": [
            {
                "title": "t",
                "paragraphs": [{"context": c, "qas": qas} for c, qas in paragraphs],
            }
        ],
    }


def make_qa(qid, question, answers=(), is_impossible=None):
    qa = {
        "id": qid,
        "question": question,
        "answers": [{"text": t, "answer_start": s} for t, s in answers],
    }
    if is_impossible is not None:
        qa["is_impossible"] = is_impossible
    return qa
