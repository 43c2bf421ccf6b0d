"""`ExactLexicalStore`: BM25 searches of stored sparse vectors, scored exactly in memory."""

import numpy as np

from bert_tf.retrieval.bm25 import NO_TERM
from bert_tf.retrieval.vector_store import SearchResults

__all__ = ["ExactLexicalStore"]

# Queries between two progress updates.
_PROGRESS_EVERY = 256


class ExactLexicalStore:
    """The BM25 vectors of a collection in an inverted index (per term, its
    rows and weights), searched as Milvus searches them: each passage scores
    the inner product of its sparse vector and the query's (float32), only
    passages sharing a term with the query are found, best first (ties in
    row order).

    Args:
      sparse: {passage id: {term id: weight}}, e.g. `MilvusStore.lexical_vectors()`.

    Example:

    ```python
    store = ExactLexicalStore.copy_of(milvus_store)  # a Lite BM25 collection
    results = store.search_lexical([query_vector("who wrote it")], top_k=10)
    ```
    """

    lexical = True
    bm25_function = False
    dense = False

    def __init__(self, sparse):
        self._ids = list(sparse)
        rows, terms, weights = [], [], []
        for row, vector in enumerate(sparse.values()):
            rows.append(np.full(len(vector), row, np.int64))
            terms.append(np.fromiter(vector.keys(), np.int64, len(vector)))
            weights.append(np.fromiter(vector.values(), np.float32, len(vector)))
        if not rows:
            self._postings = {}
            return
        rows, terms, weights = map(np.concatenate, (rows, terms, weights))
        order = np.argsort(terms, kind="stable")
        rows, terms, weights = rows[order], terms[order], weights[order]
        starts = np.flatnonzero(np.r_[True, terms[1:] != terms[:-1]])
        ends = np.r_[starts[1:], len(terms)]
        self._postings = {
            int(terms[s]): (rows[s:e], weights[s:e])
            for s, e in zip(starts, ends, strict=True)
        }

    @classmethod
    def copy_of(cls, store):
        """The stored BM25 vectors of a `MilvusStore`, read once."""
        return cls(store.lexical_vectors())

    def __len__(self):
        return len(self._ids)

    def _search_one(self, query, top_k):
        rows, products = [], []
        for term, count in query.items():
            if term == NO_TERM or term not in self._postings:
                continue
            term_rows, weights = self._postings[term]
            rows.append(term_rows)
            products.append(weights * np.float32(count))
        if not rows:
            return [], []
        found, inverse = np.unique(np.concatenate(rows), return_inverse=True)
        scores = np.zeros(len(found), np.float32)
        np.add.at(scores, inverse, np.concatenate(products))
        if len(found) > top_k:
            kept = np.argpartition(-scores, top_k - 1)[:top_k]
            # Every passage tied with the k-th stays a candidate: ties in row order.
            kept = np.flatnonzero(scores >= scores[kept].min())
        else:
            kept = np.arange(len(found))
        best = kept[np.lexsort((found[kept], -scores[kept]))][:top_k]
        return [self._ids[r] for r in found[best]], scores[best].tolist()

    def search_lexical(self, queries, top_k, progress=None):
        """BM25: the `top_k` best passages of each query, `SearchResults`
        (`MilvusStore.search_lexical`'s).

        Args:
          queries: per query, its sparse vector (`bm25.query_vector`).
          top_k: passages per query.
          progress: called with the count of queries searched so far.
        """
        top_k = int(top_k)
        ids, scores = [], []
        for done, query in enumerate(queries, start=1):
            found, score = self._search_one(query, top_k) if top_k > 0 else ([], [])
            ids.append(found)
            scores.append(score)
            if progress and (done % _PROGRESS_EVERY == 0 or done == len(queries)):
                progress(done)
        return SearchResults(ids, scores)
