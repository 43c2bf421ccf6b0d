"""The prompt of `encode_query`/`encode_document` and the length-sorted
batching of sentence-transformers' `encode`, for `BertSparseEncoder`
(`text_encoder.py` holds what the dense and multi-vector encoders share)."""

import keras
import numpy as np
import tensorflow as tf

# sentence-transformers' default batch size for encode().
DEFAULT_BATCH_SIZE = 32
# The prompts `encode_document` tries, in sentence-transformers' order.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


def task_prompt_name(prompts, task, prompt_name=None, prompt=None):
    """The prompt name `encode_query` ("query") or `encode_document`
    ("document", else "passage", else "corpus") uses when neither
    `prompt_name` nor `prompt` is given and the model has that prompt."""
    if prompt_name is not None or prompt is not None:
        return prompt_name
    names = ("query",) if task == "query" else DOCUMENT_PROMPT_NAMES
    return next((name for name in names if name in prompts), None)


def encode_in_length_order(
    texts,
    encode_batch,
    width,
    prompt="",
    batch_size=DEFAULT_BATCH_SIZE,
    show_progress_bar=None,
    progress=None,
):
    """float32 [len(texts), width]: `encode_batch` (a string tensor [batch] to
    a [batch, width] tensor) over `texts`, longest first in batches of
    `batch_size` as sentence-transformers sorts them (so each batch pads to
    little), rows back in the order given.

    Args:
        progress: optional callable(done, total) called after each batch.
    """
    output = np.zeros((len(texts), width), np.float32)
    bar = None
    if show_progress_bar:
        bar = keras.utils.Progbar(len(texts), unit_name="sentence")
    # Prompted texts are sorted by length as sentence-transformers does.
    order = np.argsort([-len(prompt + t) for t in texts], kind="stable")
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        batch = tf.constant([texts[i] for i in rows], tf.string)
        output[rows] = encode_batch(batch).numpy()
        done = min(start + batch_size, len(texts))
        if bar is not None:
            bar.update(done)
        if progress is not None:
            progress(done, len(texts))
    return output
