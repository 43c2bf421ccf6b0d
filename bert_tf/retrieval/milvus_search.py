"""Searches of a `MilvusStore`: dense (with rescoring), BM25, SPLADE and hybrid."""

import numpy as np

from bert_tf.retrieval import quantized_vectors
from bert_tf.retrieval.bm25 import NO_TERM
from bert_tf.retrieval.milvus_connection import is_server
from bert_tf.retrieval.milvus_schema import FLOAT_FIELD
from bert_tf.retrieval.milvus_schema import MAX_TOP_K
from bert_tf.retrieval.milvus_schema import SPARSE_FIELD
from bert_tf.retrieval.milvus_schema import SPLADE_FIELD
from bert_tf.retrieval.milvus_schema import VECTOR_FIELD
from bert_tf.retrieval.vector_store import FUSIONS
from bert_tf.retrieval.vector_store import HYBRID_SIDES
from bert_tf.retrieval.vector_store import SearchResults

# Queries of one search request, at most; and hits (queries x limit) of one
# answer. Milvus's gRPC messages stop at 256 MB: an evaluation asks a deep
# limit (top k x the most passages of one document, up to 16,384), and 256
# such hybrid queries on SQuAD made a 475 MB answer (about 110 bytes a hit).
# 2**18 hits keep an answer near 30 MB.
_SEARCH_BATCH = 256
_HITS_PER_REQUEST = 1 << 18


