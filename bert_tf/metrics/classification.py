"""GLUE classification/regression metrics in plain numpy.

The scores the GLUE leaderboard reports: accuracy, binary F1 (MRPC, QQP),
Matthews correlation (CoLA), Pearson and Spearman correlation (STS-B).
They agree with sklearn.metrics / scipy.stats (tested), without depending on
them. Conventions for degenerate inputs: an empty or zero-weight accuracy and
an F1 with no positives at all are 0.0 (as sklearn's zero_division default
yields); an undefined Matthews coefficient is 0.0 (as sklearn); a correlation of
a constant vector is nan (as scipy).
"""

import numpy as np

__all__ = [
    "accuracy",
    "f1_score",
    "glue_metrics",
    "matthews_corrcoef",
    "pearson",
    "spearman",
]


def _pair(labels, predictions):
    labels = np.asarray(labels).reshape(-1)
    predictions = np.asarray(predictions).reshape(-1)
    if labels.shape != predictions.shape:
        raise ValueError(
            f"labels and predictions differ in length: {labels.size} vs "
            f"{predictions.size}"
        )
    return labels, predictions


def accuracy(labels, predictions, weights=None):
    """(Weighted) fraction of predictions equal to the labels.

    Args:
      labels, predictions: 1-D arrays of class ids.
      weights: optional per-example weights, e.g. is_real_example (as the
        original's eval metric); 0.0 when they sum to 0.
    """
    labels, predictions = _pair(labels, predictions)
    correct = (labels == predictions).astype(np.float64)
    if weights is None:
        weights = np.ones_like(correct)
    else:
        weights = np.asarray(weights, np.float64).reshape(-1)
        if weights.shape != correct.shape:
            raise ValueError("weights must have one value per example")
    total = weights.sum()
    return float((correct * weights).sum() / total) if total else 0.0


def f1_score(labels, predictions, positive_label=1):
    """Binary F1 of the class `positive_label` (GLUE's F1 for MRPC and QQP).

    2·TP / (2·TP + FP + FN); 0.0 when there are no true or predicted positives.
    """
    labels, predictions = _pair(labels, predictions)
    true_pos = labels == positive_label
    pred_pos = predictions == positive_label
    tp = np.sum(true_pos & pred_pos)
    denominator = true_pos.sum() + pred_pos.sum()
    return float(2 * tp / denominator) if denominator else 0.0


def matthews_corrcoef(labels, predictions):
    """Matthews correlation coefficient (multiclass form; CoLA's metric).

    0.0 when undefined (all labels or all predictions in one class).
    """
    labels, predictions = _pair(labels, predictions)
    classes, encoded = np.unique(
        np.concatenate([labels, predictions]), return_inverse=True
    )
    n = labels.size
    confusion = np.zeros((classes.size, classes.size), np.float64)
    np.add.at(confusion, (encoded[:n], encoded[n:]), 1.0)
    true_counts = confusion.sum(axis=1)
    pred_counts = confusion.sum(axis=0)
    correct = np.trace(confusion)
    samples = confusion.sum()
    # Gorodkin's R_K; for two classes it is (TP·TN − FP·FN)/sqrt(...).
    cov_true_pred = correct * samples - np.dot(true_counts, pred_counts)
    cov_true = samples**2 - np.dot(true_counts, true_counts)
    cov_pred = samples**2 - np.dot(pred_counts, pred_counts)
    denominator = np.sqrt(cov_true * cov_pred)
    return float(cov_true_pred / denominator) if denominator else 0.0


def pearson(x, y):
    """Pearson correlation coefficient; nan if either input is constant."""
    x, y = _pair(x, y)
    x = x.astype(np.float64) - np.mean(x, dtype=np.float64)
    y = y.astype(np.float64) - np.mean(y, dtype=np.float64)
    denominator = np.sqrt(np.dot(x, x) * np.dot(y, y))
    if denominator == 0:
        return float("nan")
    # Clip rounding just outside [-1, 1].
    return float(np.clip(np.dot(x, y) / denominator, -1.0, 1.0))


def _average_ranks(values):
    """1-based ranks, ties sharing the mean of their positions (scipy's
    rankdata(method="average"))."""
    values = np.asarray(values)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Start of each run of equal values in sorted order.
    starts = np.flatnonzero(np.r_[True, sorted_values[1:] != sorted_values[:-1]])
    ends = np.r_[starts[1:], values.size]  # exclusive
    run_ranks = (starts + 1 + ends) / 2.0  # mean of positions start+1 .. end
    run_of_sorted = np.repeat(np.arange(starts.size), ends - starts)
    ranks = np.empty(values.size, np.float64)
    ranks[order] = run_ranks[run_of_sorted]
    return ranks


def spearman(x, y):
    """Spearman rank correlation (Pearson of average ranks); nan if constant."""
    x, y = _pair(x, y)
    return pearson(_average_ranks(x), _average_ranks(y))


# Task -> metric names, as the GLUE leaderboard reports them.
_TASK_METRICS = {
    "cola": ("mcc",),
    "mrpc": ("accuracy", "f1"),
    "qqp": ("accuracy", "f1"),
    "sts-b": ("pearson", "spearman"),
    "stsb": ("pearson", "spearman"),
}


def glue_metrics(task_name, labels, predictions):
    """The GLUE metrics of a task, as a dict.

    cola: {"mcc"}; mrpc, qqp: {"accuracy", "f1"} (positive class id 1);
    sts-b: {"pearson", "spearman"} (predictions are scores); every other task
    (mnli, mnli-mm, qnli, rte, wnli, sst-2, xnli, custom): {"accuracy"}.

    Args:
      task_name: case-insensitive task name.
      labels: gold label ids (scores for sts-b).
      predictions: predicted label ids (scores for sts-b).
    """
    functions = {
        "mcc": matthews_corrcoef,
        "accuracy": accuracy,
        "f1": f1_score,
        "pearson": pearson,
        "spearman": spearman,
    }
    names = _TASK_METRICS.get(task_name.lower(), ("accuracy",))
    return {name: functions[name](labels, predictions) for name in names}
