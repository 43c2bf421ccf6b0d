"""The masked-LM head (`cls/predictions/*`), tied to the word embeddings."""

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers.activations import get_activation


@keras.saving.register_keras_serializable(package="bert_tf")
class MaskedLMHead(keras.layers.Layer):
    """Predicts the tokens at `masked_lm_positions`.

    As the original `get_masked_lm_output`: gather the positions, then
    dense + activation + LayerNorm, then a matmul with the transposed word
    embedding table plus an own `output_bias`.

    Args:
        embeddings: `BertEmbeddings`. Its `word_embeddings` is the decoder.
            Not part of the config: the owning model passes it again when it
            is rebuilt, which keeps the weights tied after loading.
        hidden_size: int. Width of the transform layer.
        vocab_size: int. Number of logits per position.
        hidden_act: str. A `BertConfig.hidden_act` name.
        initializer_range: float. Stddev of the truncated-normal initializer.
        layer_norm_eps: float. LayerNorm epsilon.

    Call args:
        sequence_output: float tensor [batch, seq, hidden_size].
        masked_lm_positions: int tensor [batch, num_predictions], or None:
            every position.

    Returns:
        Logits [batch, num_predictions (or seq), vocab_size].

    Example:
    >>> encoder = bert_tf.BertEncoder(config)
    >>> head = MaskedLMHead(encoder.embeddings, config.hidden_size,
    ...                     config.vocab_size)
    """

    def __init__(
        self,
        embeddings,
        hidden_size,
        vocab_size,
        hidden_act="gelu",
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.embeddings = embeddings
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self._activation = get_activation(hidden_act)
        self.transform = keras.layers.Dense(
            hidden_size,
            kernel_initializer=keras.initializers.TruncatedNormal(
                stddev=initializer_range
            ),
            name="transform",
        )
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype="float32", name="layer_norm"
        )

    @classmethod
    def for_encoder(cls, encoder, **kwargs):
        """The head of `encoder` (a `BertEncoder`), sized and initialised as
        its config says and tied to its word embeddings."""
        config = encoder.config
        return cls(
            encoder.embeddings,
            hidden_size=config.hidden_size,
            vocab_size=config.vocab_size,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            layer_norm_eps=config.layer_norm_eps,
            **kwargs,
        )

    def build(self, sequence_output_shape=None, masked_lm_positions_shape=None):
        self.transform.build((None, self.hidden_size))
        self.layer_norm.build((None, self.hidden_size))
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.vocab_size,), initializer="zeros"
        )
        self.built = True

    def call(self, sequence_output, masked_lm_positions=None):
        if masked_lm_positions is None:  # every position (SPLADE reads them all)
            x = sequence_output
        else:
            positions = ops.cast(masked_lm_positions, "int32")
            x = ops.take_along_axis(sequence_output, positions[:, :, None], axis=1)
        rows = ops.shape(x)[:2]
        x = self._activation(self.transform(x))
        x = ops.cast(self.layer_norm(x), self.compute_dtype)
        table = ops.cast(self.embeddings.word_embeddings, self.compute_dtype)
        # One 2-D matmul against the [vocab, hidden] table as stored
        # (transpose_b), plus BiasAdd: TensorFlow fuses the pair into one
        # oneDNN kernel, and the table's gradient comes out in its own layout
        # instead of through two [hidden, vocab] transposes (3 % of a
        # BERT-base pre-training step on CPU).
        logits = tf.matmul(
            ops.reshape(x, (-1, self.hidden_size)), table, transpose_b=True
        )
        # Logits stay float32 so the softmax over a large vocab is stable.
        logits = tf.nn.bias_add(
            ops.cast(logits, "float32"), ops.cast(self.output_bias, "float32")
        )
        return ops.reshape(logits, (*rows, self.vocab_size))

    def compute_output_shape(
        self, sequence_output_shape, masked_lm_positions_shape=None
    ):
        if masked_lm_positions_shape is None:
            return tuple(sequence_output_shape[:2]) + (self.vocab_size,)
        return tuple(masked_lm_positions_shape) + (self.vocab_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_size": self.hidden_size,
                "vocab_size": self.vocab_size,
                "hidden_act": self.hidden_act,
                "initializer_range": self.initializer_range,
                "layer_norm_eps": self.layer_norm_eps,
            }
        )
        return config
