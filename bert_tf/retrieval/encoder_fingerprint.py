"""The fingerprint a Milvus collection records of the model that wrote its
vectors, so that an index is never extended or searched with another one."""

import hashlib

import numpy as np

__all__ = ["encoder_fingerprint"]


def encoder_fingerprint(encoder, unread=()):
    """A short hash of what `encoder`'s vectors depend on: its weights, its
    settings (`task_arguments()`: pooling, normalisation, prompts...) and its
    tokenization. Weights whose path holds one of `unread` are left out (a
    layer the vectors never read, drawn at random on each load)."""
    digest = hashlib.sha256()
    preprocessor = encoder.preprocessor
    settings = (
        encoder.task_arguments(),
        preprocessor.do_lower_case,
        preprocessor.seq_length,
    )
    if preprocessor.strip_accents != bool(preprocessor.do_lower_case) or (
        not preprocessor.tokenize_chinese_chars
    ):  # only then: indexes of the original's tokenization keep their hash
        settings += (
            preprocessor.strip_accents,
            preprocessor.tokenize_chinese_chars,
        )
    digest.update(repr(settings).encode())
    digest.update(preprocessor._require_vocabulary())
    # Values and shapes in the model's order, not variable paths: Keras
    # numbers the names of a second model built in one process.
    for weight in encoder.weights:
        if any(part in weight.path for part in unread):
            continue
        value = np.ascontiguousarray(weight.numpy())
        digest.update(repr(value.shape).encode())
        digest.update(value.tobytes())
    return digest.hexdigest()[:16]
