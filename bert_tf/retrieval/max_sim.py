"""MaxSim (late interaction, ColBERT): per-token vectors to one score.

A query's score against a document is the sum over the query's scored tokens
of each one's largest dot product with the document's scored tokens, as
sentence-transformers' `MultiVectorEncoder.similarity` computes it. The
functions here are TensorFlow ops on padded batches with masks, so a
SavedModel re-ranking stage can call them in its graph; `pad_token_vectors`
turns `encode`'s ragged list into such a batch.
"""

import numpy as np
import tensorflow as tf

# The score of a document without a scored token (sentence-transformers'
# sentinel): below every real score, finite so sums and losses stay finite.
EMPTY_DOCUMENT_SCORE = -1e9


def _token_maxima(similarities, document_mask):
    """Each query token's best document token: `similarities` [..., s, t]
    with masked document tokens left out of the max (not zeroed: a padding
    token must not beat a real negative similarity)."""
    lowest = tf.constant(np.finfo(np.float32).min, tf.float32)
    return tf.reduce_max(tf.where(document_mask, similarities, lowest), axis=-1)


def _finish(total, query_mask, document_has_tokens, length_normalize):
    total = tf.where(document_has_tokens, total, EMPTY_DOCUMENT_SCORE)
    if length_normalize:
        counts = tf.reduce_sum(tf.cast(query_mask, tf.float32), axis=-1)
        total = total / tf.maximum(counts, 1.0)
    return total


def max_sim(
    query_vectors,
    query_mask,
    document_vectors,
    document_mask,
    length_normalize=False,
):
    """MaxSim scores of every query with every document, in the graph.

    Args:
        query_vectors: float [n_queries, query_tokens, dim].
        query_mask: [n_queries, query_tokens], nonzero where a token counts.
        document_vectors: float [n_documents, document_tokens, dim].
        document_mask: [n_documents, document_tokens], likewise.
        length_normalize: divide by each query's token count (MeanMaxSim).

    Returns:
        float32 [n_queries, n_documents]; a document with no scored token
        scores `EMPTY_DOCUMENT_SCORE`.

    Example:

    ```python
    scores = max_sim(q, q_mask, d, d_mask)  # [len(q), len(d)]
    ```
    """
    query_vectors = tf.cast(query_vectors, tf.float32)
    document_vectors = tf.cast(document_vectors, tf.float32)
    query_mask = tf.cast(query_mask, tf.bool)
    document_mask = tf.cast(document_mask, tf.bool)
    similarities = tf.einsum("ash,bth->abst", query_vectors, document_vectors)
    best = _token_maxima(similarities, document_mask[tf.newaxis, :, tf.newaxis, :])
    best = best * tf.cast(query_mask, tf.float32)[:, tf.newaxis, :]
    has_tokens = tf.reduce_any(document_mask, axis=-1)[tf.newaxis, :]
    return _finish(
        tf.reduce_sum(best, axis=-1),
        query_mask[:, tf.newaxis, :],
        has_tokens,
        length_normalize,
    )


def max_sim_pairwise(
    query_vectors,
    query_mask,
    document_vectors,
    document_mask,
    length_normalize=False,
):
    """MaxSim of query i with document i: float32 [n] (arguments as
    `max_sim`, both sides with n rows)."""
    query_vectors = tf.cast(query_vectors, tf.float32)
    document_vectors = tf.cast(document_vectors, tf.float32)
    query_mask = tf.cast(query_mask, tf.bool)
    document_mask = tf.cast(document_mask, tf.bool)
    similarities = tf.einsum("ash,ath->ast", query_vectors, document_vectors)
    best = _token_maxima(similarities, document_mask[:, tf.newaxis, :])
    best = best * tf.cast(query_mask, tf.float32)
    return _finish(
        tf.reduce_sum(best, axis=-1),
        query_mask,
        tf.reduce_any(document_mask, axis=-1),
        length_normalize,
    )


def pad_token_vectors(vectors):
    """`(padded, mask)` of a list of [n_tokens_i, dim] arrays: float32
    [len, max n_tokens, dim] (zeros past each row) and bool [len, max
    n_tokens]. A 3-D array is taken as padded already (every token counts).

    Raises:
        ValueError: rows of different widths, or not 2-D.
    """
    if isinstance(vectors, (np.ndarray, tf.Tensor)) and len(vectors.shape) == 3:
        padded = np.asarray(vectors, np.float32)
        return padded, np.ones(padded.shape[:2], bool)
    if isinstance(vectors, (np.ndarray, tf.Tensor)) and len(vectors.shape) == 2:
        vectors = [vectors]  # one text's vectors: a batch of one
    rows = [np.asarray(v, np.float32) for v in vectors]
    if any(row.ndim != 2 for row in rows):
        raise ValueError("token vectors must be [n_tokens, dim] arrays")
    widths = {row.shape[1] for row in rows}
    if len(widths) > 1:
        raise ValueError(f"token vectors of different widths {sorted(widths)}")
    dim = widths.pop() if widths else 0
    longest = max((len(row) for row in rows), default=0)
    padded = np.zeros((len(rows), longest, dim), np.float32)
    mask = np.zeros((len(rows), longest), bool)
    for i, row in enumerate(rows):
        padded[i, : len(row)] = row
        mask[i, : len(row)] = True
    return padded, mask
