"""Fused training kernels: the same values and gradients as the plain ops."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from bert_tf.layers import TransformerBlock
from bert_tf.layers import fused_elementwise


def _layer_norm(hidden, seed):
    rng = np.random.default_rng(seed)
    layer = keras.layers.LayerNormalization(epsilon=1e-12, dtype="float32")
    layer.build((None, hidden))
    layer.gamma.assign(rng.normal(1.0, 0.3, hidden).astype("float32"))
    layer.beta.assign(rng.normal(0.0, 0.3, hidden).astype("float32"))
    return layer


def _value_and_grads(fn, inputs, weights, variables=()):
    with tf.GradientTape() as tape:
        tape.watch(inputs)
        y = fn(*inputs)
        loss = tf.reduce_sum(tf.cast(y, tf.float32) * weights)
    return y, tape.gradient(loss, list(inputs) + list(variables))


GELUS = [
    pytest.param(fused_elementwise.gelu_tanh, True, id="tanh"),
    pytest.param(fused_elementwise.gelu_erf, False, id="erf"),
]


@pytest.mark.parametrize("fused_gelu, approximate", GELUS)
def test_gelu_matches_keras_gelu_and_its_gradient(fused_gelu, approximate):
    x = tf.constant(np.linspace(-8, 8, 4001, dtype="float32").reshape(1, -1))
    w = tf.constant(np.random.default_rng(0).normal(size=x.shape).astype("float32"))
    fused, (d_fused,) = _value_and_grads(fused_gelu, [x], w)
    plain, (d_plain,) = _value_and_grads(
        lambda t: keras.activations.gelu(t, approximate=approximate), [x], w
    )
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    # In the far negative tail both gradients are float32 noise around 0
    # (1 + tanh or 1 + erf cancels); 1e-5 is a millionth of the slope's range.
    np.testing.assert_allclose(d_fused, d_plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fused_gelu, approximate", GELUS)
def test_gelu_with_bias_is_gelu_of_the_sum_and_returns_the_bias_gradient(
    fused_gelu, approximate
):
    rng = np.random.default_rng(7)
    x = tf.constant(rng.normal(0, 2, size=(9, 24)).astype("float32"))
    b = tf.constant(rng.normal(0, 1, size=(24,)).astype("float32"))
    w = tf.constant(rng.normal(size=(9, 24)).astype("float32"))
    fused, d_fused = _value_and_grads(fused_gelu, [x, b], w)
    plain, d_plain = _value_and_grads(
        lambda t, c: keras.activations.gelu(t + c, approximate=approximate), [x, b], w
    )
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=1e-6)
    for a, e in zip(d_fused, d_plain, strict=True):  # x, bias
        np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fused_gelu, approximate", GELUS)
def test_gelu_in_bfloat16_is_the_float32_result_rounded(fused_gelu, approximate):
    x = tf.constant(np.linspace(-5, 5, 1001, dtype="float32").reshape(1, -1))
    x16 = tf.cast(x, tf.bfloat16)
    y = fused_gelu(x16)
    assert y.dtype == tf.bfloat16
    exact = keras.activations.gelu(tf.cast(x16, tf.float32), approximate=approximate)
    # Computed in float32 and rounded once: within bfloat16's half-ulp.
    np.testing.assert_allclose(tf.cast(y, tf.float32), exact, rtol=2**-8, atol=1e-5)


def test_residual_layer_norm_without_dropout_matches_keras():
    rng = np.random.default_rng(1)
    x = tf.constant(rng.normal(size=(37, 48)).astype("float32"))
    r = tf.constant(rng.normal(2.0, 3.0, size=(37, 48)).astype("float32"))
    w = tf.constant(rng.normal(size=(37, 48)).astype("float32"))
    ln = _layer_norm(48, 2)
    variables = [ln.gamma, ln.beta]
    fused, d_fused = _value_and_grads(
        lambda a, b: fused_elementwise.dropout_residual_layer_norm(a, b, ln, 0.0, None),
        [x, r],
        w,
        variables,
    )
    plain, d_plain = _value_and_grads(lambda a, b: ln(a + b), [x, r], w, variables)
    np.testing.assert_allclose(fused, plain, rtol=1e-5, atol=2e-6)
    for a, b in zip(d_fused, d_plain, strict=True):  # x, residual, gamma, beta
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=2e-5)


def test_dropout_mask_is_the_same_forward_and_backward():
    """dL/dx = dL/dresidual * keep, and the forward used that same keep."""
    rate, rows, hidden = 0.1, 512, 64
    rng = np.random.default_rng(3)
    x = tf.constant(rng.normal(size=(rows, hidden)).astype("float32"))
    r = tf.constant(rng.normal(size=(rows, hidden)).astype("float32"))
    w = tf.constant(rng.normal(size=(rows, hidden)).astype("float32"))
    ln = _layer_norm(hidden, 4)
    seed = tf.constant([5, 6], tf.int32)
    y, (d_x, d_r) = _value_and_grads(
        lambda a, b: fused_elementwise.dropout_residual_layer_norm(
            a, b, ln, rate, seed
        ),
        [x, r],
        w,
    )
    keep = d_x.numpy() / d_r.numpy()
    dropped = np.isclose(keep, 0.0, atol=1e-6)
    np.testing.assert_allclose(keep[~dropped], 1 / (1 - rate), rtol=1e-4)
    # 32,768 draws: 5 standard deviations of the dropped share is ±0.0083.
    assert abs(dropped.mean() - 6554 / 65536) < 0.0083
    # Every row keeps some and drops some: the mask is not laid out in blocks.
    assert dropped.any(axis=1).mean() > 0.99
    mask = np.where(dropped, 0.0, 1 / (1 - rate)).astype("float32")
    np.testing.assert_allclose(y, ln(x * mask + r), rtol=1e-5, atol=2e-6)
    # The seed decides the mask: the same seed repeats it, another changes it.
    again = fused_elementwise.dropout_residual_layer_norm(x, r, ln, rate, seed)
    np.testing.assert_array_equal(again, y)
    other = fused_elementwise.dropout_residual_layer_norm(
        x, r, ln, rate, tf.constant([5, 7], tf.int32)
    )
    assert not np.allclose(other, y)


def test_dropout_rate_one_drops_everything():
    x = tf.ones((4, 8))
    r = tf.constant(np.arange(32, dtype="float32").reshape(4, 8))
    ln = _layer_norm(8, 0)
    y = fused_elementwise.dropout_residual_layer_norm(
        x, r, ln, 1.0, tf.constant([1, 2], tf.int32)
    )
    np.testing.assert_allclose(y, ln(r), rtol=1e-5, atol=1e-6)


def _block(dropout, hidden_act="gelu"):
    block = TransformerBlock(
        hidden_size=32,
        hidden_act=hidden_act,
        num_attention_heads=4,
        intermediate_size=64,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
    block.build((None, None, 32))
    return block


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact"])
def test_block_training_step_without_dropout_equals_inference_math(hidden_act):
    """With dropout 0 the training path (fused kernels) and the inference path
    (plain Keras/TF ops) are the same function: same outputs, same gradients."""
    block = _block(0.0, hidden_act)
    rng = np.random.default_rng(7)
    h = tf.constant(rng.normal(size=(3, 9, 32)).astype("float32"))
    bias = np.zeros((3, 1, 1, 9), "float32")
    bias[1, ..., 6:] = -10000.0
    bias = tf.constant(bias)
    w = tf.constant(rng.normal(size=(3, 9, 32)).astype("float32"))

    def run(training):
        with tf.GradientTape() as tape:
            tape.watch(h)
            y = block(h, bias, training=training)
            loss = tf.reduce_sum(y * w)
        grads = tape.gradient(loss, [h] + block.trainable_variables)
        return y, grads

    y_train, g_train = run(True)
    y_infer, g_infer = run(False)
    np.testing.assert_allclose(y_train, y_infer, rtol=1e-5, atol=1e-5)
    assert len(g_train) == 1 + 16  # input + 6 dense kernels/biases + 2 LayerNorms
    for a, b in zip(g_train, g_infer, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_block_training_with_dropout_in_a_graph_with_unknown_shapes():
    block = _block(0.1)
    spec = tf.TensorSpec([None, None, 32], tf.float32)
    bias_spec = tf.TensorSpec([None, 1, 1, None], tf.float32)
    run = tf.function(lambda h, b: block(h, b, training=True)).get_concrete_function(
        spec, bias_spec
    )
    for batch, seq in [(2, 5), (3, 7)]:
        h = tf.ones((batch, seq, 32))
        first = run(h, tf.zeros((batch, 1, 1, seq)))
        second = run(h, tf.zeros((batch, 1, 1, seq)))
        assert first.shape == (batch, seq, 32)
        assert not np.allclose(first, second)  # a fresh mask per call


@pytest.mark.parametrize("dtype", ["mixed_bfloat16", "mixed_float16"])
def test_block_training_under_mixed_precision(dtype):
    reference = _block(0.0)
    keras.mixed_precision.set_global_policy(dtype)
    try:
        mixed = _block(0.0)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    mixed.set_weights(reference.get_weights())
    h = tf.constant(np.random.default_rng(8).normal(size=(2, 6, 32)), tf.float32)
    bias = tf.zeros((2, 1, 1, 6))
    y = mixed(h, bias, training=True)
    assert y.dtype == mixed.compute_dtype
    tolerance = 0.05 if dtype == "mixed_bfloat16" else 5e-3
    np.testing.assert_allclose(
        tf.cast(y, tf.float32), reference(h, bias), atol=tolerance
    )
