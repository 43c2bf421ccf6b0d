"""Passages searched in a store, folded back to documents; the TREC run file of the results."""

import numpy as np
from absl import logging

from bert_tf.data_prep import beir
from bert_tf.metrics.retrieval import rank_documents
from bert_tf.retrieval.bm25 import query_vector
from bert_tf.retrieval.vector_store import RETRIEVAL_MODES
from bert_tf.training.progress import progress_bar

# The TREC run file the retrieval and re-ranking tasks write, and its run name.
RUN_FILE = "run.tsv"
RUN_NAME = "bert_tf"
# Searches of more queries than this show a progress bar (with the time left).
PROGRESS_MIN_QUERIES = 256

__all__ = [
    "RUN_FILE",
    "RUN_NAME",
    "documents_found",
    "retrieve_documents",
    "search_documents",
    "searched_for_evaluation",
    "write_run",
]


def documents_found(search, passages, top_k, complete=True):
    """Per query, [(doc id, score)] best first: the passages `search(depth)`
    returns (`SearchResults`), each document scored by its best passage;
    `complete`: every query should find `top_k` documents (dense and hybrid
    searches; BM25 finds only passages sharing a word), else a warning.

    Enough passages are asked for the fold to be exact: the k-th best
    document's best passage ranks at most (k - 1) x (most passages of one
    document) + 1.
    """
    doc_of = {p.id: p.doc_id for p in passages}
    per_doc = {}
    for p in passages:
        per_doc[p.doc_id] = per_doc.get(p.doc_id, 0) + 1
    most = max(per_doc.values()) if per_doc else 1
    found = search(top_k * most)
    results = [
        beir.fold_to_documents(zip(ids, scores, strict=True), doc_of, top_k)
        for ids, scores in zip(found.ids, found.scores, strict=True)
    ]
    if complete:
        _warn_if_short(results, min(top_k, len(per_doc)), top_k * most, most)
    return results


def _warn_if_short(results, wanted, depth, most):
    """One warning when queries got fewer documents than they asked for: a
    search stops at Milvus's limit of passages (an approximate index may
    return fewer too), and one long document can fill it."""
    from bert_tf.retrieval.milvus_schema import MAX_TOP_K

    short = [len(found) for found in results if len(found) < wanted]
    if not short:
        return
    why = (
        f"the fold needs {depth} passages a query (top k x the {most} passages "
        f"of the longest document), more than Milvus returns ({MAX_TOP_K})"
        if depth > MAX_TOP_K
        else "the index returned fewer passages than asked (an approximate "
        "index: raise its search breadth, e.g. --hnsw_ef)"
    )
    logging.warning(
        "%d of %d queries got fewer than %d documents (as few as %d): %s",
        len(short),
        len(results),
        wanted,
        min(short),
        why,
    )


def search_progress(count):
    """None, or a callable taking the count of queries searched that
    advances a progress bar (hidden for `PROGRESS_MIN_QUERIES` or fewer)."""
    if count <= PROGRESS_MIN_QUERIES:
        return None
    return progress_bar(count, unit_name="query").update


def search_documents(store, query_vectors, passages, top_k):
    """Per query, [(doc id, score)] best first: the query vectors' passages
    searched in `store`, each document scored by its best passage
    (`documents_found`).

    Example:

    ```python
    found = search_documents(store, towers.encode_queries(texts), passages, 10)
    ```
    """
    progress = search_progress(len(query_vectors))
    return documents_found(
        lambda depth: store.search(query_vectors, depth, progress), passages, top_k
    )


def retrieve_documents(
    store,
    passages,
    top_k,
    mode="dense",
    query_vectors=None,
    query_texts=None,
    fusion="rrf",
    rrf_k=60,
    weights=(0.5, 0.5),
    splade_queries=None,
    sides=("dense", "bm25"),
):
    """Per query, [(doc id, score)] best first, by `mode`.

    Args:
      store: the `MilvusStore` (an `ExactStore` for ``dense``, an
        `ExactLexicalStore` for ``bm25``).
      passages: the indexed `beir.Passage`s (for the fold to documents).
      top_k: documents per query.
      mode: ``"dense"`` (`query_vectors`), ``"bm25"`` (`query_texts`),
        ``"splade"`` (`splade_queries`) or ``"hybrid"`` (the `sides` fused
        by Milvus: `fusion`, `rrf_k`, `weights` (one per side) as
        `MilvusStore.hybrid_search`'s).
      query_vectors: float [queries, dim], the query tower's.
      query_texts: the queries' texts (BM25's side).
      splade_queries: the queries' SPLADE vectors ({id: weight}).
      sides: what ``hybrid`` fuses: two or three of dense, bm25, splade.

    Example:

    ```python
    found = retrieve_documents(store, passages, 10, "hybrid",
                               towers.encode_queries(texts), texts)
    ```
    """
    if mode == "dense":
        return search_documents(store, query_vectors, passages, top_k)
    count = len(query_texts if query_texts is not None else splade_queries)
    progress = search_progress(count)
    if mode == "splade":
        search = lambda depth: store.search_splade(splade_queries, depth, progress)  # noqa: E731
        return documents_found(search, passages, top_k, complete=False)
    lexical = None
    if mode == "bm25" or "bm25" in sides:
        if store.bm25_function:
            lexical = list(query_texts)
        else:
            lexical = [query_vector(text) for text in query_texts]
    if mode == "bm25":
        search = lambda depth: store.search_lexical(lexical, depth, progress)  # noqa: E731
    elif mode == "hybrid":
        search = lambda depth: store.hybrid_search(  # noqa: E731
            query_vectors,
            lexical,
            depth,
            fusion,
            rrf_k,
            weights,
            progress,
            splade_queries=splade_queries,
            sides=sides,
        )
    else:
        raise ValueError(f"mode={mode!r}: expected one of {RETRIEVAL_MODES}")
    # Sparse sides find only passages sharing a term with the query.
    complete = mode == "hybrid" and "dense" in sides
    return documents_found(search, passages, top_k, complete=complete)


