"""What the text encoders' `encode` shares: the input checks, the prompt
rules and the length-sorted batching of sentence-transformers' `encode`."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.loading import check_vocab_matches_config
from bert_tf.checkpoints.loading import checkpoint_vocabulary
from bert_tf.errors import UserInputError
from bert_tf.text.preprocessing import BertPreprocessor

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


def checkpoint_preprocessor(
    files,
    config,
    path,
    vocab_file=None,
    do_lower_case=None,
    max_seq_length=None,
    asked_length=None,
):
    """The `BertPreprocessor` (padding="longest") of a checkpoint's model.

    Args:
        files: its `CheckpointFiles`; `config` its `BertConfig`; `path` what
            the user named (for messages).
        vocab_file, do_lower_case: given by the user, else the files' own.
        max_seq_length: the length to use (default 128), cut to the model's
            `max_position_embeddings`.
        asked_length: the `max_seq_length` the user gave (checked).

    Raises:
        UserInputError: `asked_length` outside [3, max_position_embeddings].
    """
    vocab_file, options = checkpoint_vocabulary(files, vocab_file, path)
    # Ids past the embedding table would fail on the first such text.
    check_vocab_matches_config(vocab_file, config)
    if do_lower_case is None:
        do_lower_case = files.do_lower_case is not False
    if asked_length is not None and not (
        3 <= asked_length <= config.max_position_embeddings
    ):
        # Cut to the positions without a word, the asked length was not given.
        raise UserInputError(
            f"max_seq_length={asked_length}: must be in [3, "
            f"{config.max_position_embeddings}] (the model's "
            "max_position_embeddings)",
            argument="max_seq_length",
        )
    max_seq_length = min(max_seq_length or 128, config.max_position_embeddings)
    return BertPreprocessor(
        vocab_file, do_lower_case, max_seq_length, padding="longest", **options
    )
