"""What the text encoders' `encode` shares: the input checks, the prompt
rules and the length-sorted batching of sentence-transformers' `encode`."""

import keras
import numpy as np
import tensorflow as tf

# sentence-transformers' default batch size for encode().
DEFAULT_BATCH_SIZE = 32
# The prompts `encode_document` tries, in sentence-transformers' order.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


def checked_texts(sentences):
    """`(texts, single)`: `sentences` as a list of str, and whether one str
    was given (encode then returns one row).

    Raises:
        TypeError: a sentence that is not a str (bytes, None, ...).
    """
    single = isinstance(sentences, str)
    texts = [sentences] if single else list(sentences)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"sentences[{index}] is {type(text).__name__}, not str "
                "(decode bytes first; None has no text)"
            )
    return texts, single


def check_batch_size(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")


def resolve_prompt(prompts, default_prompt_name, prompt=None, prompt_name=None):
    """The prompt text `encode` prepends: `prompt`, else
    `prompts[prompt_name]`, else the default prompt's, else ""
    (sentence-transformers' rule)."""
    if prompt is not None:
        if not isinstance(prompt, str):
            raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
        return prompt
    if prompt_name is not None:
        if prompt_name not in prompts:
            raise ValueError(
                f"prompt_name={prompt_name!r} is not one of the model's prompts "
                f"{sorted(prompts)}"
            )
        return prompts[prompt_name]
    if default_prompt_name is not None:
        return prompts.get(default_prompt_name) or ""
    return ""


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
