"""`TextEncoderMixin`: what the text-embedding models share.

`BertSentenceEncoder` (one vector per text) and `BertMultiVectorEncoder` (one
per token) both carry a preprocessor in their config, an optional Dense after
the encoder, sentence-transformers' prompts and `truncate_dim`; the pieces
here are written once for both.
"""

import keras

from bert_tf.checkpoints.loading import check_vocab_matches_config
from bert_tf.checkpoints.loading import checkpoint_vocabulary
from bert_tf.checkpoints.name_map import encoder_variables
from bert_tf.checkpoints.sentence_transformers_checkpoint import DENSE_BIAS
from bert_tf.checkpoints.sentence_transformers_checkpoint import DENSE_KERNEL
from bert_tf.errors import UserInputError
from bert_tf.text.preprocessing import BertPreprocessor


class TextEncoderMixin:
    """Config, Dense variables, prompt and `truncate_dim` rules of a task
    model with `preprocessor`, `dense` (a Keras Dense or None),
    `dense_use_bias`, `prompts`, `default_prompt_name` and `model_dim`.

    Listed before `BertTaskModel` among the bases, so its `get_config` adds
    the preprocessor to the task model's.

    Example:

    ```python
    class BertSomeEncoder(TextEncoderMixin, BertTaskModel): ...
    ```
    """

    def get_config(self):
        config = super().get_config()
        if self.preprocessor is not None:
            config["preprocessor"] = keras.saving.serialize_keras_object(
                self.preprocessor
            )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("preprocessor") is not None:
            config["preprocessor"] = keras.saving.deserialize_keras_object(
                config["preprocessor"]
            )
        return super().from_config(config)

    def checkpoint_variables(self):
        names = encoder_variables(self.encoder)
        if self.dense is not None:
            names[DENSE_KERNEL] = self.dense.kernel
            if self.dense_use_bias:
                names[DENSE_BIAS] = self.dense.bias
        return names

    def _checked_truncate_dim(self, truncate_dim):
        if truncate_dim is None:
            return None
        if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int):
            raise TypeError(f"truncate_dim must be an int, got {truncate_dim!r}")
        if not 0 < truncate_dim <= self.model_dim:
            raise ValueError(
                f"truncate_dim={truncate_dim} must be in 1..{self.model_dim} (the "
                "model's vector width)"
            )
        return truncate_dim

    def resolve_prompt(self, prompt=None, prompt_name=None):
        """The prompt text `encode` prepends: `prompt`, else
        `prompts[prompt_name]`, else the default prompt's, else ""
        (sentence-transformers' rule)."""
        if prompt is not None:
            if not isinstance(prompt, str):
                raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
            return prompt
        if prompt_name is not None:
            if prompt_name not in self.prompts:
                raise ValueError(
                    f"prompt_name={prompt_name!r} is not one of the model's prompts "
                    f"{sorted(self.prompts)}"
                )
            return self.prompts[prompt_name]
        if self.default_prompt_name is not None:
            return self.prompts.get(self.default_prompt_name) or ""
        return ""


def projection_layers(
    dense_units, activation, use_bias, normalize, normalize_before_dense, names
):
    """`(before, dense, last)`: the layers after the encoder (or pooling)
    that sentence-transformers' Normalize, Dense, Normalize modules are, any
    of the first two None. The normalisations and `last` run in float32
    whatever the policy (as sentence-transformers returns float32).

    Args:
        names: the Keras names of the normalisation before the Dense, of the
            last one, and of `last` without normalisation (a linear
            activation); kept as they are, `.keras` files load by them.

    Raises:
        ValueError: `normalize_before_dense` without `dense_units`.
    """
    if normalize_before_dense and not dense_units:
        raise ValueError("normalize_before_dense needs dense_units")
    before = dense = None
    if normalize_before_dense:
        before = keras.layers.UnitNormalization(dtype="float32", name=names[0])
    if dense_units:
        dense = keras.layers.Dense(
            dense_units, activation=activation, use_bias=use_bias, name="dense"
        )
    if normalize:
        last = keras.layers.UnitNormalization(dtype="float32", name=names[1])
    else:
        last = keras.layers.Activation("linear", dtype="float32", name=names[2])
    return before, dense, last


def check_default_prompt(prompts, default_prompt_name):
    """Raises ValueError unless `default_prompt_name` is None or a key of
    `prompts`."""
    if default_prompt_name is not None and default_prompt_name not in prompts:
        raise ValueError(
            f"default_prompt_name={default_prompt_name!r} is not one of "
            f"prompts {sorted(prompts)}"
        )


def checked_texts(sentences, batch_size):
    """`(single, texts)` of `encode`'s arguments: whether `sentences` is one
    str, and the list of texts.

    Raises:
        TypeError: `batch_size` not an int, a sentence that is not a str.
        ValueError: `batch_size` not positive.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    single = isinstance(sentences, str)
    texts = [sentences] if single else list(sentences)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"sentences[{index}] is {type(text).__name__}, not str "
                "(decode bytes first; None has no text)"
            )
    return single, texts


def checkpoint_preprocessor(
    files, path, config, vocab_file, do_lower_case, max_seq_length, asked_length
):
    """`(config, preprocessor)` of a checkpoint's `files` (found at `path`):
    its `BertConfig` (`config` when given) and a `padding="longest"`
    `BertPreprocessor` with its vocabulary and casing (`vocab_file`,
    `do_lower_case` when given) and `max_seq_length` tokens (default 128,
    at most the model's positions).

    Raises:
        UserInputError: `asked_length` (the caller's own `max_seq_length`)
            outside [3, max_position_embeddings]; a `vocab_file` that is not
            the checkpoint's vocabulary.
    """
    config = files.load_config(config)
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
    preprocessor = BertPreprocessor(
        vocab_file, do_lower_case, max_seq_length, padding="longest", **options
    )
    return config, preprocessor
