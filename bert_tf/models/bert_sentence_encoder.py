"""`BertSentenceEncoder`: sentences to fixed-size embeddings."""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.checkpoints.name_map import encoder_variables
from bert_tf.checkpoints.sentence_transformers_checkpoint import DENSE_BIAS
from bert_tf.checkpoints.sentence_transformers_checkpoint import DENSE_KERNEL
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    is_sentence_transformers_dir,
)
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    read_sentence_transformers,
)
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    save_sentence_transformers,
)
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.layers.sentence_pooling import SentencePooling
from bert_tf.layers.sentence_pooling import pooling_modes
from bert_tf.models.bert_encoder import global_dtype_policy
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder
from bert_tf.models.task_model import encode as encode_inputs
from bert_tf.models.task_model import freeze_unread_pooler
from bert_tf.text.preprocessing import BertPreprocessor

# sentence-transformers' default batch size for encode().
DEFAULT_BATCH_SIZE = 32


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSentenceEncoder(BertTaskModel):
    """A sentence-embedding model: encoder, pooling, optional Dense, optional
    L2 normalisation (sentence-transformers' Transformer → Pooling → Dense →
    Normalize).

    The model maps the int32 encoder inputs to float32 embeddings [batch,
    dim]; `encode` takes raw strings. `from_checkpoint` reads a
    sentence-transformers directory as it is (all-MiniLM-L6-v2, ...) or any
    BERT checkpoint with `pooling=` given; `save_sentence_transformers`
    writes one that PyTorch's `SentenceTransformer` loads. A `.keras` file
    carries the vocabulary.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        preprocessor: `BertPreprocessor` (`padding="longest"` is best: each
            batch is padded to its longest sentence), or None (no `encode`).
        pooling: "mean", "cls", "max", "mean_sqrt_len_tokens", or several
            joined by "+" (concatenated, as sentence-transformers does).
        dense_units: int or None. Width of a Dense layer after pooling.
        dense_activation: its activation ("tanh", "linear", "relu", "gelu",
            "sigmoid").
        dense_use_bias: whether it has a bias.
        normalize: bool. L2-normalise the embeddings (cosine = dot product).
        dtype: optional dtype policy for every layer; embeddings stay float32.

    Example:
    >>> model = bert_tf.BertSentenceEncoder.from_checkpoint("all-MiniLM-L6-v2")
    >>> model.encode(["A man is playing a guitar.", "Someone plays music."]).shape
    (2, 384)
    """

    default_name = "bert_sentence_encoder"
    # The tanh pooler is not used; a checkpoint without it loads.
    reads_pooled_output = False

    def __init__(
        self,
        encoder,
        preprocessor=None,
        pooling="mean",
        dense_units=None,
        dense_activation="tanh",
        dense_use_bias=True,
        normalize=False,
        **kwargs,
    ):
        modes = pooling_modes(pooling)
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder)
            # === Layers ===
            pooling_layer = SentencePooling(modes, name="pooling")
            dense = None
            if dense_units:
                dense = keras.layers.Dense(
                    dense_units,
                    activation=dense_activation,
                    use_bias=dense_use_bias,
                    name="dense",
                )
            # Float32 out whatever the policy (as sentence-transformers
            # returns); the normalisation also runs in float32.
            if normalize:
                last = keras.layers.UnitNormalization(dtype="float32", name="normalize")
            else:
                last = keras.layers.Activation(
                    "linear", dtype="float32", name="embeddings"
                )
            # === Functional model ===
            inputs, encoded = encode_inputs(encoder)
            embeddings = pooling_layer(encoded["sequence_output"], inputs["input_mask"])
            if dense is not None:
                embeddings = dense(embeddings)
            outputs = last(embeddings)
            kwargs.setdefault("name", self.default_name)
            super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        freeze_unread_pooler(self)
        self.preprocessor = preprocessor
        self.pooling = modes
        self.pooling_layer = pooling_layer
        self.dense = dense
        self.dense_units = dense_units
        self.dense_activation = dense_activation
        self.dense_use_bias = dense_use_bias
        self.normalize = normalize
        self._encode_function = None

    @property
    def embedding_dim(self):
        if self.dense_units:
            return self.dense_units
        return self.encoder.config.hidden_size * len(self.pooling)

    def task_arguments(self):
        return {
            "pooling": "+".join(self.pooling),
            "dense_units": self.dense_units,
            "dense_activation": self.dense_activation,
            "dense_use_bias": self.dense_use_bias,
            "normalize": self.normalize,
        }

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

    # --- raw text -------------------------------------------------------------

    def embed_strings(self, texts):
        """Embeddings [batch, dim] of a string tensor [batch], in the graph."""
        if self.preprocessor is None:
            raise ValueError(
                "this BertSentenceEncoder has no preprocessor: build it with "
                "preprocessor=BertPreprocessor(...) or from_checkpoint to embed text"
            )
        return self(self.preprocessor(texts), training=False)

    def encode(self, sentences, batch_size=DEFAULT_BATCH_SIZE, progress=None):
        """Embeds `sentences` (a list of strings); returns float32 numpy
        [len(sentences), dim] in their order.

        As sentence-transformers' `encode`: sentences are sorted by length
        (longest first), cut into batches of `batch_size`, and each batch is
        padded to its own longest sentence, so short sentences cost little.

        Args:
            sentences: list of str (or one str: returns [dim]).
            batch_size: int. Sentences per forward pass.
            progress: optional callable(done, total) called after each batch.
        """
        single = isinstance(sentences, str)
        texts = [sentences] if single else [str(s) for s in sentences]
        output = np.zeros((len(texts), self.embedding_dim), np.float32)
        if self._encode_function is None:
            # One trace for every batch: the batch and length dims are None.
            self._encode_function = tf.function(
                self.embed_strings,
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        order = np.argsort([-len(t) for t in texts], kind="stable")
        for start in range(0, len(texts), batch_size):
            rows = order[start : start + batch_size]
            batch = tf.constant([texts[i] for i in rows])
            output[rows] = self._encode_function(batch).numpy()
            if progress is not None:
                progress(min(start + batch_size, len(texts)), len(texts))
        return output[0] if single else output

    # --- checkpoints ------------------------------------------------------------

    @classmethod
    def from_checkpoint(
        cls,
        path,
        config=None,
        pooling=None,
        normalize=None,
        vocab_file=None,
        do_lower_case=None,
        max_seq_length=None,
        **kwargs,
    ):
        """The model from a sentence-transformers directory, or from any BERT
        checkpoint `BertEncoder` reads with `pooling` given.

        Args:
            path: a sentence-transformers directory (modules.json beside the
                model), or a checkpoint prefix or directory.
            config: optional `BertConfig` (or its file) instead of the one found.
            pooling: the pooling mode(s); required unless `path` is a
                sentence-transformers directory (which says its own).
            normalize: bool; default: what the directory says (else False).
            vocab_file, do_lower_case: the tokenization; default: what the
                checkpoint's files say.
            max_seq_length: longest input in tokens (longer are cut); default:
                sentence_bert_config.json's, else 128.
            **kwargs: `dense_units`, `dense_activation`, ... for a plain BERT
                checkpoint; `dtype`, `name`.

        Raises:
            UserInputError: a sentence-transformers directory with a module or
                setting this model cannot reproduce; `pooling` missing for a
                plain checkpoint.
        """
        path = os.fspath(path) if not hasattr(path, "reader") else path
        asked_length = max_seq_length
        if isinstance(path, str) and is_sentence_transformers_dir(path):
            info = read_sentence_transformers(path)
            if pooling is not None and pooling_modes(pooling) != info.pooling:
                raise UserInputError(
                    f"pooling={pooling!r} differs from {path}'s own "
                    f"{'+'.join(info.pooling)!r}: leave it out to pool as the "
                    "model was trained",
                    argument="pooling",
                )
            files = info.checkpoint
            pooling = info.pooling
            kwargs.setdefault("dense_units", info.dense_units)
            if info.dense_units:
                kwargs.setdefault("dense_activation", info.dense_activation)
                kwargs.setdefault("dense_use_bias", info.dense_use_bias)
            normalize = info.normalize if normalize is None else normalize
            max_seq_length = max_seq_length or info.max_seq_length
            do_lower_case = (
                info.do_lower_case if do_lower_case is None else do_lower_case
            )
        else:
            if pooling is None:
                raise UserInputError(
                    f"{path} is not a sentence-transformers directory (no "
                    "modules.json): pass pooling= (e.g. 'mean' or 'cls')",
                    argument="pooling",
                )
            files = path if hasattr(path, "reader") else find_checkpoint(path)
        if config is None:
            config = files.load_config()
        elif not isinstance(config, BertConfig):
            config = BertConfig.from_json_file(config)
        vocab_file = vocab_file or files.vocab_file
        if vocab_file is None:
            raise FileNotFoundError(f"No vocab.txt beside {path}: pass vocab_file=")
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
            vocab_file, do_lower_case, max_seq_length, padding="longest"
        )
        model = cls(
            config,
            preprocessor=preprocessor,
            pooling=pooling,
            normalize=bool(normalize),
            **kwargs,
        )
        model.checkpoint_load_report = load_checkpoint(model, files)
        logging.info(
            "Sentence encoder: pooling %s, dense %s, normalize %s, max_seq_length %d",
            "+".join(model.pooling),
            model.dense_units,
            model.normalize,
            max_seq_length,
        )
        return model

    def save_sentence_transformers(self, directory):
        """Writes a sentence-transformers directory (see
        `bert_tf.checkpoints.sentence_transformers_checkpoint`)."""
        if self.preprocessor is None:
            raise ValueError("a model without a preprocessor has no vocabulary to save")
        return save_sentence_transformers(self, directory)
