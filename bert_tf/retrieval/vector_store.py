"""The calls every vector store answers: Milvus (`MilvusStore`) and exact search (`ExactStore`).

A store keeps one row per passage: its id (the primary key; a corpus id for
a one-passage document), its document's id, a hash of the text it was
embedded from (so a rerun re-embeds only what changed), its vector, and (in
Milvus) the text and title, so a hit can be shown without the corpus. Scores
are "higher is better" whatever the metric: inner product (``IP``, the
default; cosine for normalized embeddings), ``COSINE``, or ``L2`` as minus the
squared Euclidean distance.
"""

import abc
from typing import NamedTuple

METRICS = ("IP", "COSINE", "L2")
# How queries are answered: the dense vectors, BM25, SPLADE's learned sparse
# vectors, or several of them fused (`HYBRID_SIDES`, and how: `FUSIONS`).
RETRIEVAL_MODES = ("dense", "bm25", "hybrid", "splade")
HYBRID_SIDES = ("dense", "bm25", "splade")
FUSIONS = ("rrf", "weighted")

__all__ = [
    "FUSIONS",
    "HYBRID_SIDES",
    "METRICS",
    "RETRIEVAL_MODES",
    "SearchResults",
    "StoredPassage",
    "VectorStore",
]


class StoredPassage(NamedTuple):
    """A row: passage id, document id, hash of the embedded text, and the
    text and title shown with a hit (empty where a store keeps none).

    `key` (the first three) says whether a row is up to date: stores read
    back only those.
    """

    id: str
    doc_id: str
    text_hash: str
    text: str = ""
    title: str = ""

    @property
    def key(self):
        """(id, doc_id, text_hash): equal when the row needs no rewrite."""
        return self[:3]


class SearchResults(NamedTuple):
    """Per query, the passage ids and scores found, best first.

    Attributes:
      ids: list (one per query) of lists of passage ids.
      scores: list (one per query) of lists of float scores, same shape.
    """

    ids: list
    scores: list


class VectorStore(abc.ABC):
    """A collection of passage vectors, searched by inner product / cosine / L2.

    Args (of every implementation):
      dimension: the vectors' size.
      fingerprint: names the model the vectors come from; a store that holds
        another model's vectors refuses to mix them in.
      metric: one of `METRICS`.

    Example:

    ```python
    store = ExactStore(dimension=384, fingerprint="abc")  # or MilvusStore(uri, ...)
    store.upsert([StoredPassage("d1", "d1", "h1")], vectors)
    results = store.search(query_vectors, top_k=10)
    ```
    """

    dimension: int
    fingerprint: str
    metric: str
    # What a store holds beside dense vectors (`MilvusStore` may hold BM25
    # vectors, or none dense).
    dense = True
    lexical = False
    splade = False
    bm25_function = False
    # Whether rows keep the text and title of `StoredPassage` (a Milvus
    # collection made before they were kept does not).
    stores_text = True
    # Texts and titles cut to fit the store so far (`upsert`).
    truncated_texts = 0

    @abc.abstractmethod
    def stored_passages(self):
        """{passage id: `StoredPassage`} of every row."""

    @abc.abstractmethod
    def upsert(self, passages, vectors):
        """Adds or replaces rows (by passage id); durable when it returns.

        Args:
          passages: list of `StoredPassage`.
          vectors: float array [len(passages), dimension].
        """

    @abc.abstractmethod
    def delete(self, passage_ids):
        """Removes the rows of these passage ids (unknown ids are ignored)."""

    @abc.abstractmethod
    def search(self, queries, top_k, progress=None):
        """The `top_k` best passages of each query vector: `SearchResults`.

        Args:
          queries: float array [num_queries, dimension].
          top_k: passages per query (fewer when the store holds fewer).
          progress: None, or called with the count of queries searched so far.
        """

    @abc.abstractmethod
    def vectors(self):
        """All rows: (list of `StoredPassage`, float32 array [rows, dimension])."""

    def __len__(self):
        return len(self.stored_passages())

    def flush(self):  # noqa: B027 (a store durable at each write needs nothing)
        """Seals the rows written so far (once, at the end of an index run)."""

    def close(self):  # noqa: B027 (a store without resources needs nothing)
        """Releases the store's resources."""

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
