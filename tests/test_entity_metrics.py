"""Entity F1 as conlleval scores it: hand-checked cases and seqeval 1.2.2.

seqeval (default mode, which follows conlleval) is a test-only reference:
`pip install "setuptools_scm<8" wheel && pip install --no-build-isolation
seqeval`. The hand-written cases below run without it.
"""

import os
import random

import pytest

from bert_tf.data_prep import conll
from bert_tf.metrics.entity import entity_scores
from bert_tf.metrics.entity import get_entities

# (tags, entities (type, first, last)) worked out by hand from conlleval's rules.
ENTITY_CASES = [
    (["B-PER", "I-PER", "O"], [("PER", 0, 1)]),
    (["I-PER", "I-PER", "O"], [("PER", 0, 1)]),  # I- starts an entity
    (["O", "I-LOC", "B-LOC"], [("LOC", 1, 1), ("LOC", 2, 2)]),
    (["B-PER", "I-LOC"], [("PER", 0, 0), ("LOC", 1, 1)]),  # type change
    (["I-A", "I-A", "B-A", "I-A"], [("A", 0, 1), ("A", 2, 3)]),  # IOB1
    (["S-A", "B-B", "I-B", "E-B", "S-B"], [("A", 0, 0), ("B", 1, 3), ("B", 4, 4)]),
    (["B-A", "E-A", "E-A"], [("A", 0, 1), ("A", 2, 2)]),  # E after E starts
    (["O", "E-A", "O"], [("A", 1, 1)]),
    (["B-creative-work", "I-creative-work"], [("creative-work", 0, 1)]),
    (["O", "O"], []),
    ([], []),
]


@pytest.mark.parametrize("tags, expected", ENTITY_CASES)
def test_entities_by_hand(tags, expected):
    assert get_entities(tags) == expected


def test_scores_by_hand():
    gold = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "O"]]
    predicted = [["B-PER", "I-PER", "O", "B-PER"], ["I-ORG", "B-ORG"]]
    # Correct: PER(0-1), ORG(0); predicted 4 entities, gold 3.
    scores = entity_scores(gold, predicted)
    assert scores["precision"] == pytest.approx(2 / 4)
    assert scores["recall"] == pytest.approx(2 / 3)
    assert scores["f1"] == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert scores["accuracy"] == pytest.approx(3 / 6)
    assert scores["f1_PER"] == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert scores["f1_LOC"] == 0.0 and scores["support_LOC"] == 1
    assert scores["f1_ORG"] == pytest.approx(2 / 3)  # ORG(0) right, ORG(1) spurious
    # No entity crosses a sentence boundary.
    assert entity_scores([["B-A"], ["I-A"]], [["B-A"], ["I-A"]])["f1"] == 1.0
    with pytest.raises(ValueError, match="sentence 0"):
        entity_scores([["O"]], [["O", "O"]])


@pytest.fixture(scope="module")
def seqeval():
    metrics = pytest.importorskip(
        "seqeval.metrics",
        reason="seqeval (test reference) is not installed: pip install "
        '"setuptools_scm<8" wheel && pip install --no-build-isolation seqeval',
    )
    return metrics


def _check_against_seqeval(seqeval, gold, predicted):
    ours = entity_scores(gold, predicted)
    assert ours["precision"] == pytest.approx(seqeval.precision_score(gold, predicted))
    assert ours["recall"] == pytest.approx(seqeval.recall_score(gold, predicted))
    assert ours["f1"] == pytest.approx(seqeval.f1_score(gold, predicted))
    assert ours["accuracy"] == pytest.approx(seqeval.accuracy_score(gold, predicted))
    report = seqeval.classification_report(
        gold, predicted, output_dict=True, zero_division=0
    )
    for name, row in report.items():
        if name.endswith(" avg"):
            continue
        assert ours[f"f1_{name}"] == pytest.approx(row["f1-score"]), name
        assert ours[f"support_{name}"] == row["support"], name


def test_edge_cases_equal_seqeval(seqeval):
    from seqeval.metrics.sequence_labeling import get_entities as seqeval_entities

    for tags, expected in ENTITY_CASES:
        assert sorted(seqeval_entities(tags)) == sorted(expected)
    gold = [tags for tags, _ in ENTITY_CASES if tags]
    predicted = [list(reversed(tags)) for tags in gold]
    _check_against_seqeval(seqeval, gold, predicted)


def test_random_ill_formed_sequences_equal_seqeval(seqeval):
    rng = random.Random(7)
    tags = ["O", "B-A", "I-A", "E-A", "S-A", "B-B", "I-B", "E-B", "S-B", "I-C"]
    gold, predicted = [], []
    for _ in range(400):
        length = rng.randint(1, 15)
        gold.append([rng.choice(tags) for _ in range(length)])
        predicted.append([rng.choice(tags) for _ in range(length)])
    for sentence in gold + predicted:
        assert sorted(get_entities(sentence)) == sorted(
            seqeval.sequence_labeling.get_entities(sentence)
        )
    _check_against_seqeval(seqeval, gold, predicted)


def test_real_wnut_predictions_equal_seqeval(seqeval, shared_data):
    """WNUT-17 gold against a degraded copy of itself: the errors a tagger
    makes (missed, extended, retyped, ill-formed I- starts, spurious)."""
    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    gold = [s.tags for s in conll.read_conll(path, "iob2")]
    rng = random.Random(0)
    types = sorted({t[2:] for s in gold for t in s if t != "O"})
    predicted = []
    for sentence in gold:
        row = list(sentence)
        for i, tag in enumerate(row):
            roll = rng.random()
            if roll < 0.05:
                row[i] = "O"
            elif roll < 0.08:
                row[i] = f"I-{rng.choice(types)}"
            elif roll < 0.10 and tag != "O":
                row[i] = f"{tag[0]}-{rng.choice(types)}"
            elif roll < 0.12:
                row[i] = f"B-{rng.choice(types)}"
        predicted.append(row)
    _check_against_seqeval(seqeval, gold, predicted)
    scores = entity_scores(gold, predicted)
    assert 0.3 < scores["f1"] < 0.9  # a realistic, not a degenerate, case