def _batch_size(limit):
    """Queries of one request that asks `limit` hits for each."""
    return max(1, min(_SEARCH_BATCH, _HITS_PER_REQUEST // max(1, int(limit))))


__all__ = ["MilvusSearch"]


class MilvusSearch:
    """`MilvusStore`'s searches: `search`, `search_lexical`, `search_splade`,
    `hybrid_search`.

    A mixin of `MilvusStore`: it uses the store's client, settings, rows
    (`_rows_of`), `_call` and `_error`.
    """

    def _dense_queries(self, queries):
        """The query side of the searched field (see `vector_type`)."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dimension:
            raise self._error(
                f"queries of shape {queries.shape}, the collection "
                f"holds dimension {self.dimension}"
            )
        if self.vector_type == "int8":
            codes = quantized_vectors.int8_queries(queries, self.int8_scale)
            return list(codes if is_server(self.uri) else codes.astype(np.float32))
        if self.vector_type == "binary":
            bits = quantized_vectors.binary_signs(queries)
            if is_server(self.uri):
                return [row.tobytes() for row in np.packbits(bits, 1)]
            return list(np.where(bits, 1.0, -1.0).astype(np.float32))
        return list(queries)

    def _dense_score(self, distance):
        """Higher is better: minus an L2 distance or a Hamming distance."""
        if self.vector_type == "binary":
            # Milvus Lite's inner product of +-1 vectors is dim - 2 x Hamming.
            if is_server(self.uri):
                return -distance
            return -(self.dimension - distance) / 2
        return -distance if self.metric == "L2" else distance

    def _searches(self, what, data, top_k, progress=None, **kwargs):
        """Per query, [(id, distance)]: `data` searched in batches;
        `progress` (if any) called with the count of queries searched."""
        found = []
        limit = min(int(top_k), MAX_TOP_K)
        batch = _batch_size(limit)
        for start in range(0, len(data), batch):
            hits = self._call(
                what,
                self._client.search,
                self.collection,
                data=data[start : start + batch],
                limit=limit,
                output_fields=[],
                **kwargs,
            )
            found.extend(
                [(hit["id"], float(hit["distance"])) for hit in query_hits]
                for query_hits in hits
            )
            if progress:
                progress(len(found))
        return found

    def _params(self, top_k):
        """The index's search parameters for `top_k` results: HNSW explores
        `ef` candidates, so fewer than `top_k` would return fewer (an
        evaluation asks top k x the most passages of a document, often more
        than --hnsw_ef)."""
        params = dict(self.search_params)
        if "ef" in params:
            params["ef"] = max(params["ef"], min(int(top_k), MAX_TOP_K))
        return params

    def search(self, queries, top_k, progress=None, rescore_k=None):
        """See `VectorStore.search`; a quantized collection with `rescore_k`
        (default: the store's) orders its `rescore_k` best by the float32
        vectors, and scores them so."""
        if not self.dense:
            raise self._error("holds no dense vectors (BM25 only)")
        rescore_k = self.rescore_k if rescore_k is None else int(rescore_k)
        data = self._dense_queries(queries)
        _, _, metric, _ = self._vector_schema()
        depth = max(top_k, rescore_k) if self.quantized else top_k
        found = self._searches(
            "searching",
            data,
            depth,
            progress,
            anns_field=VECTOR_FIELD,
            search_params={"metric_type": metric, "params": self._params(depth)},
        )
        if self.quantized and rescore_k:
            return self._rescored(np.asarray(queries, np.float32), found, top_k)
        return SearchResults(
            [[pid for pid, _ in hits] for hits in found],
            [[self._dense_score(d) for _, d in hits] for hits in found],
        )

    def _float_vectors(self, passage_ids):
        """{passage id: float32 vector} of the quantized rows asked for."""
        vectors = {}
        rows = self._rows_of("reading float vectors", passage_ids, [FLOAT_FIELD])
        for row in rows:
            vectors[row["id"]] = np.asarray(row[FLOAT_FIELD], np.float32)
        return vectors

    def _rescored(self, queries, found, top_k):
        from bert_tf.retrieval.exact_search import similarity_scores

        vectors = self._float_vectors(pid for hits in found for pid, _ in hits)
        ids, scores = [], []
        for query, hits in zip(queries, found, strict=True):
            shortlist = [pid for pid, _ in hits]
            if not shortlist:
                ids.append([])
                scores.append([])
                continue
            exact = similarity_scores(
                query[None], np.stack([vectors[pid] for pid in shortlist]), self.metric
            ).numpy()[0]
            order = np.argsort(-exact, kind="stable")[:top_k]
            ids.append([shortlist[i] for i in order])
            scores.append([float(exact[i]) for i in order])
        return SearchResults(ids, scores)

    def _lexical_request(self, queries):
        """(data, search params) of BM25 queries: sparse vectors, or texts for
        Milvus's BM25 function. A query without words asks for `NO_TERM`,
        which no passage has (Milvus refuses an empty sparse vector)."""
        if self.bm25_function:
            return list(queries), {"metric_type": "BM25", "params": {}}
        data = [q if q else {NO_TERM: 1.0} for q in queries]
        return data, {"metric_type": "IP", "params": {}}

    def search_lexical(self, queries, top_k, progress=None):
        """BM25: the `top_k` best passages of each query, `SearchResults`.

        Args:
          queries: per query, its sparse vector (`bm25.query_vector`), or
            its text with `bm25_function`.
          top_k: passages per query.
          progress: called with the count of queries searched so far.
        """
        if not self.lexical:
            raise self._error(
                "holds no BM25 vectors; index it with "
                "retrieval_mode=bm25 or hybrid (or overwrite=True)"
            )
        data, params = self._lexical_request(queries)
        return self._sparse_searches(
            "searching BM25", SPARSE_FIELD, data, params, top_k, progress
        )

    def search_splade(self, queries, top_k, progress=None):
        """SPLADE: the `top_k` best passages of each query by the inner
        product of its SPLADE vector with the passages', `SearchResults`.

        Args:
          queries: per query, its SPLADE vector ({vocabulary id: weight},
            `BertSparseEncoder.encode_query`'s nonzero entries).
          top_k: passages per query.
          progress: called with the count of queries searched so far.
        """
        if not self.splade:
            raise self._error(
                "holds no SPLADE vectors; index it with retrieval_mode=splade "
                "and a splade_checkpoint (or overwrite=True)"
            )
        data, params = self._splade_request(queries)
        return self._sparse_searches(
            "searching SPLADE", SPLADE_FIELD, data, params, top_k, progress
        )

    @staticmethod
    def _splade_request(queries):
        """(data, search params) of SPLADE queries (an empty one as BM25's)."""
        data = [q if q else {NO_TERM: 1.0} for q in queries]
        return data, {"metric_type": "IP", "params": {}}

    def _sparse_searches(self, what, field, data, params, top_k, progress):
        """The search of a sparse field (BM25's or SPLADE's): inner product
        (or Milvus's BM25), scores as Milvus gives them."""
        found = self._searches(
            what, data, top_k, progress, anns_field=field, search_params=params
        )
        return SearchResults(
            [[pid for pid, _ in hits] for hits in found],
            [[d for _, d in hits] for hits in found],
        )

    def hybrid_search(
        self,
        queries,
        lexical_queries,
        top_k,
        fusion="rrf",
        rrf_k=60,
        weights=(0.5, 0.5),
        progress=None,
        splade_queries=None,
        sides=("dense", "bm25"),
    ):
        """The results of two or three sides fused by Milvus's `hybrid_search`.

        Each side finds its `top_k` best passages; Milvus fuses them with
        reciprocal rank fusion (score: sum of 1 / (rrf_k + rank)) or a
        weighted sum of each side's scores normalized by Milvus (arctan to
        [0, 1]).

        Args:
          queries: float [num_queries, dim], the query tower's vectors
            (None without the dense side).
          lexical_queries: per query, as `search_lexical`'s (None without
            the BM25 side).
          top_k: passages per query.
          fusion: ``"rrf"`` or ``"weighted"``.
          rrf_k: RRF's k (60, Milvus's and the paper's default).
          weights: the weights of ``"weighted"``, one per side, in `sides`'
            order.
          progress: called with the count of queries searched so far.
          splade_queries: per query, as `search_splade`'s (the SPLADE side).
          sides: which of ``dense``, ``bm25``, ``splade`` are fused (two or
            three, in `HYBRID_SIDES` order).

        Returns:
          `SearchResults`, best first.
        """
        from pymilvus import AnnSearchRequest
        from pymilvus import RRFRanker
        from pymilvus import WeightedRanker

        sides = tuple(sides)
        if len(sides) < 2 or not set(sides) <= set(HYBRID_SIDES):
            raise ValueError(f"sides={sides}: two or three of {HYBRID_SIDES}")
        held = {"dense": self.dense, "bm25": self.lexical, "splade": self.splade}
        missing = [side for side in sides if not held[side]]
        if missing:
            raise self._error(
                f"hybrid search of {'+'.join(sides)} needs {', '.join(missing)} "
                "vectors; index with retrieval_mode=hybrid and those "
                "hybrid_sides (or overwrite=True)"
            )
        if fusion not in FUSIONS:
            raise ValueError(f"fusion={fusion!r}: expected one of {FUSIONS}")
        if fusion == "weighted" and len(weights) != len(sides):
            raise ValueError(f"{len(weights)} weights for {len(sides)} sides")
        limit = min(int(top_k), MAX_TOP_K)
        sent = {}  # side: (data, field, search params)
        if "dense" in sides:
            _, _, metric, _ = self._vector_schema()
            params = {"metric_type": metric, "params": self._params(top_k)}
            sent["dense"] = (self._dense_queries(queries), VECTOR_FIELD, params)
        if "bm25" in sides:
            data, params = self._lexical_request(lexical_queries)
            sent["bm25"] = (data, SPARSE_FIELD, params)
        if "splade" in sides:
            data, params = self._splade_request(splade_queries)
            sent["splade"] = (data, SPLADE_FIELD, params)
        counts = {len(sent[side][0]) for side in sides}
        if len(counts) != 1:
            raise ValueError(f"the sides hold different numbers of queries: {counts}")
        num_queries = counts.pop()
        ranker = RRFRanker(rrf_k) if fusion == "rrf" else WeightedRanker(*weights)
        ids, scores = [], []
        batch = _batch_size(limit)
        for start in range(0, num_queries, batch):
            end = start + batch
            requests = [
                AnnSearchRequest(
                    sent[side][0][start:end], sent[side][1], sent[side][2], limit
                )
                for side in sides
            ]
            hits = self._call(
                "hybrid searching",
                self._client.hybrid_search,
                self.collection,
                requests,
                ranker,
                limit=limit,
                output_fields=[],
            )
            for query_hits in hits:
                ids.append([hit["id"] for hit in query_hits])
                scores.append([float(hit["distance"]) for hit in query_hits])
            if progress:
                progress(len(ids))
        return SearchResults(ids, scores)
