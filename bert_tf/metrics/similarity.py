"""Pearson and Spearman correlation of predicted and gold similarities."""

import numpy as np


def average_ranks(values):
    """1-based ranks, ties sharing their average rank (scipy's rankdata)."""
    values = np.asarray(values, np.float64)
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    # Each run of equal values gets the mean of the positions it spans.
    starts = np.r_[True, sorted_values[1:] != sorted_values[:-1]]
    run = np.cumsum(starts) - 1
    first = np.flatnonzero(starts)
    last = np.r_[first[1:], len(values)] - 1
    ranks = np.empty(len(values))
    ranks[order] = (first[run] + last[run]) / 2.0 + 1.0
    return ranks


def pearson(x, y):
    x = np.asarray(x, np.float64) - np.mean(x)
    y = np.asarray(y, np.float64) - np.mean(y)
    return float((x * y).sum() / np.sqrt((x * x).sum() * (y * y).sum()))


def spearman(x, y):
    return pearson(average_ranks(x), average_ranks(y))


def similarity_metrics(predicted, gold, prefix="eval"):
    """`{prefix}_pearson_cosine`, `{prefix}_spearman_cosine` and the count.

    Example:

    ```python
    similarity_metrics(cosines, scores)["eval_spearman_cosine"]
    ```
    """
    return {
        f"{prefix}_pearson_cosine": pearson(predicted, gold),
        f"{prefix}_spearman_cosine": spearman(predicted, gold),
        f"{prefix}_pairs": len(gold),
    }
