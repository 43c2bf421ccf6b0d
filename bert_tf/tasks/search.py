"""bert-tf-search: queries against an index run_retrieval filled, hits printed with their text.

The index (`bert_tf.retrieval.search_index.SearchIndex`) is opened and
checked before TensorFlow loads; here the model that filled it embeds the
queries, the collection answers by the mode asked (dense, BM25 or hybrid),
and an optional second stage re-orders each query's candidates by its
scores: a cross-encoder (`BertReranker.rank`) or ColBERT's MaxSim
(`MaxSimReranker.rank`). Hits are printed as text for people or as one JSON
object a query (``jsonl``).
"""

import json
import sys
from typing import NamedTuple

from absl import logging

from bert_tf.errors import UserInputError

__all__ = [
    "SearchResult",
    "open_index",
    "rerank_hits",
    "run",
    "search",
    "write_results",
]


class SearchResult(NamedTuple):
    """One query's hits, best first (`Hit`s), and, when re-ranked, each
    hit's first-stage score (None otherwise)."""

    query: str
    hits: list
    first_stage_scores: list | None = None


def rerank_hits(reranker, query, hits, batch_size=32):
    """`hits` ordered by the cross-encoder's score of (query, passage text),
    best first: (`Hit`s carrying those scores, their first-stage scores)."""
    ranked = reranker.rank(query, [hit.passage for hit in hits], batch_size=batch_size)
    order = [r["corpus_id"] for r in ranked]
    reranked = [hits[r["corpus_id"]]._replace(score=float(r["score"])) for r in ranked]
    return reranked, [hits[i].score for i in order]


def search(options, index, queries):
    """Per query, its `SearchResult`: the index's `options.candidates` best
    passages, re-ranked with `options.rerank_checkpoint`, cut to
    `options.top_k` (the first stage's `top_k` when the cross-encoder's
    recorded verdict says it re-ranks worse: `rerank_verdict.second_stage`).

    Args:
      options: a `SearchOptions`.
      index: the opened `SearchIndex`.
      queries: the query texts.
    """
    from bert_tf.retrieval.rerank_verdict import second_stage

    mode = index.check_mode(options.retrieval_mode)
    sides = index.sides(mode)
    towers = index.load_towers() if "dense" in sides else None
    splade = index.load_splade() if "splade" in sides else None
    rerank_checkpoint = second_stage(
        options.rerank_checkpoint, options.rerank_even_if_worse, "bert-tf-search"
    )
    reranks = bool(rerank_checkpoint or options.rerank_multi_vector)
    depth = options.candidates if reranks else options.top_k
    found = index.search(queries, depth, mode, towers, splade=splade)
    if not reranks:
        return [
            SearchResult(query, hits[: options.top_k])
            for query, hits in zip(queries, found, strict=True)
        ]
    if options.rerank_multi_vector:
        from bert_tf.retrieval.max_sim_reranker import MaxSimReranker

        reranker = MaxSimReranker.from_checkpoint(options.rerank_multi_vector)
    else:
        from bert_tf.models.bert_reranker import BertReranker

        reranker = BertReranker.from_checkpoint(rerank_checkpoint)
    results = []
    for query, hits in zip(queries, found, strict=True):
        reranked, first = rerank_hits(reranker, query, hits)
        results.append(
            SearchResult(query, reranked[: options.top_k], first[: options.top_k])
        )
    return results


def _hit_object(rank, hit, first_stage_score):
    obj = {"rank": rank, "id": hit.id, "doc_id": hit.doc_id, "score": hit.score}
    if first_stage_score is not None:
        obj["first_stage_score"] = first_stage_score
    if hit.text is not None:
        obj["title"] = hit.title
        obj["text"] = hit.text
    return obj


def write_results(results, output_format, out):
    """Prints `results` (`SearchResult`s) to `out`: ``text`` or ``jsonl``."""
    for result in results:
        firsts = result.first_stage_scores or [None] * len(result.hits)
        objects = [
            _hit_object(rank, hit, first)
            for rank, (hit, first) in enumerate(
                zip(result.hits, firsts, strict=True), start=1
            )
        ]
        if output_format == "jsonl":
            out.write(
                json.dumps({"query": result.query, "hits": objects}, ensure_ascii=False)
                + "\n"
            )
            continue
        out.write(f"query: {result.query}\n")
        if not objects:
            out.write("  (no passages)\n")
        for obj in objects:
            score = f"{obj['score']:.4f}"
            if "first_stage_score" in obj:
                score += f" (first stage {obj['first_stage_score']:.4f})"
            document = (
                "" if obj["doc_id"] == obj["id"] else f"  document {obj['doc_id']}"
            )
            out.write(f"{obj['rank']:>3}. {score}  {obj['id']}{document}\n")
            if obj.get("title"):
                out.write(f"     {obj['title']}\n")
            if "text" in obj:
                out.write(f"     {obj['text']}\n")
        out.write("\n")


def open_index(options):
    """The `SearchIndex` of `options` (a `SearchOptions`), checked to answer
    what they ask (no TensorFlow: a bad index is reported at once)."""
    from bert_tf.retrieval.search_index import SearchIndex

    index = SearchIndex(options.index, options.collection, options.model)
    try:
        index.check_mode(options.retrieval_mode)
        reranker = options.rerank_checkpoint or options.rerank_multi_vector
        if reranker and not index.store.stores_text:
            flag = (
                "rerank_checkpoint"
                if options.rerank_checkpoint
                else "rerank_multi_vector"
            )
            raise UserInputError(
                f"{flag}: {index.uri} collection "
                f"{index.collection!r} keeps no passage texts to re-rank "
                "(indexed before they were kept): re-index it with run_retrieval "
                "--do_index --overwrite_index",
                argument=flag,
            )
    except Exception:
        index.close()
        raise
    return index


def run(options, index, queries, out=None):
    """bert-tf-search: searches `queries` in `index` (`open_index`; closed
    at the end), prints the hits to `out` (default stdout); returns the
    `SearchResult`s."""
    out = out or sys.stdout
    with index:
        if not index.store.stores_text:
            logging.warning(
                "%s collection %r keeps no passage texts (indexed before they "
                "were kept): ids and scores only; re-index with run_retrieval "
                "--do_index --overwrite_index to show them",
                index.uri,
                index.collection,
            )
        results = search(options, index, queries)
    write_results(results, options.output_format, out)
    out.flush()
    return results
