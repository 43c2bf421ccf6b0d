"""SPLADE vectors for Milvus: `BertSparseEncoder` weights as {vocabulary id: weight}.

The retrieval floor's side of the SPLADE model: the documents' vectors
(`encode_document`) are stored in a SPARSE_FLOAT_VECTOR field and searched
by inner product with the queries' (`encode_query`), which is the model's
own dot-product similarity.
"""

import numpy as np

from bert_tf.retrieval.encoder_fingerprint import encoder_fingerprint

# Texts per `encode_*` call here: a [texts, vocabulary] float32 block stays
# small (256 x 30,522 x 4 bytes: 31 MB) whatever the caller's batch.
_CHUNK = 256

__all__ = ["load_splade", "sparse_rows", "splade_fingerprint", "splade_vectors"]


def sparse_rows(weights):
    """Per row of float [n, vocabulary] `weights`, its nonzero entries as
    {int id: float weight} (what Milvus takes for a sparse vector)."""
    weights = np.asarray(weights, np.float32)
    rows = []
    for row in weights:
        (ids,) = np.nonzero(row)
        rows.append({int(i): float(row[i]) for i in ids})
    return rows


def splade_vectors(encoder, texts, task, batch_size=32):
    """The SPLADE vectors ({id: weight}) of `texts`: `encoder`'s
    `encode_query` (`task` "query") or `encode_document` ("document")."""
    encode = encoder.encode_query if task == "query" else encoder.encode_document
    texts = list(texts)
    rows = []
    for start in range(0, len(texts), _CHUNK):
        chunk = texts[start : start + _CHUNK]
        rows.extend(sparse_rows(encode(chunk, batch_size=batch_size)))
    return rows


def splade_fingerprint(encoder):
    """A short hash of what a document's SPLADE vector depends on: the
    model's weights, settings (pooling, activation, routes, prompts,
    max_active_dims) and tokenization."""
    # SPLADE never reads the tanh pooler (`reads_pooled_output`); a
    # SparseEncoder directory has none, so it is drawn at random.
    return encoder_fingerprint(encoder, unread=("pooler",))


def load_splade(path, max_seq_length=None):
    """The `BertSparseEncoder` of a SparseEncoder directory (--splade_checkpoint)."""
    from bert_tf.models.bert_sparse_encoder import BertSparseEncoder

    kwargs = {"max_seq_length": max_seq_length} if max_seq_length else {}
    return BertSparseEncoder.from_checkpoint(path, **kwargs)
