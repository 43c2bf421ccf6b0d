"""The losses sentence-transformers trains sentence encoders with.

Each takes the embeddings of a batch (not normalised: the cosine is taken
here) and returns a scalar; they equal sentence-transformers'
`CosineSimilarityLoss`, `CoSENTLoss`, `MultipleNegativesRankingLoss` and
`MultipleNegativesSymmetricRankingLoss` with their default settings
(tests/test_similarity.py compares them on the same numbers).
"""

import tensorflow as tf

# sentence-transformers' default scale (inverse temperature) of CoSENT and
# of the in-batch-negatives losses.
from bert_tf.options.similarity_options import DEFAULT_SCALE


def _unit(x):
    # torch.nn.functional.normalize: x / max(||x||, 1e-12).
    x = tf.cast(x, tf.float32)
    norm = tf.norm(x, axis=-1, keepdims=True)
    return x / tf.maximum(norm, 1e-12)


def pair_cosine(a, b):
    """Cosine of each row of `a` with the same row of `b`: [batch]."""
    return tf.reduce_sum(_unit(a) * _unit(b), axis=-1)


def cosine_similarity_loss(a, b, scores):
    """Mean squared error between cos(a, b) and the gold `scores` (in [0, 1]
    or [-1, 1], as the data is scaled)."""
    return tf.reduce_mean(tf.square(pair_cosine(a, b) - tf.cast(scores, tf.float32)))


def cosent_loss(a, b, scores, scale=DEFAULT_SCALE):
    """CoSENT: log(1 + Σ exp(s·(cos_j − cos_i))) over the pairs (i, j) whose gold
    score says i is more similar than j; only the order of the scores counts."""
    cosine = pair_cosine(a, b) * scale
    scores = tf.cast(scores, tf.float32)
    differences = cosine[:, None] - cosine[None, :]
    # Pairs not ordered that way are pushed to -inf (sentence-transformers
    # subtracts 1e12 as well).
    ordered = tf.cast(scores[:, None] < scores[None, :], tf.float32)
    differences = differences - (1.0 - ordered) * 1e12
    flat = tf.concat([tf.zeros([1]), tf.reshape(differences, [-1])], axis=0)
    return tf.reduce_logsumexp(flat)


def multiple_negatives_ranking_loss(
    anchors, positives, negatives=None, scale=DEFAULT_SCALE, symmetric=False
):
    """In-batch negatives: each anchor must pick its own positive among every
    positive (and hard negative) of the batch; cross-entropy over the scaled
    cosines. `symmetric` also makes each positive pick its anchor among the
    anchors, and averages the two."""
    candidates = (
        positives if negatives is None else tf.concat([positives, negatives], 0)
    )
    scores = tf.matmul(_unit(anchors), _unit(candidates), transpose_b=True) * scale
    labels = tf.range(tf.shape(anchors)[0])
    forward = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=scores)
    )
    if not symmetric:
        return forward
    batch = tf.shape(anchors)[0]
    backward_scores = tf.transpose(scores[:, :batch])
    backward = tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=backward_scores
        )
    )
    return (forward + backward) / 2.0
