"""A prompt in a LiteRT file: its word pieces before each text's.

LiteRT has no StringJoin, so a text signature cannot prepend the prompt to
the string; prepending the prompt's word pieces gives the same ids when the
prompt ends at a word boundary (a space or punctuation), which is checked.
"""

import tensorflow as tf

from bert_tf.text import tokenization


def litert_prompt_ids(preprocessor, prompt):
    """The word-piece ids of `prompt` ([] for none) in `preprocessor`'s
    vocabulary (a `LiteRTPreprocessor`).

    Raises:
        ValueError: the prompt does not end with a space or punctuation.

    Example:

    ```python
    ids = litert_prompt_ids(litert_preprocessor, "query: ")
    ```
    """
    if not prompt:
        return []
    last = prompt[-1]
    if not (last.isspace() or tokenization._is_punctuation(last)):
        raise ValueError(
            f"the model's prompt {prompt!r} does not end with a space or "
            "punctuation: the LiteRT export cannot prepend it (export a SavedModel)"
        )
    tokenizer = tokenization.FullTokenizer(
        preprocessor.vocab_file, preprocessor.do_lower_case
    )
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(prompt))


def with_prompt_ids(tokenized, prompt_ids):
    """`(ids, lengths)` of a `LiteRTPreprocessor.tokenize` result with
    `prompt_ids` before each row's tokens."""
    ids, lengths = tokenized[0], tokenized[1]
    if not prompt_ids:
        return ids, lengths
    prompt = tf.tile(
        tf.constant([prompt_ids], tf.int64), tf.stack([tf.shape(ids)[0], 1])
    )
    return tf.concat([prompt, ids], axis=1), lengths + len(prompt_ids)
