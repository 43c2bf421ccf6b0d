"""XLA-fused element-wise kernels for the training step, with their gradients.

Outside XLA, TensorFlow runs every element-wise op of a GELU or of a
dropout + residual + LayerNorm (and every op of their gradients) as its own
kernel: a dozen passes over [batch * seq, width] activations forward and as
many backward, plus float32 <-> bfloat16 casts under mixed precision. Each
function here is one XLA-compiled kernel forward and one backward
(`tf.custom_gradient`) that recomputes what it needs from its inputs, so the
activations are read and written about once each way; the preceding
matmul's bias is added inside the kernel, so its gradient comes from the
same pass. (What this buys is measured by `benchmarks/encoder_throughput.py`
and `benchmarks/pretraining_throughput.py`; docs/benchmarks.md.)

They compute the same functions as the ops they stand in for (equal to
float32 rounding; tested against `keras.activations.gelu` and
`keras.layers.LayerNormalization`), in float32 whatever the input dtype, and
return the input dtype. Dropout keeps `FastDropout`'s rule (an element
survives when a 16-bit random value is at least `round(rate * 65536)`),
with the bits drawn by XLA's ThreeFry generator from the layer's seed stream
and drawn again, not stored, for the backward pass (ThreeFry under XLA is
the cheapest generator on CPU; XLA's Philox is not). `FastDropout`, for the
attention probabilities, draws its mask with the same kernel
(`dropout_keep_scale`) but leaves the softmax to oneDNN, which beats an XLA
softmax on CPU.

Only the training step uses them: inference keeps the plain ops, which
TensorFlow fuses into the matmul (oneDNN / cuBLASLt epilogues) and which the
checkpoint-parity tests pin to the original.
"""

import functools
import math

import tensorflow as tf

# One XLA kernel per function. No autograph: the bodies have no Python
# control flow on tensors, and converting their source is start-up work every
# process that trains would repeat.
_xla_kernel = functools.partial(tf.function, jit_compile=True, autograph=False)

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_GELU_CUBIC = 0.044715
_SQRT_1_2 = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def dropout_threshold(rate):
    """The 16-bit value a random draw must reach for an element to be kept."""
    return round(rate * 65536)


