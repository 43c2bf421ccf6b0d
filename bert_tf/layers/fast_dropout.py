"""Dropout that draws 16 random bits per element instead of a float."""

import keras
import tensorflow as tf

from bert_tf.layers import fused_elementwise


@keras.saving.register_keras_serializable(package="bert_tf")
class FastDropout(keras.layers.Dropout):
    """`keras.layers.Dropout` with half the random-number work.

    BERT applies dropout to every attention-probability tensor
    [batch, heads, seq, seq], so generating the random mask is a large part
    of a CPU training step. This layer draws 32-bit random integers, splits
    each into two 16-bit values and keeps an element when its value is at
    least `round(rate * 65536)`: half the draws of a float-per-element mask,
    and a multiply instead of a select. The mask is one XLA-compiled kernel
    with XLA's ThreeFry generator, on CPU twice as fast as TensorFlow's
    Philox kernel. The keep probability is exact to
    1/65536 (rate 0.1 drops 6554/65536 = 0.100006); kept values are scaled by
    `1 / (1 - rate)` as in `tf.nn.dropout`.

    Args:
        rate: float. Fraction of the inputs to drop.
        seed: int or None. Seed of the layer's random stream.

    Example:
    >>> layer = FastDropout(0.1)
    >>> layer(ops.ones((4, 8)), training=True).shape
    (4, 8)
    """

    def next_seed(self):
        """An int32 [2] seed for this call's mask; advances the layer's stream."""
        return tf.cast(self.seed_generator.next(), tf.int32)

    def call(self, inputs, training=False):
        if not training or self.rate == 0.0:
            return inputs
        if self.rate >= 1.0:
            return tf.zeros_like(inputs)
        keep = fused_elementwise.dropout_keep_scale(inputs, self.next_seed(), self.rate)
        return inputs * tf.cast(keep, inputs.dtype)
