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


def _batch(embeddings):
    array = np.asarray(embeddings, np.float32)
    return array[None, :] if array.ndim == 1 else array


def similarity_matrix(embeddings_a, embeddings_b, function="cosine"):
    """[len(a), len(b)] scores of every pair of rows, as sentence-transformers'
    `similarity`: "cosine", "dot", "euclidean" or "manhattan" (the last two
    are negated distances, so higher is always closer).

    Example:
    >>> similarity_matrix([[1, 0]], [[1, 0], [0, 1]])
    array([[1., 0.]], dtype=float32)
    """
    a, b = _batch(embeddings_a), _batch(embeddings_b)
    if function == "cosine":
        a = a / np.maximum(np.linalg.norm(a, axis=1, keepdims=True), 1e-12)
        b = b / np.maximum(np.linalg.norm(b, axis=1, keepdims=True), 1e-12)
        return a @ b.T
    if function == "dot":
        return a @ b.T
    difference = a[:, None, :] - b[None, :, :]
    if function == "euclidean":
        return -np.sqrt(np.sum(difference * difference, axis=-1))
    if function == "manhattan":
        return -np.sum(np.abs(difference), axis=-1)
    raise ValueError(
        f"similarity function {function!r}: expected cosine, dot, euclidean or "
        "manhattan"
    )


def similarity_pairwise(embeddings_a, embeddings_b, function="cosine"):
    """[n] scores of row i of `embeddings_a` with row i of `embeddings_b`
    (`similarity_matrix`'s functions)."""
    a, b = _batch(embeddings_a), _batch(embeddings_b)
    if a.shape != b.shape:
        raise ValueError(
            f"similarity_pairwise needs equal shapes, got {a.shape} and {b.shape}"
        )
    return np.array(
        [similarity_matrix(x, y, function)[0, 0] for x, y in zip(a, b, strict=True)],
        np.float32,
    )
