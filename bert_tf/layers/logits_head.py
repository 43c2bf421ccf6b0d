"""A projection to a few logits, stored in the original's [num_outputs, H] layout."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert_tf")
class LogitsHead(keras.layers.Layer):
    """`x @ output_weights^T + output_bias`, with optional dropout on `x`.

    The original keeps every small output layer (classifier, next-sentence,
    SQuAD) as an `output_weights` matrix of shape [num_outputs, hidden] and an
    `output_bias`, not as a dense kernel; this layer stores them the same way
    so checkpoints map without transposes. It works on [batch, hidden] and on
    [batch, seq, hidden] inputs.

    Args:
        num_outputs: int. Number of logits.
        hidden_size: int. Width of the input.
        initializer_range: float. Stddev of the truncated-normal initializer
            (the original hard-codes 0.02 for the classifier and SQuAD heads).
        dropout_rate: float. Dropout on the input, in training only.

    Example:
    >>> head = LogitsHead(num_outputs=3, hidden_size=16)
    >>> head(ops.ones((4, 16))).shape
    (4, 3)
    """

    def __init__(
        self,
        num_outputs,
        hidden_size,
        initializer_range=0.02,
        dropout_rate=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.num_outputs = num_outputs
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.dropout = keras.layers.Dropout(dropout_rate, name="dropout")

    def build(self, inputs_shape=None):
        self.output_weights = self.add_weight(
            name="output_weights",
            shape=(self.num_outputs, self.hidden_size),
            initializer=keras.initializers.TruncatedNormal(
                stddev=self.initializer_range
            ),
        )
        self.output_bias = self.add_weight(
            name="output_bias", shape=(self.num_outputs,), initializer="zeros"
        )
        self.built = True

    def call(self, inputs, training=False):
        x = self.dropout(inputs, training=training)
        logits = ops.matmul(x, ops.transpose(self.output_weights)) + self.output_bias
        return ops.cast(logits, "float32")

    def compute_output_shape(self, inputs_shape):
        return tuple(inputs_shape[:-1]) + (self.num_outputs,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "num_outputs": self.num_outputs,
                "hidden_size": self.hidden_size,
                "initializer_range": self.initializer_range,
                "dropout_rate": self.dropout_rate,
            }
        )
        return config
