"""Two-stage search on BEIR data: dual-encoder candidates, cross-encoder order.

The pieces run_reranker.py puts together, each on plain arguments:

- `first_stage`: the dual encoder's top documents per query, by exact inner
  product over every passage (passages folded back to documents by their
  best passage, as run_retrieval's evaluation);
- `training_groups`: per relevant (query, document) judgement, the
  document's best passage (by the first stage) and `num_negatives` hard
  negatives: the best-ranked passages of documents not relevant to the
  query (the first stage's top k minus the positives);
- `rerank_loss`: binary cross-entropy on every pair of a group (label 1 for
  its positive) or listwise softmax cross-entropy over the group (the
  positive is the target class);
- `rerank_documents` and `two_stage_metrics`: the first stage's top N
  re-scored by the cross-encoder (a document scores as its best passage),
  and the BEIR metrics of both stages side by side.
"""

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.retrieval.exact_store import ExactStore
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.retrieval_metrics import DEFAULT_METRIC_NAMES
from bert_tf.retrieval_metrics import rank_documents
from bert_tf.retrieval_metrics import retrieval_metrics
from bert_tf.tasks.retrieval import search_documents

RERANK_LOSSES = ("bce", "listwise")
# Suffixes of the two stages' metrics in eval_results.txt (sorted by name,
# each metric's two values are on adjacent lines).
FIRST_STAGE = "retrieval"
SECOND_STAGE = "reranked"


def passage_store(towers, passages, batch_size=64):
    """An in-memory `ExactStore` of every passage, embedded by the document
    tower (ids: the passage's index in `passages`)."""
    store = ExactStore(towers.embedding_dim, metric="IP")
    vectors = towers.encode_documents([p.text for p in passages], batch_size)
    store.upsert(
        [StoredPassage(str(i), p.doc_id, "") for i, p in enumerate(passages)], vectors
    )
    return store


def first_stage(towers, store, queries, query_ids, passages, top_k, batch_size=64):
    """{query id: {doc id: score}}: the dual encoder's `top_k` documents."""
    vectors = towers.encode_queries([queries[q].text for q in query_ids], batch_size)
    indexed = [p._replace(id=str(i)) for i, p in enumerate(passages)]
    found = search_documents(store, vectors, indexed, top_k)
    return {q: dict(docs) for q, docs in zip(query_ids, found, strict=True)}


def training_groups(
    qrels, store, towers, queries, passages, num_negatives, batch_size=64
):
    """[(query id, positive passage index, [negative passage indices])]: one
    group per relevant judgement (see the module docstring).

    Queries with fewer than `num_negatives` non-relevant passages in the
    whole corpus are skipped (every group has the same size).
    """
    by_doc = {}
    for index, passage in enumerate(passages):
        by_doc.setdefault(passage.doc_id, []).append(index)
    query_ids = [q for q in qrels if any(s >= 1 for s in qrels[q].values())]
    vectors = towers.encode_queries([queries[q].text for q in query_ids], batch_size)
    longest = max(len(v) for v in by_doc.values())
    depth = min(len(passages), num_negatives + 8 + longest * 4)
    found = store.search(vectors, depth)
    groups = []
    skipped = 0
    for query_id, ids in zip(query_ids, found.ids, strict=True):
        ranked = [int(i) for i in ids]
        relevant = {d for d, s in qrels[query_id].items() if s >= 1}
        negatives = [i for i in ranked if passages[i].doc_id not in relevant]
        if len(negatives) < num_negatives:
            skipped += 1
            continue
        for doc_id in sorted(relevant & by_doc.keys()):
            own = set(by_doc[doc_id])
            positive = next((i for i in ranked if i in own), by_doc[doc_id][0])
            groups.append((query_id, positive, negatives[:num_negatives]))
    if skipped:
        logging.warning(
            "%d queries skipped: fewer than %d non-relevant passages found",
            skipped,
            num_negatives,
        )
    return groups


def rerank_loss(kind, logits, group_size):
    """The loss of logits [groups x group_size] (each group: its positive
    first, then its negatives).

    Args:
        kind: "bce" (sigmoid cross-entropy of every pair against 1 for the
            positive, 0 for negatives; CrossEncoder's BinaryCrossEntropyLoss)
            or "listwise" (softmax cross-entropy over each group with the
            positive as the target; a multiple-negatives ranking loss).
        logits: float [groups * group_size].
        group_size: 1 + negatives per group.
    """
    logits = tf.reshape(tf.cast(logits, tf.float32), [-1, group_size])
    if kind == "bce":
        labels = tf.one_hot(tf.zeros(tf.shape(logits)[0], tf.int32), group_size)
        return tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        )
    if kind == "listwise":
        targets = tf.zeros(tf.shape(logits)[0], tf.int32)
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
        )
    raise ValueError(f"rerank loss must be one of {RERANK_LOSSES}, got {kind!r}")


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


def two_stage_metrics(qrels, first_run, reranked_run, names=DEFAULT_METRIC_NAMES):
    """{"<metric>_retrieval": ..., "<metric>_reranked": ...} for `names`."""
    first = retrieval_metrics(qrels, first_run, names)
    second = retrieval_metrics(qrels, reranked_run, names)
    results = {}
    for name in names:
        results[f"{name}_{FIRST_STAGE}"] = first[name]
        results[f"{name}_{SECOND_STAGE}"] = second[name]
    return results
