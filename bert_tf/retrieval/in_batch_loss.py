"""The dual encoder's loss: in-batch negatives (MultipleNegativesRankingLoss) with a candidate mask."""

import tensorflow as tf

__all__ = ["in_batch_mask", "in_batch_negatives_loss"]


def in_batch_mask(relevant_docs, column_docs):
    """bool [queries, columns]: which passages are a query's candidates.

    A column is masked out for a query (not used as a negative) when its
    document is relevant to the query, unless it is the query's own
    positive (column = row); padding columns (doc -1) are masked for all.

    Args:
      relevant_docs: int [queries, R], the documents relevant to each query
        (-1 pads).
      column_docs: int [columns], each column's document (-1: padding); the
        first `queries` columns are the queries' positives.
    """
    relevant = tf.reduce_any(
        tf.equal(relevant_docs[:, None, :], column_docs[None, :, None])
        & (column_docs[None, :, None] >= 0),
        axis=-1,
    )
    own = tf.cast(
        tf.one_hot(tf.range(tf.shape(relevant_docs)[0]), tf.shape(column_docs)[0]),
        tf.bool,
    )
    return (own | ~relevant) & (column_docs >= 0)[None, :]


def in_batch_negatives_loss(queries, passages, mask, scale):
    """MultipleNegativesRankingLoss with a candidate mask: the mean
    cross-entropy of `scale` x cosine(query i, every passage), target column i.

    Args:
      queries: float [Q, dim]; passages: float [C, dim], C >= Q, the first Q
        the queries' positives; mask: bool [Q, C] (`in_batch_mask`).
    """
    q = tf.math.l2_normalize(tf.cast(queries, tf.float32), axis=-1)
    p = tf.math.l2_normalize(tf.cast(passages, tf.float32), axis=-1)
    logits = scale * tf.matmul(q, p, transpose_b=True)
    logits = tf.where(mask, logits, tf.constant(-1e9, logits.dtype))
    labels = tf.range(tf.shape(q)[0])
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    )
