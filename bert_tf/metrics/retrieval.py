"""The standard BEIR retrieval metrics in plain Python: recall@k, MRR@k, nDCG@k.

The definitions BEIR reports (through trec_eval, and its own MRR), which
agree with pytrec_eval (tested):

- ``recall@k``: relevant documents (qrels score >= 1) among the first k, over
  all relevant documents of the query (trec_eval ``recall.k``);
- ``mrr@k``: 1 / rank of the first relevant document among the first k, 0
  without one (BEIR's ``MRR@k``, trec_eval ``recip_rank`` of the top k);
- ``ndcg@k``: sum of graded gains (the qrels score) / log2(rank + 1) over the
  first k, divided by the same sum for the ideal order of the judged documents
  (trec_eval ``ndcg_cut.k``).

Each is the mean over the queries of the qrels; a query without results
counts as 0. Ranks follow trec_eval: score descending, ties broken by
document id descending.
"""

import math

__all__ = [
    "DEFAULT_METRIC_NAMES",
    "metric_names_within",
    "rank_documents",
    "retrieval_metrics",
]

# The metrics run_retrieval.py writes, in this order.
DEFAULT_METRIC_NAMES = (
    "recall@1",
    "recall@5",
    "recall@10",
    "recall@100",
    "mrr@10",
    "ndcg@10",
)


def metric_names_within(depth, names=DEFAULT_METRIC_NAMES):
    """The `names` whose cut-off a run `depth` documents deep can compute,
    and the names it cannot (recall@100 of a top-10 run would silently equal
    recall@10).

    >>> metric_names_within(10)
    (('recall@1', 'recall@5', 'recall@10', 'mrr@10', 'ndcg@10'), ('recall@100',))
    """
    within = tuple(name for name in names if _metric(name)[1] <= depth)
    return within, tuple(name for name in names if name not in within)


def rank_documents(scores):
    """[(doc id, score)] best first, in trec_eval's order, from {doc id: score}."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def _metric(name):
    try:
        kind, k = name.split("@")
        k = int(k)
    except ValueError:
        raise ValueError(f"metric {name!r}: expected e.g. recall@10") from None
    if kind not in ("recall", "mrr", "ndcg") or k < 1:
        raise ValueError(f"metric {name!r}: expected recall@k, mrr@k or ndcg@k")
    return kind, k


def _query_metric(kind, k, judged, ranked_ids):
    top = ranked_ids[:k]
    if kind == "recall":
        relevant = {doc for doc, rel in judged.items() if rel >= 1}
        if not relevant:
            return 0.0
        return sum(doc in relevant for doc in top) / len(relevant)
    if kind == "mrr":
        for rank, doc in enumerate(top, start=1):
            if judged.get(doc, 0) >= 1:
                return 1.0 / rank
        return 0.0
    gains = [max(judged.get(doc, 0), 0) for doc in top]
    dcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(gains, start=1))
    ideal = sorted((max(rel, 0) for rel in judged.values()), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def retrieval_metrics(qrels, run, names=DEFAULT_METRIC_NAMES):
    """Mean metrics of a run over the queries of `qrels`.

    Args:
      qrels: {query id: {doc id: graded relevance}} (`read_qrels`).
      run: {query id: {doc id: score}}; queries of the qrels missing from it
        count as 0.
      names: metric names, e.g. ``("recall@10", "mrr@10", "ndcg@10")``.

    Returns:
      {name: mean value}, in the order of `names`.

    Example:

    >>> qrels = {"q": {"d2": 1}}
    >>> run = {"q": {"d1": 0.9, "d2": 0.8}}
    >>> retrieval_metrics(qrels, run, ("recall@1", "recall@2", "mrr@10"))
    {'recall@1': 0.0, 'recall@2': 1.0, 'mrr@10': 0.5}
    """
    parsed = [(name, *_metric(name)) for name in names]
    totals = {name: 0.0 for name in names}
    for query_id, judged in qrels.items():
        ranked_ids = [doc for doc, _ in rank_documents(run.get(query_id, {}))]
        for name, kind, k in parsed:
            totals[name] += _query_metric(kind, k, judged, ranked_ids)
    count = max(len(qrels), 1)
    return {name: total / count for name, total in totals.items()}
