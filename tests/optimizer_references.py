"""The references of the optimizer tests: the original formulas in float64, and
free-standing variables named as the original's.

The formulas are written from the original `optimization.py` (and TF Model
Garden's `lamb.py` for LAMB), not from bert_tf's code. tests/test_optimization.py
and tests/test_optimization_training.py check bert_tf.training.optimization
against them.
"""

import keras
import numpy as np
import tensorflow as tf

# === References: the original formulas, in float64 ===


def original_lr(step, init_lr, num_train_steps, num_warmup_steps):
    """`create_optimizer`'s polynomial_decay(power=1, end=0) + linear warmup."""
    decayed = init_lr * (1.0 - min(step, num_train_steps) / num_train_steps)
    if num_warmup_steps and step < num_warmup_steps:
        return init_lr * step / num_warmup_steps
    return decayed


def original_adam(p, m, v, g, lr, wd, decay, b1=0.9, b2=0.999, eps=1e-6):
    """`AdamWeightDecayOptimizer.apply_gradients` for one variable."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    update = m / (np.sqrt(v) + eps)
    if decay:
        update = update + wd * p
    return p - lr * update, m, v


def adamw(p, m, v, g, lr, t, wd, decay, b1=0.9, b2=0.999, eps=1e-6):
    """The same with bias correction (t = 1 on the first update)."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    update = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    if decay:
        update = update + wd * p
    return p - lr * update, m, v


def lamb(p, m, v, g, lr, t, wd, decay, adapt, b1=0.9, b2=0.999, eps=1e-6):
    """Model Garden's LAMB `_resource_apply_dense` for one variable."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    update = (m / (1 - b1**t)) / (np.sqrt(v / (1 - b2**t)) + eps)
    if decay:
        update = update + wd * p
    ratio = 1.0
    if adapt:
        w_norm, u_norm = np.linalg.norm(p), np.linalg.norm(update)
        ratio = w_norm / u_norm if w_norm > 0 and u_norm > 0 else 1.0
    return p - lr * ratio * update, m, v


# === Helpers ===

# Bias correction divides by 1 - beta_2**t, which float32 (TF, Keras and Model
# Garden alike) gets to only ~1e-5 relative at small t: float32(0.999) is off
# by 1.3e-8 and 1 - 0.999**2 = 0.002. With updates of about lr = 0.1 that is a
# few 1e-6 absolute; the no-bias-correction tests stay at 1e-7.
BIAS_CORRECTED_ATOL = 1e-5

# Keras path of a free-standing variable = its name; mapped to original names.
NAMES = {
    "query_kernel": "bert/encoder/layer_0/attention/self/query/kernel",
    "ln_gamma": "bert/encoder/layer_0/attention/output/LayerNorm/gamma",
    "head_bias": "output_bias",
    "head_weights": "output_weights",
    "word_embeddings": "bert/embeddings/word_embeddings",
}
# Original decisions under the default exclusions (LayerNorm, layer_norm, bias).
DECAYED = {
    "query_kernel": True,
    "ln_gamma": False,
    "head_bias": False,
    "head_weights": True,
    "word_embeddings": True,
}


def make_variables(seed=0):
    rng = np.random.default_rng(seed)
    shapes = {
        "query_kernel": (3, 2),
        "ln_gamma": (2,),
        "head_bias": (2,),
        "head_weights": (2, 3),
        "word_embeddings": (4, 2),
    }
    return {
        key: keras.Variable(rng.normal(size=shape).astype("float32"), name=key)
        for key, shape in shapes.items()
    }


def make_gradients(variables, steps, seed=1):
    """Per-step float32 gradients, large enough that clipping would show."""
    rng = np.random.default_rng(seed)
    return [
        {
            k: (3.0 * rng.normal(size=v.shape)).astype("float32")
            for k, v in variables.items()
        }
        for _ in range(steps)
    ]


def apply(optimizer, variables, grads):
    keys = list(variables)
    optimizer.apply_gradients([(tf.constant(grads[k]), variables[k]) for k in keys])


def initial(variables):
    return {k: v.numpy().astype("float64") for k, v in variables.items()}
