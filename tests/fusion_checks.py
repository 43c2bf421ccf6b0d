"""Fusion computed by hand from each side's own results, as Milvus's rankers
define it: the checker of hybrid search (BM25 + dense, SPLADE + dense)."""

import math

import numpy as np
import pytest


def assert_rrf(sides, fused, top_k, rrf_k=60):
    """`fused` (one query's `hybrid_search` ids, scores) is the RRF of
    `sides` (each side's (ids, scores)): sum over the sides of 1 / (k +
    rank), ranks from 1. Returns the passages the sides share."""
    expected = {}
    for ids, _ in sides:
        for rank, pid in enumerate(ids, start=1):
            expected[pid] = expected.get(pid, 0.0) + 1 / (rrf_k + rank)
    ids, scores = fused
    np.testing.assert_allclose(
        scores, sorted(expected.values(), reverse=True)[:top_k], rtol=1e-5
    )
    assert all(
        expected[pid] == pytest.approx(s, rel=1e-5)
        for pid, s in zip(ids, scores, strict=True)
    )
    shared = set(sides[0][0])
    for side_ids, _ in sides[1:]:
        shared &= set(side_ids)
    return shared


def assert_weighted(sides, weights, fused):
    """`fused` is the weighted sum of `sides`' scores, each inner product
    normalized by Milvus to 0.5 + atan(x) / pi."""
    expected = {}
    for weight, (ids, scores) in zip(weights, sides, strict=True):
        for pid, score in zip(ids, scores, strict=True):
            norm = 0.5 + math.atan(score) / math.pi
            expected[pid] = expected.get(pid, 0.0) + weight * norm
    for pid, score in zip(*fused, strict=True):
        assert expected[pid] == pytest.approx(score, rel=1e-4)
