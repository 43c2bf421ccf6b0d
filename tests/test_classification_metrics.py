"""Tests for bert_tf.metrics.classification.

Expected values are worked out by hand from small confusion matrices written out
below, and compared with sklearn / scipy when they are importable.
"""

import math

import numpy as np
import pytest

from bert_tf.metrics import classification as metrics


def _from_confusion(tp, fn, fp, tn):
    """Labels/predictions with the given binary confusion counts (positive = 1)."""
    labels = [1] * tp + [1] * fn + [0] * fp + [0] * tn
    predictions = [1] * tp + [0] * fn + [1] * fp + [0] * tn
    return np.array(labels), np.array(predictions)


# Binary case:        predicted 1   predicted 0
#   label 1               TP=6          FN=2
#   label 0               FP=1          TN=3
LABELS, PREDICTIONS = _from_confusion(tp=6, fn=2, fp=1, tn=3)


def test_binary_hand_computed():
    assert metrics.accuracy(LABELS, PREDICTIONS) == pytest.approx(9 / 12)
    # F1 = 2TP / (2TP + FP + FN) = 12 / 15.
    assert metrics.f1_score(LABELS, PREDICTIONS) == pytest.approx(12 / 15)
    # F1 of class 0: TP=3, FP=2, FN=1 -> 6 / 9.
    assert metrics.f1_score(LABELS, PREDICTIONS, positive_label=0) == pytest.approx(
        6 / 9
    )
    # MCC = (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))
    #     = (18 − 2) / sqrt(7·8·4·5) = 16 / sqrt(1120).
    assert metrics.matthews_corrcoef(LABELS, PREDICTIONS) == pytest.approx(
        16 / math.sqrt(1120)
    )


def test_weighted_accuracy_and_degenerate_cases():
    # Weight 0 on the padding examples (is_real_example = 0), as the original.
    assert metrics.accuracy([1, 0, 1, 1], [1, 1, 1, 0], weights=[1, 1, 1, 0]) == (
        pytest.approx(2 / 3)
    )
    assert metrics.accuracy([1], [0], weights=[0]) == 0.0
    assert metrics.accuracy([], []) == 0.0
    # No positives anywhere: F1 0.0 (sklearn's zero_division default).
    assert metrics.f1_score([0, 0], [0, 0]) == 0.0
    # MCC undefined (one predicted class): 0.0.
    assert metrics.matthews_corrcoef([0, 1, 1], [1, 1, 1]) == 0.0
    assert metrics.matthews_corrcoef([1, 1], [1, 1]) == 0.0
    assert metrics.matthews_corrcoef([0, 1, 0, 1], [0, 1, 0, 1]) == pytest.approx(1.0)
    assert metrics.matthews_corrcoef([0, 1, 0, 1], [1, 0, 1, 0]) == pytest.approx(-1.0)
    assert math.isnan(metrics.pearson([1, 1, 1], [1, 2, 3]))
    with pytest.raises(ValueError, match="differ in length"):
        metrics.accuracy([1, 2], [1])


def test_multiclass_mcc_hand_computed():
    # Confusion (rows = label, columns = prediction), classes 0, 1, 2:
    #   [[2, 1, 0],
    #    [0, 3, 1],
    #    [1, 0, 2]]
    # c = 7 correct, s = 10 samples, t = row sums (3, 4, 3), p = column sums (3, 4, 3)
    # MCC = (c·s − t·p) / sqrt((s² − p·p)(s² − t·t)) = (70 − 34) / (100 − 34) = 36 / 66.
    confusion = [[2, 1, 0], [0, 3, 1], [1, 0, 2]]
    labels, predictions = [], []
    for label, row in enumerate(confusion):
        for prediction, count in enumerate(row):
            labels += [label] * count
            predictions += [prediction] * count
    assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(36 / 66)
    assert metrics.accuracy(labels, predictions) == pytest.approx(0.7)


def test_correlations_hand_computed():
    x = [1.0, 2.0, 3.0, 4.0]
    y = [2.0, 1.0, 4.0, 3.0]
    # Centred: x' = (−1.5, −0.5, 0.5, 1.5), y' = (−0.5, −1.5, 1.5, 0.5);
    # x'·y' = 0.75 + 0.75 + 0.75 + 0.75 = 3; |x'|² = |y'|² = 5 -> r = 0.6.
    assert metrics.pearson(x, y) == pytest.approx(0.6)
    assert metrics.spearman(x, y) == pytest.approx(0.6)
    # Ties get average ranks: [10, 20, 20, 30] -> [1, 2.5, 2.5, 4].
    np.testing.assert_allclose(
        metrics._average_ranks([10, 20, 20, 30]), [1.0, 2.5, 2.5, 4.0]
    )
    np.testing.assert_allclose(
        metrics._average_ranks([3, 1, 3, 3, 0]), [4.0, 2.0, 4.0, 4.0, 1.0]
    )
    # Monotone but non-linear: Spearman 1, Pearson below 1.
    assert metrics.spearman([1, 2, 3, 4], [1, 4, 9, 100]) == pytest.approx(1.0)
    assert metrics.pearson([1, 2, 3, 4], [1, 4, 9, 100]) < 0.9


def test_glue_metrics_names():
    labels, predictions = LABELS, PREDICTIONS
    assert metrics.glue_metrics("CoLA", labels, predictions) == {
        "mcc": pytest.approx(16 / math.sqrt(1120))
    }
    for task in ("mrpc", "qqp"):
        assert metrics.glue_metrics(task, labels, predictions) == {
            "accuracy": pytest.approx(0.75),
            "f1": pytest.approx(0.8),
        }
    for task in ("mnli", "mnli-mm", "qnli", "rte", "wnli", "sst-2", "xnli", "custom"):
        assert metrics.glue_metrics(task, labels, predictions) == {
            "accuracy": pytest.approx(0.75)
        }
    result = metrics.glue_metrics("sts-b", [1.0, 2.0, 3.0, 4.0], [2.0, 1.0, 4.0, 3.0])
    assert result == {"pearson": pytest.approx(0.6), "spearman": pytest.approx(0.6)}


def test_against_sklearn_and_scipy():
    sk = pytest.importorskip("sklearn.metrics")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = int(rng.integers(2, 60))
        labels = rng.integers(0, 2, n)
        predictions = np.where(rng.random(n) < 0.7, labels, 1 - labels)
        assert metrics.accuracy(labels, predictions) == pytest.approx(
            sk.accuracy_score(labels, predictions)
        )
        assert metrics.f1_score(labels, predictions) == pytest.approx(
            sk.f1_score(labels, predictions, zero_division=0)
        )
        assert metrics.matthews_corrcoef(labels, predictions) == pytest.approx(
            sk.matthews_corrcoef(labels, predictions)
        )
        three = rng.integers(0, 3, n)
        assert metrics.matthews_corrcoef(labels, three) == pytest.approx(
            sk.matthews_corrcoef(labels, three)
        )
        # Scores on a coarse grid so that ties occur (as in STS-B).
        x = rng.integers(0, 6, n) / 5.0
        y = x + rng.normal(0, 0.3, n).round(1)
        if np.ptp(x) == 0 or np.ptp(y) == 0:
            continue
        assert metrics.pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0])
        assert metrics.spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0])
    weights = rng.integers(0, 2, 50)
    labels, predictions = rng.integers(0, 3, 50), rng.integers(0, 3, 50)
    assert metrics.accuracy(labels, predictions, weights) == pytest.approx(
        sk.accuracy_score(labels, predictions, sample_weight=weights)
    )
