"""The retrieval SavedModel: raw query strings in, the best document ids and scores out.

`export_retrieval_saved_model` writes ``export_dir/<version>/`` (TF Serving's
layout) with two signatures:

- ``serving_default``: ``query`` string [B] and ``top_k`` int32 scalar ->
  ``ids`` string [B, k] (document ids) and ``scores`` float32 [B, k], best
  first: the query tower embeds the query, then an exact search scores every
  stored passage (the corpus embeddings live in the SavedModel, float32 or
  bfloat16) and each document gets its best passage's score, as
  `bert_tf.tasks.retrieval.search_documents` does on Milvus.
- ``query_embedding``: ``query`` string [B] -> ``embeddings`` float32 [B, d],
  for clients that search Milvus themselves.

Sized for corpora up to about a million passages on one server (384-d
float32: 1.5 GB; bfloat16 halves it).
"""

import os

import numpy as np
import tensorflow as tf

from bert_tf.retrieval.exact_search import similarity_scores

SERVING_DTYPES = ("float32", "bfloat16")

__all__ = ["RetrievalSignatures", "export_retrieval_saved_model"]


class RetrievalSignatures(tf.Module):
    """The query tower and the stored corpus, with the two signatures.

    Args:
      query_encoder: `BertSentenceEncoder` with its preprocessor.
      passages: list of `StoredPassage` (ids, document ids), in `vectors` order.
      vectors: float array [len(passages), dim].
      metric: ``"IP"``, ``"COSINE"`` or ``"L2"`` (as the Milvus collection).
      dtype: ``"float32"`` or ``"bfloat16"``: how the corpus is stored.

    Example:

    ```python
    module = RetrievalSignatures(towers.query_encoder, *store.vectors())
    ids, scores = module.search(tf.constant(["who won?"]), 10)
    ```
    """

    def __init__(self, query_encoder, passages, vectors, metric="IP", dtype="float32"):
        super().__init__(name="retrieval")
        if dtype not in SERVING_DTYPES:
            raise ValueError(f"dtype must be one of {SERVING_DTYPES}, got {dtype!r}")
        if not passages:
            raise ValueError("no passages to search: index the corpus first")
        self.query_encoder = query_encoder
        self.preprocessor = query_encoder.preprocessor
        self.metric = metric
        doc_ids = list(dict.fromkeys(p.doc_id for p in passages))
        self.folds = [p.id for p in passages] != doc_ids
        index_of = {doc_id: i for i, doc_id in enumerate(doc_ids)}
        self.corpus = tf.Variable(
            tf.cast(np.asarray(vectors, np.float32), dtype),
            trainable=False,
            name="corpus",
        )
        self.doc_ids = tf.Variable(doc_ids, trainable=False, name="doc_ids")
        self.passage_docs = tf.Variable(
            [index_of[p.doc_id] for p in passages],
            dtype=tf.int32,
            trainable=False,
            name="passage_docs",
        )

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def embed(self, query):
        return self.query_encoder(self.preprocessor(query), training=False)

    def search(self, query, top_k):
        """(ids [B, k], scores [B, k]) of the best documents for `query`."""
        scores = similarity_scores(self.embed(query), self.corpus, self.metric)
        if self.folds:
            # Each document scores as its best passage.
            scores = tf.transpose(
                tf.math.unsorted_segment_max(
                    tf.transpose(scores),
                    self.passage_docs,
                    tf.shape(self.doc_ids)[0],
                )
            )
        top_k = tf.minimum(tf.cast(top_k, tf.int32), tf.shape(scores)[1])
        best, rows = tf.math.top_k(scores, k=top_k, sorted=True)
        return tf.gather(self.doc_ids, rows), best

    @tf.function(
        input_signature=[tf.TensorSpec([None], tf.string), tf.TensorSpec([], tf.int32)]
    )
    def serve(self, query, top_k):
        ids, scores = self.search(query, top_k)
        return {"ids": ids, "scores": scores}

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def serve_query_embedding(self, query):
        return {"embeddings": self.embed(query)}


def _next_version(export_dir):
    versions = [int(n) for n in os.listdir(export_dir) if n.isdigit()]
    return max(versions, default=0) + 1


def export_retrieval_saved_model(
    query_encoder,
    passages,
    vectors,
    export_dir,
    metric="IP",
    dtype="float32",
    reranker=None,
    passage_texts=None,
    rerank_top_k=20,
):
    """Writes the retrieval SavedModel into ``export_dir/<next version>``;
    returns that directory.

    Args:
      query_encoder: the query tower (`BertSentenceEncoder`).
      passages, vectors: the stored rows (`VectorStore.vectors()`).
      export_dir: TF Serving's model base path.
      metric: the store's metric.
      dtype: ``"float32"`` or ``"bfloat16"`` corpus embeddings.
      reranker: optional `BertReranker`: a second stage that re-orders the
        best `rerank_top_k` passages of each query (see
        `TwoStageRetrievalSignatures`); needs `passage_texts`.
    """
    if reranker is None:
        module = RetrievalSignatures(query_encoder, passages, vectors, metric, dtype)
    else:
        from bert_tf.retrieval.two_stage_signatures import TwoStageRetrievalSignatures

        module = TwoStageRetrievalSignatures(
            query_encoder,
            passages,
            vectors,
            metric,
            dtype,
            reranker=reranker,
            passage_texts=passage_texts,
            rerank_top_k=rerank_top_k,
        )
    os.makedirs(export_dir, exist_ok=True)
    final_dir = os.path.join(export_dir, str(_next_version(export_dir)))
    temp_dir = final_dir + ".tmp"
    tf.saved_model.save(
        module,
        temp_dir,
        signatures={
            "serving_default": module.serve,
            "query_embedding": module.serve_query_embedding,
        },
    )
    os.rename(temp_dir, final_dir)
    return final_dir