def searched_for_evaluation(store, mode="dense"):
    """The store an evaluation of `mode` searches: for ``dense``, a Milvus
    Lite FLAT collection's rows copied into an `ExactStore`; for ``bm25``, a
    Milvus Lite collection's stored BM25 vectors copied into an
    `ExactLexicalStore`; else `store` itself (hybrid: Milvus fuses).

    FLAT is exact search, so the copy returns what the collection returns
    (tested equal), but Milvus Lite's server is Python and answers about five
    queries a second at the depth an evaluation asks (the top 100 documents:
    several hundred passages); SQuAD's 10,570 questions took over half an
    hour. BM25 the same: the inner products of the stored sparse vectors are
    what Milvus computes (tested equal), and Milvus Lite answered SQuAD's
    questions at about five a second. Approximate indexes, quantized vectors
    (and rescoring), Milvus's own BM25 function and servers are searched as
    they are."""
    from bert_tf.retrieval.exact_lexical import ExactLexicalStore
    from bert_tf.retrieval.exact_store import ExactStore
    from bert_tf.retrieval.milvus_store import MilvusStore

    if not (isinstance(store, MilvusStore) and store.embedded):
        return store
    if mode == "bm25" and store.lexical and not store.bm25_function:
        logging.info(
            "Searching BM25 exactly over a copy of the collection's %d rows "
            "(what Milvus returns; Milvus Lite would take minutes)",
            len(store),
        )
        return ExactLexicalStore.copy_of(store)
    if (
        mode == "dense"
        and store.index_type == "FLAT"
        and store.vector_type == "float32"
    ):
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


def rerank_documents(
    reranker, queries, run, passages, top_n, batch_size=32, progress=None
):
    """`run` with each query's first `top_n` documents re-ordered by the
    cross-encoder (a document scores as its best passage); the documents
    after them keep their order below them.

    Returns {query id: {doc id: score}}: the top N carry the cross-encoder's
    scores; the rest, scores below the lowest of those, in first-stage order.
    """
    by_doc = {}
    for passage in passages:
        by_doc.setdefault(passage.doc_id, []).append(passage.text)
    pairs, owners = [], []
    ordered = {}
    for query_id, docs in run.items():
        ranked = [doc for doc, _ in rank_documents(docs)]
        ordered[query_id] = ranked
        for doc_id in ranked[:top_n]:
            for text in by_doc[doc_id]:
                pairs.append((queries[query_id].text, text))
                owners.append((query_id, doc_id))
    logging.info("Re-ranking: scoring %d (query, passage) pairs", len(pairs))
    scores = reranker.predict(pairs, batch_size=batch_size, progress=progress)
    best = {}
    for owner, score in zip(owners, scores, strict=True):
        best[owner] = max(best.get(owner, -np.inf), float(score))
    reranked = {}
    for query_id, ranked in ordered.items():
        top = {doc: best[(query_id, doc)] for doc in ranked[:top_n]}
        floor = min(top.values(), default=0.0)
        rest = {doc: floor - 1.0 - i for i, doc in enumerate(ranked[top_n:])}
        reranked[query_id] = {**top, **rest}
    return reranked


def reranking_losses(first, second):
    """`[(metric, first, second)]` of the metrics re-ranking made worse.

    Args:
      first, second: {metric name: value} of the first stage and of the
        re-ranked order over the same queries.
    """
    return [
        (name, first[name], second[name])
        for name in first
        if name in second and second[name] < first[name]
    ]


def warn_if_reranking_hurts(first, second):
    """Logs a warning naming each metric the re-ranker made worse, with both
    values: a cross-encoder trained too little (or on too few queries) can
    undo a good first stage, and the printed figures alone do not say so."""
    losses = reranking_losses(first, second)
    if not losses:
        return losses
    shown = ", ".join(f"{name} {a:.4f} -> {b:.4f}" for name, a, b in losses)
    logging.warning(
        "Re-ranking made %d of %d metrics worse than the first stage: %s. Train "
        "the cross-encoder longer, or start from a trained one (e.g. "
        "cross-encoder/ms-marco-MiniLM-L6-v2, see docs/guides/reranking.md).",
        len(losses),
        len(first),
        shown,
    )
    return losses
