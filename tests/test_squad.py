"""Tests for bert_tf.data_prep.squad and bert_tf.metrics.squad: reading SQuAD
files, the oracle on the real dev set, and the official metrics.

The oracle test runs on the real SQuAD v1.1 dev set and the uncased vocabulary
from $BERT_TF_DATA (skipped without it) and checks the figures measured from
the original run_squad.py. Everything else runs on small files written here,
where the examples, errors and metrics were worked out by hand from the
original's rules and the official evaluation scripts. Features (windows,
max context, training targets) and write_predictions are
tests/test_squad_features.py.
"""

import json
import os

import pytest
from squad_files import make_dataset
from squad_files import make_qa
from squad_files import write_json

from bert_tf.data_prep import squad
from bert_tf.errors import UserInputError
from bert_tf.metrics import squad as post
from bert_tf.text import tokenization

# ---------------------------------------------------------------------------
# Oracle on the real dev set (docs/original_bert.md §9)


@pytest.mark.slow
def test_oracle_dev_v11_matches_original(shared_data):
    """Gold-placed logits give the original's 10,833 features and EM/F1."""
    dev_file = os.path.join(shared_data, "squad", "dev-v1.1.json")
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    # Training semantics place each answer; dev questions have up to several
    # gold answers, the first one is used (as in the original's measurement).
    examples = squad.read_squad_examples(dev_file, True, first_answer_only=True)
    assert len(examples) == 10570
    assert examples.num_skipped_answers == 0
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
    features = []
    count = squad.convert_examples_to_features(
        examples, tokenizer, 384, 128, 64, True, features.append
    )
    assert count == len(features) == 10833
    assert features[0].unique_id == squad.FIRST_UNIQUE_ID
    assert features[-1].unique_id == squad.FIRST_UNIQUE_ID + 10832

    results = []
    for feature in features:
        start_logits = [0.0] * 384
        end_logits = [0.0] * 384
        if feature.start_position:  # 0 = answer not in this window.
            start_logits[feature.start_position] = 10.0
            end_logits[feature.end_position] = 10.0
        results.append(post.RawResult(feature.unique_id, start_logits, end_logits))
    predictions = post.write_predictions(
        examples, features, results, 20, 30, True, None, None, None
    )
    with open(dev_file, encoding="utf-8") as f:
        dataset = json.load(f)
    metrics = post.evaluate_v1(dataset, predictions)
    print(f"oracle dev-v1.1: {len(features)} features, {metrics}")
    assert metrics["exact_match"] == pytest.approx(99.688, abs=0.05)
    assert metrics["f1"] == pytest.approx(99.750, abs=0.05)


# ---------------------------------------------------------------------------
# Reading


def test_read_examples_positions_and_whitespace(tmp_path):
    context = "The\u202fauthor  (1895-1943).\twrote\n alpha"
    start = context.index("1895")
    path = write_json(
        tmp_path / "a.json",
        make_dataset((context, [make_qa("q1", "when", [("1895", start)])])),
    )
    (example,) = squad.read_squad_examples(path, is_training=True)
    # U+202F, tab and newline split words; runs of whitespace count once.
    assert example.doc_tokens == ["The", "author", "(1895-1943).", "wrote", "alpha"]
    assert (example.start_position, example.end_position) == (2, 2)
    assert example.orig_answer_text == "1895"
    # Prediction mode does not read answers (here even a missing field).
    data = make_dataset((context, [{"id": "q1", "question": "when"}]))
    (example,) = squad.read_squad_examples(
        write_json(tmp_path / "b.json", data), is_training=False
    )
    assert example.start_position is None and example.orig_answer_text is None


def test_read_skips_unfound_answers_and_counts_them(tmp_path, caplog):
    context = "alpha beta gamma"
    path = write_json(
        tmp_path / "a.json",
        make_dataset(
            (
                context,
                [
                    make_qa("ok", "what", [("beta", 6)]),
                    # The text at offset 6 is "beta", not "zeta": skipped.
                    make_qa("bad", "what", [("zeta", 6)]),
                ],
            )
        ),
    )
    examples = squad.read_squad_examples(path, is_training=True)
    assert [e.qas_id for e in examples] == ["ok"]
    assert examples.num_skipped_answers == 1
    assert examples.skipped_answers == ["bad"]


