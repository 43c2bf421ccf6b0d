"""FastDropout: the same distribution as dropout, with 16-bit draws."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.layers.fast_dropout import FastDropout


def test_drop_rate_and_scaling():
    layer = FastDropout(0.1, seed=3)
    x = np.ones((64, 12, 128), "float32")  # odd element counts are covered below
    y = keras.ops.convert_to_numpy(layer(x, training=True))
    kept = y != 0
    # 98,304 Bernoulli draws: 5 standard deviations is ±0.0048.
    assert abs(kept.mean() - 0.9) < 0.005
    np.testing.assert_allclose(y[kept], 1 / 0.9, rtol=1e-6)


def test_identity_outside_training_and_edge_rates():
    x = np.arange(35, dtype="float32").reshape(5, 7)
    np.testing.assert_array_equal(FastDropout(0.5)(x), x)
    np.testing.assert_array_equal(FastDropout(0.0)(x, training=True), x)
    y = keras.ops.convert_to_numpy(FastDropout(0.5, seed=1)(x, training=True))
    assert y.shape == (5, 7)  # an odd element count
    assert set(np.unique(y[y != 0] / x[y != 0])) <= {2.0}


def test_masks_differ_between_calls_and_gradient_is_the_mask():
    layer = FastDropout(0.3, seed=7)
    x = tf.ones((200, 50))
    a = layer(x, training=True)
    b = layer(x, training=True)
    assert not np.array_equal(a, b)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
    grad = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(grad, y.numpy(), rtol=1e-6)  # x = 1: grad equals output


def test_config_round_trip():
    layer = FastDropout(0.2, seed=5, name="d")
    clone = FastDropout.from_config(layer.get_config())
    assert clone.rate == 0.2 and clone.seed == 5
