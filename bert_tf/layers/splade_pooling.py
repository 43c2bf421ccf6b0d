"""MLM logits to one vocabulary-wide weight vector: SPLADE's pooling."""

import keras
from keras import ops

# sentence-transformers' SpladePooling settings.
SPLADE_POOLING_STRATEGIES = ("max", "sum")
SPLADE_ACTIVATIONS = ("relu", "log1p_relu")


@keras.saving.register_keras_serializable(package="bert_tf")
class SpladePooling(keras.layers.Layer):
    """Pools masked-LM logits [batch, seq, vocab] into weights [batch, vocab].

    As sentence-transformers' `SpladePooling`: padded positions are zeroed,
    each logit becomes log(1 + ReLU(logit)) ("log1p_relu" takes log1p once
    more), and the positions are reduced by max or sum. The weights are never
    negative; a vocabulary entry no real token scores above 0 is exactly 0,
    which is what makes the vector sparse.

    Args:
        pooling_strategy: "max" (SPLADE v2 and later) or "sum" (SPLADE v1).
        activation_function: "relu" or "log1p_relu".

    Call args:
        logits: float tensor [batch, seq, vocab].
        input_mask: int tensor [batch, seq], 1 at real tokens (not `mask`,
            which Keras reserves).

    Example:
    >>> SpladePooling("max")(logits, features["input_mask"]).shape
    (2, 30522)
    """

    def __init__(self, pooling_strategy="max", activation_function="relu", **kwargs):
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        if pooling_strategy not in SPLADE_POOLING_STRATEGIES:
            raise ValueError(
                f"pooling_strategy={pooling_strategy!r}: expected one of "
                f"{SPLADE_POOLING_STRATEGIES}"
            )
        if activation_function not in SPLADE_ACTIVATIONS:
            raise ValueError(
                f"activation_function={activation_function!r}: expected one of "
                f"{SPLADE_ACTIVATIONS}"
            )
        self.pooling_strategy = pooling_strategy
        self.activation_function = activation_function

    def call(self, logits, input_mask):
        logits = ops.cast(logits, "float32")
        # expand_dims, not [:, :, None]: LiteRT has no kernel for a strided
        # slice that adds an axis.
        mask = ops.expand_dims(ops.cast(input_mask, "float32"), -1)
        weights = ops.log1p(ops.relu(logits * mask))
        if self.activation_function == "log1p_relu":
            weights = ops.log1p(weights)
        if self.pooling_strategy == "max":
            return ops.max(weights, axis=1)
        return ops.sum(weights, axis=1)

    def compute_output_shape(self, logits_shape, input_mask_shape):
        return (logits_shape[0], logits_shape[2])

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "pooling_strategy": self.pooling_strategy,
                "activation_function": self.activation_function,
            }
        )
        return config
