"""`MaxSimReranker`: a second stage that orders candidates by ColBERT's MaxSim.

A `BertMultiVectorEncoder` (a sentence-transformers MultiVectorEncoder
directory, --rerank_multi_vector) embeds each query and each candidate
passage as token vectors; a pair scores its MaxSim (`similarity_pairwise`:
`bert_tf.retrieval.max_sim`, MeanMaxSim for a "meanmaxsim" model). It
answers `predict` and `rank` as `BertReranker` does, so run_retrieval's and
bert-tf-search's re-ranking take either.

The passages' token vectors are computed here from their text, not kept in
Milvus: Milvus's multi-vector fields (an array of structs holding vectors,
searched with MAX_SIM) exist only on Milvus 2.6 servers (not Milvus Lite).
"""

import numpy as np

# Pairs scored per MaxSim call (their token vectors padded together).
_PAIRS_PER_CALL = 256

__all__ = ["MaxSimReranker"]


class MaxSimReranker:
    """Scores (query, passage) pairs by MaxSim of a multi-vector encoder.

    Args:
      encoder: a `BertMultiVectorEncoder`.

    Example:

    ```python
    reranker = MaxSimReranker.from_checkpoint("colbert-dir")
    scores = reranker.predict([("who won?", "Denver won.")])
    ```
    """

    def __init__(self, encoder):
        self.encoder = encoder

    @classmethod
    def from_checkpoint(cls, path):
        """The reranker of a MultiVectorEncoder directory."""
        from bert_tf.models.bert_multi_vector_encoder import BertMultiVectorEncoder

        return cls(BertMultiVectorEncoder.from_checkpoint(path))

    def predict(self, pairs, batch_size=32, progress=None):
        """float32 [len(pairs)] MaxSim scores of (query, passage) text pairs
        (each distinct text embedded once); `progress(done, total)` after
        each block of pairs."""
        pairs = list(pairs)
        queries = sorted({q for q, _ in pairs})
        passages = sorted({p for _, p in pairs})
        query_vectors = dict(
            zip(
                queries,
                self.encoder.encode_query(queries, batch_size=batch_size),
                strict=True,
            )
        )
        passage_vectors = dict(
            zip(
                passages,
                self.encoder.encode_document(passages, batch_size=batch_size),
                strict=True,
            )
        )
        scores = []
        for start in range(0, len(pairs), _PAIRS_PER_CALL):
            block = pairs[start : start + _PAIRS_PER_CALL]
            scores.append(
                self.encoder.similarity_pairwise(
                    [query_vectors[q] for q, _ in block],
                    [passage_vectors[p] for _, p in block],
                )
            )
            if progress:
                progress(start + len(block), len(pairs))
        return np.concatenate(scores) if scores else np.zeros((0,), np.float32)

    def rank(self, query, documents, batch_size=32):
        """`documents` ordered by MaxSim with `query`, best first:
        [{"corpus_id": index in documents, "score": float}], as
        `BertReranker.rank`."""
        scores = self.predict([(query, d) for d in documents], batch_size)
        order = np.argsort(-scores, kind="stable")
        return [{"corpus_id": int(i), "score": float(scores[i])} for i in order]
