"""Quantized passage vectors: int8 with a per-dimension scale fitted on the corpus, binary by sign.

Bytes per passage at dimension d (the vector index only): float32 4d (1,536
at 384), int8 d (384) plus the scale once per collection, binary d / 8 (48).
Rescoring (``rescore_k``) keeps each passage's float32 vector beside it, in
a scalar field Milvus does not index (a server can memory-map it to disk):
4d more bytes per passage, read only for the shortlist.

int8: code = round(x / scale) clipped to [-127, 127], scale[i] = the
largest |x[i]| over the corpus / 127. The inner product of a query q with a
passage is then about sum q[i] scale[i] code[i]: the query side is q x scale,
quantized to int8 on its own (one factor per query, which changes no
ranking), as Milvus's INT8_VECTOR search takes it. Binary: bit i is set
where x[i] > 0; passages are ranked by Hamming distance to the query's bits
(score: minus the distance).
"""

import numpy as np

VECTOR_TYPES = ("float32", "int8", "binary")
INT8_MAX = 127

__all__ = [
    "INT8_MAX",
    "VECTOR_TYPES",
    "binary_signs",
    "fit_int8_scale",
    "int8_codes",
    "int8_queries",
]


def fit_int8_scale(vectors):
    """float32 [dim]: the per-dimension scale of `vectors` [rows, dim]
    (their largest magnitude / 127; 1 for an all-zero dimension)."""
    peak = np.abs(np.asarray(vectors, np.float32)).max(axis=0)
    return np.where(peak > 0, peak / INT8_MAX, 1.0).astype(np.float32)


def int8_codes(vectors, scale):
    """int8 [rows, dim]: `vectors` in units of `scale`, rounded and clipped."""
    codes = np.rint(np.asarray(vectors, np.float32) / scale)
    return np.clip(codes, -INT8_MAX, INT8_MAX).astype(np.int8)


def int8_queries(queries, scale):
    """int8 [rows, dim]: each query x scale, scaled to use the int8 range."""
    weighted = np.asarray(queries, np.float32) * scale
    peak = np.abs(weighted).max(axis=1, keepdims=True)
    return int8_codes(weighted, np.where(peak > 0, peak / INT8_MAX, 1.0))


def binary_signs(vectors):
    """bool [rows, dim]: which components are positive (the binary code)."""
    return np.asarray(vectors, np.float32) > 0
