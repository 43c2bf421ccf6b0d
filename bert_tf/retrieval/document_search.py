"""Passages searched in a store, folded back to documents; the TREC run file of the results."""

from absl import logging

from bert_tf.data_prep import beir

# The TREC run file the retrieval and re-ranking tasks write, and its run name.
RUN_FILE = "run.tsv"
RUN_NAME = "bert_tf"

__all__ = [
    "RUN_FILE",
    "RUN_NAME",
    "search_documents",
    "searched_for_evaluation",
    "write_run",
]


def search_documents(store, query_vectors, passages, top_k):
    """Per query, [(doc id, score)] best first: passages searched in `store`,
    each document scored by its best passage.

    Enough passages are searched for the fold to be exact: the k-th best
    document's best passage ranks at most (k - 1) x (most passages of one
    document) + 1.

    Example:

    ```python
    found = search_documents(store, towers.encode_queries(texts), passages, 10)
    ```
    """
    doc_of = {p.id: p.doc_id for p in passages}
    per_doc = {}
    for p in passages:
        per_doc[p.doc_id] = per_doc.get(p.doc_id, 0) + 1
    most = max(per_doc.values()) if per_doc else 1
    found = store.search(query_vectors, top_k * most)
    return [
        beir.fold_to_documents(zip(ids, scores, strict=True), doc_of, top_k)
        for ids, scores in zip(found.ids, found.scores, strict=True)
    ]


def searched_for_evaluation(store):
    """The store an evaluation searches: a Milvus Lite FLAT collection's rows
    copied into an `ExactStore`, else `store` itself.

    FLAT is exact search, so the copy returns what the collection returns
    (tested equal), but Milvus Lite's server is Python and answers about five
    queries a second at the depth an evaluation asks (the top 100 documents:
    several hundred passages); SQuAD's 10,570 questions took over half an
    hour. Approximate indexes and servers are searched as they are."""
    from bert_tf.retrieval.exact_store import ExactStore
    from bert_tf.retrieval.milvus_store import MilvusStore

    if isinstance(store, MilvusStore) and store.embedded and store.index_type == "FLAT":
        logging.info(
            "Searching exactly over a copy of the FLAT collection's %d rows "
            "(what FLAT returns; Milvus Lite would take minutes)",
            len(store),
        )
        return ExactStore.copy_of(store)
    return store


def write_run(path, query_ids, results, run_name=RUN_NAME):
    """Writes a TREC run file: ``qid Q0 docid rank score run_name`` per line.

    Args:
      path: the file to write.
      query_ids: the queries, in `results` order.
      results: per query, [(doc id, score)] best first.
      run_name: the last column.
    """
    with open(path, "w", encoding="utf-8") as f:
        for query_id, found in zip(query_ids, results, strict=True):
            for rank, (doc_id, score) in enumerate(found, start=1):
                f.write(f"{query_id} Q0 {doc_id} {rank} {score:.6f} {run_name}\n")
