"""Training examples of a dual encoder: (query, relevant document) pairs and hard negatives mined by an encoder."""

from absl import logging

from bert_tf.errors import UserInputError
from bert_tf.retrieval.vector_store import StoredPassage

__all__ = ["mine", "training_pairs"]


def training_pairs(qrels, passages):
    """[(query id, doc id)] of every relevant judgement, file order."""
    doc_ids = {p.doc_id for p in passages}
    pairs = []
    for query_id, judged in qrels.items():
        for doc_id, score in judged.items():
            if score >= 1 and doc_id in doc_ids:
                pairs.append((query_id, doc_id))
    if not pairs:
        raise UserInputError(
            "qrels=: no relevant (score >= 1) judgement of a corpus document"
        )
    return pairs


def mine(towers, pairs, queries, qrels, passages, hard_negatives, batch_size=64):
    """Per pair: the positive passage (the document's best for the query) and
    up to `hard_negatives` passages of non-relevant documents, ranked by
    `towers`. Without hard negatives and one passage per document: the
    document's passage, nothing embedded."""
    from bert_tf.retrieval.exact_store import ExactStore

    by_doc = {}
    for index, p in enumerate(passages):
        by_doc.setdefault(p.doc_id, []).append(index)
    if not hard_negatives and all(len(v) == 1 for v in by_doc.values()):
        return [(by_doc[d][0], []) for _, d in pairs]
    logging.info(
        "Mining with the starting encoder: embedding %d passages", len(passages)
    )
    store = ExactStore(towers.embedding_dim, metric="IP")
    store.upsert(
        [StoredPassage(str(i), p.doc_id, "") for i, p in enumerate(passages)],
        towers.encode_documents([p.text for p in passages], batch_size),
    )
    query_ids = sorted({q for q, _ in pairs})
    query_vectors = towers.encode_queries(
        [queries[q].text for q in query_ids], batch_size
    )
    depth = min(len(passages), hard_negatives * 4 + 32 + max(map(len, by_doc.values())))
    found = store.search(query_vectors, depth)
    ranked = dict(zip(query_ids, found.ids, strict=True))
    mined = []
    for query_id, doc_id in pairs:
        rows = [int(r) for r in ranked[query_id]]
        own = set(by_doc[doc_id])
        positive = next((r for r in rows if r in own), by_doc[doc_id][0])
        relevant = {d for d, s in qrels[query_id].items() if s >= 1}
        negatives = [r for r in rows if passages[r].doc_id not in relevant]
        mined.append((positive, negatives[:hard_negatives]))
    return mined