def test_read_training_answer_count(tmp_path):
    context = "alpha beta"
    two = make_qa("q7", "what", [("alpha", 0), ("beta", 6)])
    path = write_json(tmp_path / "a.json", make_dataset((context, [two])))
    with pytest.raises(ValueError, match=r"a\.json.*'q7'.*exactly 1 answer"):
        squad.read_squad_examples(path, is_training=True)
    (example,) = squad.read_squad_examples(path, True, first_answer_only=True)
    assert example.orig_answer_text == "alpha"
    # Impossible questions (v2) need no answer.
    path = write_json(
        tmp_path / "b.json",
        make_dataset((context, [make_qa("n1", "what", [], is_impossible=True)])),
    )
    (example,) = squad.read_squad_examples(path, True, version_2_with_negative=True)
    assert example.is_impossible
    assert (example.start_position, example.end_position) == (-1, -1)
    assert example.orig_answer_text == ""


def test_read_errors_name_file_and_question(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [\n  {"paragraphs": [}\n]}', encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json:2:\d+: malformed JSON"):
        squad.read_squad_examples(str(bad), is_training=False)

    no_question = make_dataset(("alpha", [{"id": "q42", "answers": []}]))
    path = write_json(tmp_path / "nq.json", no_question)
    with pytest.raises(ValueError, match=r"nq\.json: question id 'q42'.*'question'"):
        squad.read_squad_examples(path, is_training=False)

    no_answers = make_dataset(("alpha", [{"id": "q43", "question": "what"}]))
    path = write_json(tmp_path / "na.json", no_answers)
    with pytest.raises(ValueError, match=r"na\.json: question id 'q43'.*'answers'"):
        squad.read_squad_examples(path, is_training=True)

    no_id = make_dataset(("alpha", [{"question": "what"}]))
    path = write_json(tmp_path / "ni.json", no_id)
    with pytest.raises(
        ValueError, match=r"ni\.json: data\[0\]\.paragraphs\[0\]\.qas\[0\].*'id'"
    ):
        squad.read_squad_examples(path, is_training=False)

    no_context = {"data": [{"paragraphs": [{"qas": []}]}]}
    path = write_json(tmp_path / "nc.json", no_context)
    with pytest.raises(ValueError, match=r"nc\.json: data\[0\]\.paragraphs\[0\]"):
        squad.read_squad_examples(path, is_training=False)

    outside = make_dataset(("alpha", [make_qa("q44", "what", [("alpha", 3)])]))
    path = write_json(tmp_path / "out.json", outside)
    with pytest.raises(ValueError, match=r"out\.json: question id 'q44'.*outside"):
        squad.read_squad_examples(path, is_training=True)


def test_a_repeated_question_id_names_both_places(tmp_path):
    # The original keys predictions by id: the second question's prediction
    # replaced the first's (79 written for 80 questions).
    data = make_dataset(
        ("alpha beta", [make_qa("q1", "what", [("alpha", 0)])]),
        ("gamma delta", [make_qa("q2", "what", [("gamma", 0)]), make_qa("q1", "who")]),
    )
    path = write_json(tmp_path / "dup.json", data)
    for is_training in (False, True):
        with pytest.raises(UserInputError) as error:
            squad.read_squad_examples(path, is_training=is_training)
        assert str(error.value) == (
            f"{path}: question id 'q1' appears twice: "
            "data[0].paragraphs[0].qas[0] and data[0].paragraphs[1].qas[1]"
        )


def test_squad_version_must_match_the_flag(tmp_path):
    v2 = make_dataset(
        (
            "alpha beta",
            [
                make_qa("a1", "what", [("alpha", 0)], is_impossible=False),
                make_qa("n1", "what", [], is_impossible=True),
            ],
        )
    )
    v2_path = write_json(tmp_path / "v2.json", v2)
    v1_path = write_json(
        tmp_path / "v1.json",
        make_dataset(("alpha", [make_qa("a1", "what", [("alpha", 0)])])),
    )
    for is_training in (False, True):
        with pytest.raises(
            UserInputError,
            match=r"v2\.json: question id 'n1' has no answer.*SQuAD 2\.0.*"
            r"pass version_2_with_negative=True",
        ):
            squad.read_squad_examples(v2_path, is_training)
        with pytest.raises(
            UserInputError,
            match=r"v1\.json: .*SQuAD 1\.1 file; pass version_2_with_negative=False",
        ):
            squad.read_squad_examples(
                v1_path, is_training, version_2_with_negative=True
            )
        # Matched, both read.
        assert len(squad.read_squad_examples(v2_path, is_training, True)) == 2
        assert len(squad.read_squad_examples(v1_path, is_training)) == 1
    # Unlabelled questions (nothing to score) are fine either way.
    unlabelled = make_dataset(("alpha", [{"id": "u1", "question": "what"}]))
    path = write_json(tmp_path / "u.json", unlabelled)
    assert (
        len(squad.read_squad_examples(path, False, version_2_with_negative=True)) == 1
    )


def test_bytes_that_are_not_utf8_name_the_file_and_line(tmp_path):
    path = tmp_path / "latin1.json"
    data = make_dataset(("café au lait", [make_qa("q1", "what")]))
    text = json.dumps(data, indent=1, ensure_ascii=False)
    path.write_bytes(text.encode("latin-1"))
    line = text[: text.index("café")].count("\n") + 1
    with pytest.raises(UserInputError, match=rf"latin1\.json:{line}: not UTF-8"):
        squad.read_squad_examples(str(path), is_training=False)


def test_several_answers_name_the_train_answer_flag(tmp_path):
    two = make_qa("q7", "what", [("alpha", 0), ("beta", 6)])
    path = write_json(tmp_path / "a.json", make_dataset(("alpha beta", [two])))
    with pytest.raises(UserInputError, match=r"--train_answer=first"):
        squad.read_squad_examples(path, is_training=True)


# ---------------------------------------------------------------------------
# Official metrics


def test_normalize_answer():
    assert post.normalize_answer("The  Cat, (an) Apple!") == "cat apple"
    assert post.normalize_answer("theater") == "theater"
    assert post.normalize_answer("A") == ""


def test_evaluate_v1():
    dataset = make_dataset(
        (
            "ctx",
            [
                make_qa("q1", "?", [("The Cat", 0), ("a dog", 0)]),
                make_qa("q2", "?", [("big red house", 0)]),
                make_qa("q3", "?", [("x", 0)]),
            ],
        )
    )
    # q1: "cat!" matches the first gold after normalisation; q2: 2 of 3
    # tokens on each side (F1 2/3); q3 unanswered scores 0.
    preds = {"q1": "cat!", "q2": "red house now"}
    metrics = post.evaluate_v1(dataset, preds)
    assert metrics["exact_match"] == pytest.approx(100 / 3)
    assert metrics["f1"] == pytest.approx(100 * (1 + 2 / 3) / 3)
    assert post.evaluate_v1(dataset["data"], preds) == metrics


def _v2_dataset():
    return make_dataset(
        (
            "ctx",
            [
                make_qa("q1", "?", [("Paris", 0)]),
                make_qa("q2", "?", []),
                make_qa("q3", "?", []),
                make_qa("q4", "?", [("the big dog", 0)]),
            ],
        )
    )


_V2_PREDS = {"q1": "Paris", "q2": "", "q3": "London", "q4": "big cat"}
_V2_NA = {"q1": 0.1, "q2": 0.9, "q3": 0.2, "q4": 0.5}


def test_evaluate_v2_breakdown():
    metrics = post.evaluate_v2(_v2_dataset(), _V2_PREDS)
    # exact 1, 1, 0, 0; f1 1, 1, 0, 0.5 (big/dog vs big/cat).
    assert metrics == {
        "exact": 50.0,
        "f1": 62.5,
        "total": 4,
        "HasAns_exact": 50.0,
        "HasAns_f1": 75.0,
        "HasAns_total": 2,
        "NoAns_exact": 50.0,
        "NoAns_f1": 50.0,
        "NoAns_total": 2,
    }
    # Gold answers that normalise to nothing count as no-answer.
    dataset = make_dataset(("ctx", [make_qa("q", "?", [("the", 0)])]))
    assert post.evaluate_v2(dataset, {"q": ""})["exact"] == 100.0


def test_evaluate_v2_thresholds():
    metrics = post.evaluate_v2(_v2_dataset(), _V2_PREDS, na_probs=_V2_NA)
    # By na_prob: q1 (+1 -> 3, best), q3 (-1), q4 (+0 / +0.5), q2 (0); the
    # start is the 2 no-answer questions.
    assert metrics["exact"] == 50.0
    assert metrics["best_exact"] == 75.0
    assert metrics["best_exact_thresh"] == 0.1
    assert metrics["best_f1"] == 75.0
    assert metrics["best_f1_thresh"] == 0.1
    # na_prob above the threshold: scored as a no-answer prediction.
    metrics = post.evaluate_v2(
        _v2_dataset(), _V2_PREDS, na_probs=_V2_NA, na_prob_thresh=0.3
    )
    assert (metrics["exact"], metrics["f1"]) == (50.0, 50.0)
    assert (metrics["HasAns_f1"], metrics["NoAns_exact"]) == (50.0, 50.0)
