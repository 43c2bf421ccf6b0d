"""`CorpusIndex`: what the retrieval SavedModel serves (a query tower over stored passage vectors)."""

import numpy as np

from bert_tf.retrieval.vector_store import METRICS

__all__ = ["CorpusIndex"]


class CorpusIndex:
    """A query tower, the corpus's passage vectors and, optionally, a cross-encoder.

    The serving registry (`bert_tf.serving.register`) maps this class to
    `RetrievalSignatures`: `bert_tf.serving.export_saved_model(index, ...)`
    writes the retrieval SavedModel (exact search over `vectors` in the
    graph, each document scored by its best passage; with `reranker`, the
    best `rerank_top_k` passages re-scored by the cross-encoder).

    Args:
      query_encoder: `BertSentenceEncoder` of the queries (with its
        preprocessor).
      passages: `StoredPassage`s (`id`, `doc_id`), in `vectors` order.
      vectors: float array [len(passages), dim]: the document tower's
        embeddings of the passages.
      metric: ``"IP"``, ``"COSINE"`` or ``"L2"`` (as the Milvus collection).
      reranker: optional `BertReranker`, the second stage.
      passage_texts: with `reranker`, the text of each passage (what the
        cross-encoder reads), in `passages` order.
      rerank_top_k: with `reranker`, candidate passages per query.

    Example:

    ```python
    index = CorpusIndex(towers.query_encoder, *store.vectors())
    serving.export_saved_model(index, "/models/retrieval", vocab, True, 256,
                               save_keras=False)
    ```
    """

    def __init__(
        self,
        query_encoder,
        passages,
        vectors,
        metric="IP",
        reranker=None,
        passage_texts=None,
        rerank_top_k=20,
    ):
        if not passages:
            raise ValueError("no passages to search: index the corpus first")
        if metric not in METRICS:
            raise ValueError(f"metric {metric!r}: expected one of {METRICS}")
        vectors = np.asarray(vectors, np.float32)
        if vectors.shape[0] != len(passages):
            raise ValueError(f"{vectors.shape[0]} vectors for {len(passages)} passages")
        if reranker is not None:
            if passage_texts is None or len(passage_texts) != len(passages):
                raise ValueError(
                    "the cross-encoder needs the text of each of the "
                    f"{len(passages)} passages"
                )
            if rerank_top_k < 1:
                raise ValueError(f"rerank_top_k must be positive, got {rerank_top_k}")
        self.query_encoder = query_encoder
        self.passages = list(passages)
        self.vectors = vectors
        self.metric = metric
        self.reranker = reranker
        self.passage_texts = list(passage_texts) if reranker is not None else None
        self.rerank_top_k = int(rerank_top_k)

    @classmethod
    def of_towers(
        cls,
        towers,
        stored,
        vectors,
        passages,
        metric="IP",
        rerank_checkpoint=None,
        rerank_top_k=20,
    ):
        """The index the retrieval SavedModel serves: the query tower of the
        `DualEncoder` `towers` over the `stored` passages' `vectors`; with
        `rerank_checkpoint`, its cross-encoder over each query's
        `rerank_top_k` best passages (their text from `passages`, the
        `beir.Passage`s)."""
        second_stage = {}
        if rerank_checkpoint:
            from bert_tf.models.bert_reranker import BertReranker

            text_of = {p.id: p.text for p in passages}
            second_stage = {
                "reranker": BertReranker.from_checkpoint(rerank_checkpoint),
                "passage_texts": [text_of[p.id] for p in stored],
                "rerank_top_k": rerank_top_k,
            }
        return cls(towers.query_encoder, stored, vectors, metric, **second_stage)

    @property
    def encoder(self):
        """The query tower's `BertEncoder` (the served model's config)."""
        return self.query_encoder.encoder

    @property
    def doc_ids(self):
        """The documents, in the order of their first passage."""
        return list(dict.fromkeys(p.doc_id for p in self.passages))

    @property
    def passage_docs(self):
        """int32 [passages]: each passage's index in `doc_ids`."""
        index_of = {doc_id: i for i, doc_id in enumerate(self.doc_ids)}
        return np.asarray([index_of[p.doc_id] for p in self.passages], np.int32)

    @property
    def folds(self):
        """Whether some document has several passages (scores are folded)."""
        return len(self.doc_ids) != len(self.passages)
