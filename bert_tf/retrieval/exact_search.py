"""Exact top-k search in the TensorFlow graph: the SavedModel's search and `ExactStore`'s."""

import tensorflow as tf

__all__ = ["exact_top_k", "similarity_scores"]


def exact_top_k(queries, corpus, top_k, metric="IP"):
    """Scores every corpus row against every query and keeps the best `top_k`.

    Args:
      queries: float tensor [batch, dimension].
      corpus: float tensor [rows, dimension] (float32 or bfloat16; scores are
        computed in float32).
      top_k: int (or int scalar tensor), at most the number of rows.
      metric: ``"IP"`` (inner product), ``"COSINE"`` or ``"L2"`` (minus the
        squared distance), as in `bert_tf.retrieval.vector_store`.

    Returns:
      (scores [batch, top_k] float32, row indices [batch, top_k] int32), best
      first; equal scores keep the lower row first.

    Example:

    >>> scores, rows = exact_top_k(tf.eye(2), tf.constant([[0.0, 1.0], [2.0, 0.0]]), 1)
    >>> rows.numpy().tolist()
    [[1], [0]]
    """
    return tf.math.top_k(
        similarity_scores(queries, corpus, metric), k=top_k, sorted=True
    )


def similarity_scores(queries, corpus, metric="IP"):
    """float32 [batch, rows] scores, higher is better (see `exact_top_k`)."""
    queries = tf.cast(queries, tf.float32)
    corpus = tf.cast(corpus, tf.float32)
    if metric == "COSINE":
        queries = tf.math.l2_normalize(queries, axis=-1)
        corpus = tf.math.l2_normalize(corpus, axis=-1)
    scores = tf.matmul(queries, corpus, transpose_b=True)
    if metric == "L2":
        return (
            2.0 * scores
            - tf.reduce_sum(tf.square(queries), axis=-1, keepdims=True)
            - tf.reduce_sum(tf.square(corpus), axis=-1)[tf.newaxis, :]
        )
    if metric not in ("IP", "COSINE"):
        raise ValueError(f"metric {metric!r}: expected IP, COSINE or L2")
    return scores
