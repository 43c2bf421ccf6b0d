"""`ExactStore`: the vector-store calls answered by exact search over vectors held in memory."""

import numpy as np

from bert_tf.errors import UserInputError
from bert_tf.retrieval.exact_search import exact_top_k
from bert_tf.retrieval.vector_store import METRICS
from bert_tf.retrieval.vector_store import SearchResults
from bert_tf.retrieval.vector_store import VectorStore

__all__ = ["ExactStore"]


class ExactStore(VectorStore):
    """Rows in memory, searched exactly in the TensorFlow graph (`exact_top_k`).

    The same search the retrieval SavedModel runs, so results of a Milvus
    ``FLAT`` collection, of this store and of the SavedModel can be compared.

    Args:
      dimension: the vectors' size.
      fingerprint: the model the vectors come from.
      metric: ``"IP"``, ``"COSINE"`` or ``"L2"``.

    Example:

    ```python
    store = ExactStore.copy_of(milvus_store)  # the same rows, searched exactly
    results = store.search(query_vectors, top_k=10)
    ```
    """

    def __init__(self, dimension, fingerprint="", metric="IP"):
        if metric not in METRICS:
            raise UserInputError(
                f"metric={metric}: expected one of {METRICS}",
                argument={"metric": "metric_type"},
            )
        self.dimension = int(dimension)
        self.fingerprint = fingerprint
        self.metric = metric
        self._rows = {}  # passage id -> (StoredPassage, vector), insertion order

    @classmethod
    def copy_of(cls, store):
        """An `ExactStore` holding the rows of another store."""
        exact = cls(store.dimension, store.fingerprint, store.metric)
        passages, vectors = store.vectors()
        exact.upsert(passages, vectors)
        return exact

    def stored_passages(self):
        return {pid: passage for pid, (passage, _) in self._rows.items()}

    def upsert(self, passages, vectors):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise UserInputError(
                f"vectors of shape {vectors.shape}: the store holds dimension "
                f"{self.dimension}"
            )
        for passage, vector in zip(passages, vectors, strict=True):
            self._rows.pop(passage.id, None)
            self._rows[passage.id] = (passage, vector)

    def delete(self, passage_ids):
        for passage_id in passage_ids:
            self._rows.pop(passage_id, None)

    def vectors(self):
        passages = [passage for passage, _ in self._rows.values()]
        if not passages:
            return [], np.zeros((0, self.dimension), np.float32)
        return passages, np.stack([vector for _, vector in self._rows.values()])

    def search(self, queries, top_k, progress=None):
        """See `VectorStore.search` (`progress` is called once, at the end)."""
        passages, corpus = self.vectors()
        top_k = min(int(top_k), len(passages))
        queries = np.asarray(queries, dtype=np.float32)
        if top_k == 0:
            return SearchResults([[] for _ in queries], [[] for _ in queries])
        scores, rows = exact_top_k(queries, corpus, top_k, self.metric)
        ids = [[passages[row].id for row in query_rows] for query_rows in rows.numpy()]
        if progress:
            progress(len(ids))
        return SearchResults(ids, scores.numpy().tolist())
