"""`TwoStageRetrievalSignatures`: dual-encoder search, then cross-encoder order, in one graph."""

import numpy as np
import tensorflow as tf

from bert_tf.retrieval.exact_search import similarity_scores
from bert_tf.retrieval.retrieval_saved_model import RetrievalSignatures


class TwoStageRetrievalSignatures(RetrievalSignatures):
    """The retrieval SavedModel with a re-ranking second stage.

    `serving_default` takes `query` [B] strings and `top_k`: the query tower
    finds the `rerank_top_k` best passages by exact search (as the one-stage
    model), the cross-encoder scores each (query, passage) pair (all B x
    rerank_top_k pairs in one batch, padded to the longest), each document
    scores as its best candidate passage, and `ids` [B, k] (document ids) and
    `scores` [B, k] (the cross-encoder's, as `BertReranker.predict`) come out
    best first; k is at most the number of candidate documents.
    `query_embedding` is the one-stage model's.

    Args:
      query_encoder, passages, vectors, metric, dtype: as `RetrievalSignatures`.
      reranker: a `BertReranker` (with its preprocessor).
      passage_texts: the text of each passage, in `passages` order (what the
        cross-encoder reads).
      rerank_top_k: candidate passages per query.

    Example:

    ```python
    module = TwoStageRetrievalSignatures(towers.query_encoder, *store.vectors(),
                                         reranker=reranker, passage_texts=texts)
    ids, scores = module.search(tf.constant(["who won?"]), 10)
    ```
    """

    def __init__(
        self,
        query_encoder,
        passages,
        vectors,
        metric="IP",
        dtype="float32",
        *,
        reranker,
        passage_texts,
        rerank_top_k=20,
    ):
        super().__init__(query_encoder, passages, vectors, metric, dtype)
        if len(passage_texts) != len(passages):
            raise ValueError(
                f"{len(passage_texts)} passage texts for {len(passages)} passages"
            )
        if rerank_top_k < 1:
            raise ValueError(f"rerank_top_k must be positive, got {rerank_top_k}")
        self.reranker = reranker
        self.reranker_preprocessor = reranker.preprocessor
        self.rerank_top_k = int(rerank_top_k)
        self.passage_texts = tf.Variable(
            np.asarray(passage_texts, object).astype(str),
            trainable=False,
            name="passage_texts",
        )

    def search(self, query, top_k):
        """(ids [B, k], scores [B, k]): the re-ranked best documents."""
        first = similarity_scores(self.embed(query), self.corpus, self.metric)
        candidates = tf.minimum(self.rerank_top_k, tf.shape(first)[1])
        _, rows = tf.math.top_k(first, k=candidates, sorted=True)  # [B, K]
        texts = tf.gather(self.passage_texts, rows)
        pairs = self.reranker_preprocessor(
            (tf.repeat(query, candidates), tf.reshape(texts, [-1]))
        )
        logits = tf.cast(self.reranker(pairs, training=False), tf.float32)
        if self.reranker.activation == "sigmoid":
            logits = tf.sigmoid(logits)
        scores = tf.reshape(logits, tf.shape(rows))
        docs = tf.gather(self.passage_docs, rows)  # [B, K] document indices
        if self.folds:
            # Each document scores as its best candidate passage: the
            # candidates' own positions of the first passage of each document.
            same = tf.equal(docs[:, :, None], docs[:, None, :])
            best_of_doc = tf.reduce_max(
                tf.where(same, scores[:, None, :], tf.float32.min), axis=-1
            )
            earlier = tf.linalg.band_part(tf.ones_like(same, tf.int32), -1, 0) - tf.eye(
                candidates, dtype=tf.int32
            )
            repeated = tf.reduce_any(
                tf.logical_and(same, tf.cast(earlier, tf.bool)), axis=-1
            )
            scores = tf.where(repeated, tf.float32.min, best_of_doc)
            distinct = tf.reduce_min(
                tf.reduce_sum(tf.cast(tf.logical_not(repeated), tf.int32), axis=-1)
            )
        else:
            distinct = candidates
        top_k = tf.minimum(tf.cast(top_k, tf.int32), distinct)
        best, order = tf.math.top_k(scores, k=top_k, sorted=True)
        return tf.gather(self.doc_ids, tf.gather(docs, order, batch_dims=1)), best
