"""Token ids to vocabulary weights without a network: inference-free SPLADE's
query side."""

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="bert_tf")
class SparseStaticEmbedding(keras.layers.Layer):
    """One learned weight per vocabulary entry, given to each token a text has.

    As sentence-transformers' `SparseStaticEmbedding` (the query route of an
    inference-free SPLADE model): a text's vector is `weight[j]` at every
    vocabulary entry j among its first `max_length` tokens (counted once,
    however often it occurs), 0 elsewhere. The tokens are the tokenizer's
    word pieces without [CLS] and [SEP].

    Args:
        vocab_size: int. Width of the vectors (the weight table's size).
        max_length: int or None. Tokens kept per text (the tokenizer's
            `model_max_length`); None keeps all.

    Call args:
        token_ids: int ragged tensor [batch, (tokens)].

    Returns:
        float32 [batch, vocab_size].

    Example:
    >>> layer = SparseStaticEmbedding(30522, max_length=512)
    >>> layer(preprocessor.tokenize(tf.constant(["what is splade?"]))).shape
    (1, 30522)
    """

    def __init__(self, vocab_size, max_length=None, **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.max_length = max_length
        self.weight = self.add_weight(
            name="weight", shape=(vocab_size,), initializer="ones"
        )

    def call(self, token_ids):
        if not isinstance(token_ids, tf.RaggedTensor):
            token_ids = tf.RaggedTensor.from_tensor(token_ids)
        if self.max_length is not None:
            token_ids = token_ids[:, : self.max_length]
        present = tf.math.bincount(
            tf.cast(token_ids, tf.int32),
            minlength=self.vocab_size,
            maxlength=self.vocab_size,
            binary_output=True,
            axis=-1,
        )
        return tf.cast(present, tf.float32) * self.weight[tf.newaxis, :]

    def get_config(self):
        config = super().get_config()
        config.update({"vocab_size": self.vocab_size, "max_length": self.max_length})
        return config