def _keep_scale(like, seed, rate):
    """float32 like `like`: 0 where dropped, 1 / (1 - rate) where kept."""
    # Under XLA the shape is a compile-time constant even when the caller's
    # graph left dimensions unknown. Each 32-bit draw gives two 16-bit
    # values: its low half for an element in the first half of the tensor,
    # its high half for the matching element in the second half.
    if rate >= 1.0:
        return tf.zeros_like(like, tf.float32)
    count = tf.size(like)
    bits = tf.random.stateless_uniform(
        tf.reshape((count + 1) // 2, [1]),
        seed,
        minval=None,
        maxval=None,
        dtype=tf.uint32,
        alg="threefry",
    )
    halves = tf.concat(
        [tf.bitwise.bitwise_and(bits, 0xFFFF), tf.bitwise.right_shift(bits, 16)], 0
    )[:count]
    keep = halves >= dropout_threshold(rate)
    return tf.reshape(tf.cast(keep, tf.float32) * (1.0 / (1.0 - rate)), tf.shape(like))


@_xla_kernel
def dropout_keep_scale(like, seed, rate):
    """XLA kernel: `FastDropout`'s mask for a tensor like `like` (float32)."""
    return _keep_scale(like, seed, rate)


# --- GELU (tanh approximation) -------------------------------------------


def _tanh_arg(x):
    return _SQRT_2_OVER_PI * (x + _GELU_CUBIC * x * x * x)


@_xla_kernel
def _gelu_forward(x, bias):
    x32 = tf.cast(x, tf.float32) + bias
    return tf.cast(0.5 * x32 * (1.0 + tf.tanh(_tanh_arg(x32))), x.dtype)


@_xla_kernel
def _gelu_backward(x, bias, dy):
    x32 = tf.cast(x, tf.float32) + bias
    t = tf.tanh(_tanh_arg(x32))
    # d/dx 0.5 x (1 + tanh(u)) with u = c (x + a x^3).
    du_dx = _SQRT_2_OVER_PI * (1.0 + 3.0 * _GELU_CUBIC * x32 * x32)
    slope = 0.5 * (1.0 + t) + 0.5 * x32 * (1.0 - t * t) * du_dx
    d_x = tf.cast(dy, tf.float32) * slope
    return tf.cast(d_x, x.dtype), tf.reduce_sum(d_x, axis=0)


def gelu_tanh(x, bias=None):
    """GELU, tanh approximation (the original's "gelu"), of `x + bias`.

    One kernel each way; the backward pass recomputes tanh from `x` instead
    of keeping intermediate tensors alive, and returns the bias gradient
    from the same pass.
    """
    return _biased_gelu(_gelu_forward, _gelu_backward, x, bias)


# --- GELU (erf) ------------------------------------------------------------


@_xla_kernel
def _gelu_erf_forward(x, bias):
    x32 = tf.cast(x, tf.float32) + bias
    return tf.cast(0.5 * x32 * (1.0 + tf.math.erf(x32 * _SQRT_1_2)), x.dtype)


@_xla_kernel
def _gelu_erf_backward(x, bias, dy):
    x32 = tf.cast(x, tf.float32) + bias
    # d/dx 0.5 x (1 + erf(x / sqrt 2)) = Phi(x) + x phi(x).
    slope = 0.5 * (1.0 + tf.math.erf(x32 * _SQRT_1_2)) + x32 * _INV_SQRT_2PI * tf.exp(
        -0.5 * x32 * x32
    )
    d_x = tf.cast(dy, tf.float32) * slope
    return tf.cast(d_x, x.dtype), tf.reduce_sum(d_x, axis=0)


def gelu_erf(x, bias=None):
    """GELU with the erf (Hugging Face's "gelu", our "gelu_exact") of `x + bias`.

    As `gelu_tanh`: one kernel each way, the backward pass recomputing from
    `x`. Unfused, TensorFlow's erf and its gradient run as separate
    unvectorized kernels (under bfloat16 the slowest ops of a MiniLM step).
    """
    return _biased_gelu(_gelu_erf_forward, _gelu_erf_backward, x, bias)


def _biased_gelu(forward_kernel, backward_kernel, x, bias):
    """`forward_kernel(x, bias)`, differentiated by `backward_kernel(x, bias,
    dy) -> (d_x, d_bias)`; a missing bias is zeros."""
    if bias is None:
        bias = tf.zeros([x.shape[-1]], tf.float32)

    @tf.custom_gradient
    def forward(x, bias):
        return forward_kernel(x, bias), lambda dy: backward_kernel(x, bias, dy)

    return forward(x, tf.cast(bias, tf.float32))


# --- dropout + residual + LayerNorm ---------------------------------------


def _pre_norm(x, bias, residual, seed, rate):
    keep = _keep_scale(x, seed, rate) if rate else 1.0
    h = (tf.cast(x, tf.float32) + bias) * keep + tf.cast(residual, tf.float32)
    return h, keep


@_xla_kernel
def _layer_norm_forward(x, bias, residual, gamma, beta, seed, rate, epsilon):
    h, _ = _pre_norm(x, bias, residual, seed, rate)
    centered = h - tf.reduce_mean(h, axis=-1, keepdims=True)
    variance = tf.reduce_mean(centered * centered, axis=-1, keepdims=True)
    inv_std = tf.math.rsqrt(variance + epsilon)
    return tf.cast(centered * inv_std * gamma + beta, x.dtype), inv_std


@_xla_kernel
def _layer_norm_backward(x, bias, residual, gamma, inv_std, seed, rate, dy):
    h, keep = _pre_norm(x, bias, residual, seed, rate)
    normalized = (h - tf.reduce_mean(h, axis=-1, keepdims=True)) * inv_std
    dy = tf.cast(dy, tf.float32)
    d_gamma = tf.reduce_sum(dy * normalized, axis=0)
    d_beta = tf.reduce_sum(dy, axis=0)
    d_normalized = dy * gamma
    d_h = inv_std * (
        d_normalized
        - tf.reduce_mean(d_normalized, axis=-1, keepdims=True)
        - normalized * tf.reduce_mean(d_normalized * normalized, axis=-1, keepdims=True)
    )
    d_x = d_h * keep
    return (
        tf.cast(d_x, x.dtype),
        tf.reduce_sum(d_x, axis=0),
        tf.cast(d_h, residual.dtype),
        d_gamma,
        d_beta,
    )


def dropout_residual_layer_norm(x, residual, layer_norm, rate, seed, bias=None):
    """`layer_norm(dropout(x + bias) + residual)` on [rows, hidden], one kernel each way.

    Args:
        x: [rows, hidden] tensor (any float dtype), the sublayer output.
        residual: [rows, hidden] tensor.
        layer_norm: a built `keras.layers.LayerNormalization` over the last
            axis; its `gamma`, `beta` and `epsilon` are used (and trained).
        rate: float. Dropout rate on `x` (0 for none).
        seed: int32 [2] tensor for the dropout mask (unused when rate is 0).
        bias: optional [hidden] bias of the matmul that produced `x`. Adding it
            here instead of in a BiasAdd lets the backward kernel return its
            gradient from the same pass (no separate BiasAddGrad).

    Returns:
        [rows, hidden] tensor of `x.dtype`; statistics are taken in float32.
    """
    epsilon = tf.constant(layer_norm.epsilon, tf.float32)

    @tf.custom_gradient
    def normalize(x, bias, residual, gamma, beta):
        y, inv_std = _layer_norm_forward(
            x, bias, residual, gamma, beta, seed, rate, epsilon
        )

        def grad(dy):
            return _layer_norm_backward(
                x, bias, residual, gamma, inv_std, seed, rate, dy
            )

        return y, grad

    if bias is None:
        bias = tf.zeros([x.shape[-1]], tf.float32)
    gamma = tf.convert_to_tensor(layer_norm.gamma)
    beta = tf.convert_to_tensor(layer_norm.beta)
    return normalize(x, tf.cast(bias, tf.float32), residual, gamma, beta)
