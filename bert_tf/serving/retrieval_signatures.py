"""`RetrievalSignatures`: the SavedModel signatures of a `CorpusIndex` (query in, documents out)."""

import numpy as np
import tensorflow as tf

from bert_tf.retrieval.exact_search import similarity_scores
from bert_tf.serving.signature_module import WARMUP_TEXTS
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text.preprocessing import request_batch

# How the SavedModel may store the corpus embeddings.
CORPUS_DTYPES = ("float32", "bfloat16")


class RetrievalSignatures(SignatureModule):
    """Exact search over the corpus embeddings stored in the SavedModel.

    * `serving_default`: `query` [B] strings and `top_k` int32 scalar →
      `ids` [B, k] document ids and `scores` [B, k] float32, best first: the
      query tower embeds the query, every stored passage is scored (inner
      product, cosine or minus the squared L2 distance, as the Milvus
      collection), each document scores as its best passage, as
      `bert_tf.retrieval.document_search.search_documents` does on Milvus; k is at
      most the number of documents. With a cross-encoder (`CorpusIndex.
      reranker`), the query's `rerank_top_k` best passages are scored by it
      (all B x rerank_top_k pairs in one batch, padded to the longest) and
      `ids`/`scores` are the re-ranked documents, scored as
      `BertReranker.predict` (k at most the candidates' documents).
    * `query_embedding`: `query` [B] → `embeddings` [B, D] float32, for
      clients that search Milvus themselves.
    * `serve_tokenized`: the query tower's int32 inputs → `embeddings`.

    Args:
        model: a `CorpusIndex`.
        preprocessor: the query tower's `BertPreprocessor`.
        corpus_dtype: "float32" or "bfloat16": how the corpus embeddings are
            stored (scores are computed in float32 either way; bfloat16
            halves the size).

    Example:
    >>> module = RetrievalSignatures(CorpusIndex(query_encoder, passages, vectors),
    ...                              preprocessor)
    >>> module.search(tf.constant(["who won?"]), 10)
    """

    family = "retrieval"

    def __init__(self, model, preprocessor, corpus_dtype="float32"):
        super().__init__(model, preprocessor)
        if corpus_dtype not in CORPUS_DTYPES:
            raise ValueError(
                f"corpus_dtype must be one of {CORPUS_DTYPES}, got {corpus_dtype!r}"
            )
        self.corpus_dtype = corpus_dtype
        # The served data, as tf.Variables the exporter tracks (`trackables`).
        self.state = tf.Module(name="corpus")
        self.state.corpus = tf.Variable(
            tf.cast(model.vectors, corpus_dtype), trainable=False, name="corpus"
        )
        self.state.doc_ids = tf.Variable(model.doc_ids, trainable=False, name="doc_ids")
        self.state.passage_docs = tf.Variable(
            model.passage_docs, trainable=False, name="passage_docs"
        )
        if model.reranker is not None:
            self.state.passage_texts = tf.Variable(
                np.asarray(model.passage_texts, object).astype(str),
                trainable=False,
                name="passage_texts",
            )

    def trackables(self):
        # The cross-encoder's tokenizer tables are not the exporter's.
        reranker = self.model.reranker
        return [self.state] + ([reranker.preprocessor] if reranker is not None else [])

    def _embed(self, inputs):
        return tf.cast(self.model.query_encoder(inputs, training=False), tf.float32)

    def search(self, query, top_k):
        """(ids [B, k], scores [B, k]) of the best documents for `query`."""
        scores = similarity_scores(
            self._embed(self.preprocessor(query)), self.state.corpus, self.model.metric
        )
        if self.model.reranker is not None:
            return self._rerank(query, scores, top_k)
        if self.model.folds:
            # Each document scores as its best passage.
            scores = tf.transpose(
                tf.math.unsorted_segment_max(
                    tf.transpose(scores),
                    self.state.passage_docs,
                    tf.shape(self.state.doc_ids)[0],
                )
            )
        top_k = tf.minimum(tf.cast(top_k, tf.int32), tf.shape(scores)[1])
        best, rows = tf.math.top_k(scores, k=top_k, sorted=True)
        return tf.gather(self.state.doc_ids, rows), best

    def _rerank(self, query, first, top_k):
        """The first stage's best passages re-scored by the cross-encoder."""
        reranker = self.model.reranker
        candidates = tf.minimum(self.model.rerank_top_k, tf.shape(first)[1])
        _, rows = tf.math.top_k(first, k=candidates, sorted=True)  # [B, K]
        texts = tf.gather(self.state.passage_texts, rows)
        pairs = reranker.preprocessor(
            (tf.repeat(query, candidates), tf.reshape(texts, [-1]))
        )
        logits = tf.cast(reranker(pairs, training=False), tf.float32)
        if reranker.activation == "sigmoid":
            logits = tf.sigmoid(logits)
        scores = tf.reshape(logits, tf.shape(rows))
        docs = tf.gather(self.state.passage_docs, rows)  # [B, K] document indices
        if self.model.folds:
            # Each document scores as its best candidate passage, at the
            # position of its first candidate; its later ones drop out.
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
        return tf.gather(self.state.doc_ids, tf.gather(docs, order, batch_dims=1)), best

    def text_endpoint(self):
        def serve_text(query, top_k):
            ids, scores = self.search(request_batch(query, "query"), top_k)
            return {"ids": ids, "scores": scores}

        return serve_text, [
            tf.TensorSpec([None], tf.string, "query"),
            tf.TensorSpec([], tf.int32, "top_k"),
        ]

    def query_embedding_endpoint(self):
        """`(function, specs)` of the `query_embedding` signature."""

        def query_embedding(query):
            query = request_batch(query, "query")
            return {"embeddings": self._embed(self.preprocessor(query))}

        return query_embedding, [tf.TensorSpec([None], tf.string, "query")]

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        return {
            "embeddings": self._embed(model_inputs(input_ids, input_mask, segment_ids))
        }

    def tokenize_for_warmup(self, inputs):
        return self.preprocessor(inputs["query"])

    def endpoints(self):
        return {
            "serving_default": self.text_endpoint(),
            "query_embedding": self.query_embedding_endpoint(),
            "serve_tokenized": self.tokenized_endpoint(),
        }

    def warmup_requests(self, texts=WARMUP_TEXTS):
        query = {"query": tf.constant(list(texts))}
        return [
            ("serving_default", {**query, "top_k": tf.constant(2, tf.int32)}),
            ("query_embedding", query),
            ("serve_tokenized", self.tokenize_for_warmup(query)),
        ]

    def metadata(self):
        model = self.model
        metadata = {
            **super().metadata(),
            "metric": model.metric,
            "corpus_dtype": self.corpus_dtype,
            "num_passages": len(model.passages),
            "num_documents": len(model.doc_ids),
            "embedding_dim": int(model.vectors.shape[1]),
        }
        if model.reranker is not None:
            metadata["rerank_top_k"] = model.rerank_top_k
        return metadata
