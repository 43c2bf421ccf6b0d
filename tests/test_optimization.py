"""bert_tf.training.optimization against the original formulas, computed here in numpy.

The references below are written from the original `optimization.py` (and TF
Model Garden's `lamb.py` for LAMB), not from bert_tf's code.
"""

import copy
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from cli_script import child_pythonpath

import bert_tf
from bert_tf.training import optimization
from bert_tf.training.optimization import AdamWeightDecay
from bert_tf.training.optimization import Lamb
from bert_tf.training.optimization import LinearWarmupLinearDecay

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

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


# === LinearWarmupLinearDecay ===


@pytest.mark.parametrize("step", [0, 1, 9, 10, 11, 55, 99, 100, 101, 1000])
def test_schedule_with_warmup(step):
    schedule = LinearWarmupLinearDecay(0.1, num_train_steps=100, num_warmup_steps=10)
    np.testing.assert_allclose(
        float(schedule(step)), original_lr(step, 0.1, 100, 10), rtol=1e-6, atol=1e-12
    )


@pytest.mark.parametrize("step", [0, 1, 50, 99, 100, 150])
def test_schedule_without_warmup(step):
    schedule = LinearWarmupLinearDecay(0.1, num_train_steps=100, num_warmup_steps=0)
    np.testing.assert_allclose(
        float(schedule(step)), original_lr(step, 0.1, 100, 0), rtol=1e-6, atol=1e-12
    )


def test_schedule_landmarks():
    schedule = LinearWarmupLinearDecay(0.1, num_train_steps=100, num_warmup_steps=10)
    assert float(schedule(0)) == 0.0  # exactly 0 at step 0
    # End of warmup: the decay is measured from step 0, so not init_lr.
    np.testing.assert_allclose(float(schedule(10)), 0.09, rtol=1e-6)
    assert float(schedule(100)) == 0.0
    assert float(schedule(tf.constant(5000, tf.int64))) == 0.0
    # No warmup: the full LR at step 0.
    np.testing.assert_allclose(float(LinearWarmupLinearDecay(0.1, 100)(0)), 0.1)


def test_schedule_rejects_bad_steps():
    with pytest.raises(ValueError, match="num_train_steps"):
        LinearWarmupLinearDecay(0.1, 0, 0)
    with pytest.raises(ValueError, match="num_warmup_steps"):
        LinearWarmupLinearDecay(0.1, 10, -1)


# === AdamWeightDecay, original (no bias correction) ===


def test_adam_weight_decay_three_steps_match_original():
    variables = make_variables()
    grads = make_gradients(variables, 3)
    schedule = LinearWarmupLinearDecay(0.1, num_train_steps=10, num_warmup_steps=2)
    optimizer = AdamWeightDecay(schedule, weight_decay_rate=0.01, variable_names=NAMES)

    expected = initial(variables)
    m = {k: np.zeros_like(p) for k, p in expected.items()}
    v = {k: np.zeros_like(p) for k, p in expected.items()}
    # LR of the update applied at global_step 0, 1, 2 (step before increment).
    lrs = [0.0, 0.05, 0.08]
    for step in range(3):
        assert int(optimizer.iterations) == step
        apply(optimizer, variables, grads[step])
        for k in expected:
            expected[k], m[k], v[k] = original_adam(
                expected[k], m[k], v[k], grads[step][k], lrs[step], 0.01, DECAYED[k]
            )
        for k, var in variables.items():
            np.testing.assert_allclose(var.numpy(), expected[k], rtol=1e-5, atol=1e-7)
            # m holds the unclipped gradient: no clipping inside the optimizer.
            np.testing.assert_allclose(
                optimizer.get_slot(var, "m").numpy(), m[k], rtol=1e-5, atol=1e-7
            )
            np.testing.assert_allclose(
                optimizer.get_slot(var, "v").numpy(), v[k], rtol=1e-5, atol=1e-7
            )
    assert int(optimizer.iterations) == 3
    for k, var in variables.items():
        assert optimizer.uses_weight_decay(var) == DECAYED[k], k


def test_first_update_uses_lr_zero_but_moves_m_and_v():
    variables = make_variables()
    before = initial(variables)
    grads = make_gradients(variables, 1)[0]
    schedule = LinearWarmupLinearDecay(0.1, num_train_steps=10, num_warmup_steps=2)
    optimizer = AdamWeightDecay(schedule, variable_names=NAMES)
    apply(optimizer, variables, grads)
    for k, var in variables.items():
        np.testing.assert_array_equal(var.numpy(), before[k])  # lr 0: no move
        np.testing.assert_allclose(
            optimizer.get_slot(var, "m").numpy(), 0.1 * grads[k], rtol=1e-6
        )
        np.testing.assert_allclose(
            optimizer.get_slot(var, "v").numpy(), 0.001 * grads[k] ** 2, rtol=1e-5
        )
    assert int(optimizer.iterations) == 1
    np.testing.assert_allclose(float(optimizer.learning_rate), 0.05)


def test_original_optimization_test():
    """`optimization_test.py`: AdamWeightDecayOptimizer(learning_rate=0.2).

    The original class defaults are weight_decay_rate=0.0 and no exclusions.
    """
    w = keras.Variable(np.array([0.1, -0.2, -0.1], "float32"), name="w")
    x = tf.constant([0.4, 0.2, -0.5])
    optimizer = AdamWeightDecay(
        learning_rate=0.2, weight_decay_rate=0.0, exclude_from_weight_decay=None
    )

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(x - w.value))
        optimizer.apply_gradients([(tape.gradient(loss, w.value), w)])

    for _ in range(100):
        train_step()
    np.testing.assert_allclose(w.numpy(), [0.4, 0.2, -0.5], rtol=1e-2, atol=1e-2)


# === AdamWeightDecay with bias correction ("adamw") ===


def test_adamw_first_step_by_hand():
    p0 = np.array([1.0, 2.0], "float32")
    kernel = keras.Variable(p0, name="dense_kernel")
    bias = keras.Variable(p0, name="dense_bias")
    g = np.array([3.0, -4.0], "float32")
    optimizer = AdamWeightDecay(0.01, weight_decay_rate=0.01, bias_correction=True)
    optimizer.apply_gradients([(tf.constant(g), kernel), (tf.constant(g), bias)])
    # t = 1: m_hat = g, v_hat = g², so the Adam part is g / (|g| + eps).
    adam_part = np.array([3.0 / (3.0 + 1e-6), -4.0 / (4.0 + 1e-6)])
    np.testing.assert_allclose(
        kernel.numpy(), p0 - 0.01 * (adam_part + 0.01 * p0), rtol=1e-6
    )
    # "dense_bias" matches "bias" (no name map: the Keras path is matched).
    np.testing.assert_allclose(bias.numpy(), p0 - 0.01 * adam_part, rtol=1e-6)


def test_adamw_three_steps_match_reference():
    variables = make_variables()
    grads = make_gradients(variables, 3)
    optimizer = AdamWeightDecay(
        0.05, weight_decay_rate=0.1, bias_correction=True, variable_names=NAMES
    )
    expected = initial(variables)
    m = {k: np.zeros_like(p) for k, p in expected.items()}
    v = {k: np.zeros_like(p) for k, p in expected.items()}
    for step in range(3):
        apply(optimizer, variables, grads[step])
        for k in expected:
            expected[k], m[k], v[k] = adamw(
                expected[k], m[k], v[k], grads[step][k], 0.05, step + 1, 0.1, DECAYED[k]
            )
    for k, var in variables.items():
        np.testing.assert_allclose(var.numpy(), expected[k], atol=BIAS_CORRECTED_ATOL)


# === LAMB ===


def test_lamb_two_steps_match_model_garden():
    rng = np.random.default_rng(3)
    values = {
        "query_kernel": rng.normal(size=(3, 2)),
        "ln_gamma": rng.normal(size=(2,)),
        "head_weights": np.zeros((2, 3)),  # ||p|| = 0 on step 1: ratio 1
        "head_bias": rng.normal(size=(2,)),  # zero gradient: ||update|| = 0
    }
    variables = {
        k: keras.Variable(p.astype("float32"), name=k) for k, p in values.items()
    }
    grads = [
        {
            k: (0.0 * p if k == "head_bias" else rng.normal(size=p.shape)).astype(
                "float32"
            )
            for k, p in values.items()
        }
        for _ in range(2)
    ]
    # Bias excluded from decay but not from adaptation, to reach ||update|| = 0.
    optimizer = Lamb(
        0.1,
        weight_decay_rate=0.01,
        exclude_from_weight_decay=("LayerNorm", "bias"),
        exclude_from_layer_adaptation=("LayerNorm",),
        variable_names=NAMES,
    )
    decay = {"query_kernel": True, "ln_gamma": False, "head_weights": True}
    decay["head_bias"] = False
    adapt = {"query_kernel": True, "ln_gamma": False, "head_weights": True}
    adapt["head_bias"] = True

    expected = {k: p.astype("float32").astype("float64") for k, p in values.items()}
    m = {k: np.zeros_like(p) for k, p in expected.items()}
    v = {k: np.zeros_like(p) for k, p in expected.items()}
    for step in range(2):
        apply(optimizer, variables, grads[step])
        for k in expected:
            expected[k], m[k], v[k] = lamb(
                expected[k],
                m[k],
                v[k],
                grads[step][k],
                0.1,
                step + 1,
                0.01,
                decay[k],
                adapt[k],
            )
        for k, var in variables.items():
            np.testing.assert_allclose(
                var.numpy(), expected[k], atol=BIAS_CORRECTED_ATOL
            )
    # The zero-norm cases moved as the reference says, without NaN.
    np.testing.assert_array_equal(
        variables["head_bias"].numpy(), values["head_bias"].astype("float32")
    )
    assert np.all(variables["head_weights"].numpy() != 0)
    for k, var in variables.items():
        assert optimizer.uses_weight_decay(var) == decay[k], k
        assert optimizer.uses_layer_adaptation(var) == adapt[k], k


def test_lamb_first_step_trust_ratio_by_hand():
    p0 = np.array([3.0, 4.0], "float32")  # ||p|| = 5
    kernel = keras.Variable(p0, name="kernel")
    optimizer = Lamb(0.1, weight_decay_rate=0.0)
    optimizer.apply_gradients([(tf.constant([1.0, -1.0]), kernel)])
    update = np.array([1.0, -1.0]) / (1.0 + 1e-6)  # t=1: g / (|g| + eps)
    ratio = 5.0 / np.linalg.norm(update)
    np.testing.assert_allclose(kernel.numpy(), p0 - 0.1 * ratio * update, rtol=1e-6)


def test_lamb_adaptation_exclusions_default_to_weight_decay_ones():
    variables = make_variables()
    optimizer = Lamb(0.1, variable_names=NAMES)
    optimizer.build(list(variables.values()))
    for k, var in variables.items():
        assert optimizer.uses_layer_adaptation(var) == DECAYED[k], k
    nothing_excluded = Lamb(0.1, exclude_from_layer_adaptation=(), variable_names=NAMES)
    nothing_excluded.build(list(variables.values()))
    assert all(nothing_excluded.uses_layer_adaptation(v) for v in variables.values())


# === IndexedSlices ===


@pytest.mark.parametrize("name", optimization.OPTIMIZER_NAMES)
def test_indexed_slices_gradient_equals_dense(name):
    rng = np.random.default_rng(5)
    table = rng.normal(size=(5, 3)).astype("float32")
    values = rng.normal(size=(3, 3)).astype("float32")
    indices = np.array([1, 3, 1])  # row 1 twice: summed
    dense = np.zeros_like(table)
    np.add.at(dense, indices, values)

    def run(make_gradient):
        variable = keras.Variable(table, name="word_embeddings")
        optimizer = optimization.create_optimizer(name, 0.1, 10, 0)
        for _ in range(2):
            optimizer.apply_gradients([(make_gradient(), variable)])
        return variable.numpy()

    sparse_result = run(
        lambda: tf.IndexedSlices(
            tf.constant(values), tf.constant(indices), tf.constant([5, 3])
        )
    )
    dense_result = run(lambda: tf.constant(dense))
    np.testing.assert_allclose(sparse_result, dense_result, rtol=1e-6, atol=1e-7)
    # Rows 0, 2, 4 had no gradient: like the original's dense update, weight
    # decay still reaches them (m = v = 0, so the update is wd * p alone).
    if name == "adamw_original":
        lrs = [0.1, 0.09]
        expected_row0 = table[0].astype("float64")
        for lr in lrs:
            expected_row0 = expected_row0 - lr * 0.01 * expected_row0
        np.testing.assert_allclose(sparse_result[0], expected_row0, rtol=1e-6)


# === Exclusions on real bert_tf models ===


@pytest.fixture(scope="module")
def classifier():
    config = bert_tf.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    model = bert_tf.BertClassifier(config, num_labels=2)
    inputs = {
        "input_ids": np.ones((2, 8), "int32"),
        "input_mask": np.ones((2, 8), "int32"),
        "segment_ids": np.zeros((2, 8), "int32"),
    }
    model(inputs)
    return model


def expected_decay(original_name):
    excluded = original_name.endswith("bias") or "/LayerNorm/" in original_name
    return not excluded


@pytest.mark.parametrize("name", ["adamw_original", "lamb"])
def test_exclusions_use_original_names_on_classifier(classifier, name):
    names = optimization.original_variable_names(classifier)
    listed = classifier.checkpoint_variables()
    assert {names[v.path] for v in classifier.trainable_variables} == set(listed)

    optimizer = optimization.create_optimizer(name, 1e-4, 10, 1, model=classifier)
    optimizer.build(classifier.trainable_variables)
    decisions = {
        names[v.path]: optimizer.uses_weight_decay(v)
        for v in classifier.trainable_variables
    }
    for original_name, decayed in decisions.items():
        assert decayed == expected_decay(original_name), original_name
    assert decisions["output_bias"] is False
    assert decisions["output_weights"] is True
    assert decisions["bert/embeddings/word_embeddings"] is True
    assert decisions["bert/embeddings/LayerNorm/gamma"] is False
    assert decisions["bert/encoder/layer_0/attention/output/LayerNorm/beta"] is False
    assert decisions["bert/encoder/layer_0/intermediate/dense/kernel"] is True
    assert decisions["bert/encoder/layer_0/intermediate/dense/bias"] is False
    assert (
        sum(not d for d in decisions.values()) == 14
    )  # 8 biases, 6 LayerNorm gamma/beta


def test_exclusions_on_pretrainer_cls_predictions_output_bias():
    config = bert_tf.BertConfig(
        vocab_size=50,
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
    )
    model = bert_tf.BertPretrainer(config)
    model(
        {
            "input_ids": np.ones((2, 8), "int32"),
            "input_mask": np.ones((2, 8), "int32"),
            "segment_ids": np.zeros((2, 8), "int32"),
            "masked_lm_positions": np.zeros((2, 2), "int32"),
        }
    )
    optimizer = optimization.create_optimizer(
        "adamw_original", 1e-4, 10, 1, model=model
    )
    optimizer.build(model.trainable_variables)
    listed = model.checkpoint_variables()
    for original_name, variable in listed.items():
        if variable.trainable:
            assert optimizer.uses_weight_decay(variable) == expected_decay(
                original_name
            ), original_name
    assert not optimizer.uses_weight_decay(listed["cls/predictions/output_bias"])
    assert not optimizer.uses_weight_decay(
        listed["cls/predictions/transform/LayerNorm/gamma"]
    )
    assert optimizer.uses_weight_decay(listed["cls/seq_relationship/output_weights"])
    # Without the name map (e.g. an optimizer revived from a .keras file), the
    # Keras paths give the same decisions for bert_tf's layers.
    by_path = optimization.create_optimizer("adamw_original", 1e-4, 10, 1)
    by_path.build(model.trainable_variables)
    for variable in model.trainable_variables:
        assert by_path.uses_weight_decay(variable) == optimizer.uses_weight_decay(
            variable
        ), variable.path


def test_unlisted_variables_fall_back_to_their_path():
    extra_kernel = keras.Variable(np.ones((2, 2), "float32"), name="extra_kernel")
    extra_bias = keras.Variable(np.ones((2,), "float32"), name="extra_bias")
    optimizer = AdamWeightDecay(0.1, variable_names={"other": "output_bias"})
    optimizer.build([extra_kernel, extra_bias])
    assert optimizer.uses_weight_decay(extra_kernel)
    assert not optimizer.uses_weight_decay(extra_bias)


def test_keras_exclude_from_weight_decay_api():
    variables = make_variables()
    optimizer = AdamWeightDecay(0.1, variable_names=NAMES)
    optimizer.exclude_from_weight_decay(var_names=["output_weights"])
    optimizer.build(list(variables.values()))
    assert not optimizer.uses_weight_decay(variables["head_weights"])
    assert optimizer.uses_weight_decay(variables["query_kernel"])
    with pytest.raises(ValueError, match="before"):
        optimizer.exclude_from_weight_decay(var_names=["kernel"])


def test_zero_weight_decay_rate_decays_nothing():
    variables = make_variables()
    optimizer = AdamWeightDecay(0.1, weight_decay_rate=0.0, variable_names=NAMES)
    optimizer.build(list(variables.values()))
    assert not any(optimizer.uses_weight_decay(v) for v in variables.values())


# === create_optimizer ===


def test_create_optimizer_variants(classifier):
    original = optimization.create_optimizer("adamw_original", 2e-5, 100, 10)
    assert isinstance(original, AdamWeightDecay) and not original.bias_correction
    adamw_opt = optimization.create_optimizer("adamw", 2e-5, 100, 10)
    assert isinstance(adamw_opt, AdamWeightDecay) and adamw_opt.bias_correction
    lamb_opt = optimization.create_optimizer(
        "lamb", 2e-5, 100, 10, weight_decay_rate=0.1
    )
    assert isinstance(lamb_opt, Lamb) and lamb_opt.weight_decay_rate == 0.1
    for opt in (original, adamw_opt, lamb_opt):
        config = opt.get_config()
        assert config["epsilon"] == 1e-6 and config["beta_1"] == 0.9
        assert config["beta_2"] == 0.999
        assert config["exclude_from_weight_decay"] == [
            "LayerNorm",
            "layer_norm",
            "bias",
        ]
        assert opt.global_clipnorm is None and opt.clipnorm is None
        assert float(opt.learning_rate) == 0.0  # step 0 of warmup
    with_model = optimization.create_optimizer(
        "adamw_original", 2e-5, 100, 10, model=classifier
    )
    assert dict(with_model._variable_names) == optimization.original_variable_names(
        classifier
    )


def test_create_optimizer_unknown_name():
    with pytest.raises(ValueError, match="'sgd'.*adamw_original, adamw, lamb"):
        optimization.create_optimizer("sgd", 2e-5, 100, 10)


def test_keras_weight_decay_is_rejected():
    with pytest.raises(ValueError, match="weight_decay_rate"):
        AdamWeightDecay(0.1, weight_decay=0.01)


# === model.fit ===


def test_fit_first_step_uses_lr_zero_and_model_saves(tmp_path):
    """fit (XLA) applies the update with iterations 0, like the original."""
    inputs = keras.Input((3,), dtype="int32")
    hidden = keras.layers.GlobalAveragePooling1D()(keras.layers.Embedding(6, 4)(inputs))
    model = keras.Model(inputs, keras.layers.Dense(3)(hidden))
    optimizer = optimization.create_optimizer("adamw_original", 0.1, 10, 2, model=model)
    loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer, loss, jit_compile=True)
    ids = np.random.default_rng(0).integers(0, 6, (8, 3))
    labels = np.arange(8) % 3
    before = [w.numpy() for w in model.weights]

    model.fit(ids, labels, batch_size=8, verbose=0)
    assert all(
        np.array_equal(b, w.numpy()) for b, w in zip(before, model.weights, strict=True)
    )
    assert int(optimizer.iterations) == 1
    model.fit(ids, labels, batch_size=8, verbose=0)
    assert not np.array_equal(before[0], model.weights[0].numpy())

    model.save(tmp_path / "model.keras")
    revived = keras.saving.load_model(tmp_path / "model.keras")
    assert isinstance(revived.optimizer, AdamWeightDecay)
    assert int(revived.optimizer.iterations) == 2
    np.testing.assert_array_equal(
        revived.optimizer.get_slot(revived.trainable_variables[0], "m").numpy(),
        optimizer.get_slot(model.trainable_variables[0], "m").numpy(),
    )


# === Serialization ===


def test_get_config_round_trips():
    schedule = LinearWarmupLinearDecay(3e-5, 1000, 100)
    assert LinearWarmupLinearDecay.from_config(schedule.get_config()).get_config() == (
        schedule.get_config()
    )
    optimizers = [
        AdamWeightDecay(schedule, weight_decay_rate=0.02, bias_correction=True),
        AdamWeightDecay(0.1, exclude_from_weight_decay=["bias"], epsilon=1e-8),
        Lamb(schedule, exclude_from_layer_adaptation=["LayerNorm"]),
    ]
    for opt in optimizers:
        config = opt.get_config()
        # from_config replaces the schedule's dict in place: give it a copy.
        clone = type(opt).from_config(copy.deepcopy(config))
        assert clone.get_config() == config
        revived = keras.saving.deserialize_keras_object(
            keras.saving.serialize_keras_object(opt)
        )
        assert type(revived) is type(opt)
        assert revived.get_config() == config
    revived = keras.saving.deserialize_keras_object(
        keras.saving.serialize_keras_object(schedule)
    )
    assert isinstance(revived, LinearWarmupLinearDecay)
    assert float(revived(50)) == float(schedule(50))


# === Per-variable learning rate multipliers ===

MULTIPLIERS = {"^output_": 100.0, "word_embeddings": 0.5}
FACTORS = {
    "query_kernel": 1.0,
    "ln_gamma": 1.0,
    "head_bias": 100.0,
    "head_weights": 100.0,
    "word_embeddings": 0.5,
}


@pytest.mark.parametrize("name", ["adamw_original", "adamw", "lamb"])
def test_learning_rate_multipliers_match_reference(name):
    """Each variable follows the reference formula at lr * its factor."""
    variables = make_variables()
    p = initial(variables)
    m = {k: np.zeros_like(x) for k, x in p.items()}
    v = {k: np.zeros_like(x) for k, x in p.items()}
    common = dict(
        weight_decay_rate=0.01,
        variable_names=NAMES,
        learning_rate_multipliers=MULTIPLIERS,
    )
    if name == "lamb":
        optimizer = Lamb(1e-3, **common)
    else:
        optimizer = AdamWeightDecay(1e-3, bias_correction=name == "adamw", **common)
    optimizer.build(list(variables.values()))
    for key, variable in variables.items():
        assert optimizer.learning_rate_multiplier(variable) == FACTORS[key], key
    for t, grads in enumerate(make_gradients(variables, 3), start=1):
        apply(optimizer, variables, grads)
        for k in p:
            args = (p[k], m[k], v[k], grads[k].astype("float64"), 1e-3 * FACTORS[k])
            if name == "adamw_original":
                p[k], m[k], v[k] = original_adam(*args, 0.01, DECAYED[k])
            elif name == "adamw":
                p[k], m[k], v[k] = adamw(*args, t, 0.01, DECAYED[k])
            else:
                p[k], m[k], v[k] = lamb(*args, t, 0.01, DECAYED[k], DECAYED[k])
    for k, variable in variables.items():
        np.testing.assert_allclose(variable.numpy(), p[k], atol=BIAS_CORRECTED_ATOL)


def test_learning_rate_multipliers_first_match_wins_and_checks():
    variables = make_variables()
    optimizer = AdamWeightDecay(
        0.1,
        variable_names=NAMES,
        learning_rate_multipliers={"output_bias": 3.0, "^output": 2.0},
    )
    optimizer.build(list(variables.values()))
    assert optimizer.learning_rate_multiplier(variables["head_bias"]) == 3.0
    assert optimizer.learning_rate_multiplier(variables["head_weights"]) == 2.0
    # The Keras path is matched too (a revived optimizer has no name map).
    by_path = AdamWeightDecay(0.1, learning_rate_multipliers={"^head_": 4.0})
    by_path.build(list(variables.values()))
    assert by_path.learning_rate_multiplier(variables["head_bias"]) == 4.0
    assert by_path.learning_rate_multiplier(variables["query_kernel"]) == 1.0
    with pytest.raises(ValueError, match="positive"):
        AdamWeightDecay(0.1, learning_rate_multipliers={"crf": 0.0})
    with pytest.raises(ValueError, match="not a regex"):
        Lamb(0.1, learning_rate_multipliers={"crf[": 10.0})
    config = AdamWeightDecay(0.1, learning_rate_multipliers={"crf": 10}).get_config()
    assert config["learning_rate_multipliers"] == {"crf": 10.0}
    revived = AdamWeightDecay.from_config(copy.deepcopy(config))
    assert revived.get_config() == config


def _crf_tagger_and_batch(seed):
    """A tiny CRF tagger (no dropout) and a batch whose IOB2 tags never put
    I-PER after O: the NLL gradient pushes that transition down at every step."""
    from tiny_models import tiny_bert_config

    keras.utils.set_random_seed(seed)
    model = bert_tf.BertTokenClassifier(
        tiny_bert_config(40, dropout=0.0), num_labels=3, crf=True
    )
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 40, (8, 12)).astype("int32")
    tags = np.zeros((8, 12), "int32")  # O
    tags[:, 3], tags[:, 4], tags[:, 8] = 1, 2, 1  # B-PER I-PER ... B-PER
    batch = {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
    }
    model(batch)
    return model, batch, tags


def _training_step(model, optimizer, batch, tags):
    from bert_tf.tasks.ner import crf_tagging_loss

    loss_fn = crf_tagging_loss(model.crf)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn({"label_ids": tags}, model(batch, training=True))
        variables = model.trainable_variables
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables, strict=True)
        )

    return step


@pytest.mark.slow
def test_crf_multiplier_moves_transitions_and_leaves_encoder_lr():
    """A CRF tagger trained at lr 1e-4 with cls/crf/ at 100x against a twin at
    1x: the first step moves the encoder and the Dense head identically and the
    CRF 100x as far; after 10 steps the forbidden O -> I-PER transition
    has learnt a clear penalty only with the multiplier."""
    crf_scope = {r"^cls/crf/": 100.0}
    fast, batch, tags = _crf_tagger_and_batch(0)
    slow, _, _ = _crf_tagger_and_batch(0)
    for a, b in zip(fast.weights, slow.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    before = {v.path: v.numpy() for v in fast.trainable_variables}
    fast_optimizer, slow_optimizer = (
        optimization.create_optimizer(
            "adamw_original",
            1e-4,
            num_train_steps=10_000,
            num_warmup_steps=0,
            model=model,
            learning_rate_multipliers=multipliers,
        )
        for model, multipliers in ((fast, crf_scope), (slow, None))
    )
    fast_optimizer.build(fast.trainable_variables)
    crf_paths = {v.path for v in fast.crf.trainable_variables}
    assert len(crf_paths) == 3
    for variable in fast.trainable_variables:
        expected = 100.0 if variable.path in crf_paths else 1.0
        assert fast_optimizer.learning_rate_multiplier(variable) == expected

    train_fast = _training_step(fast, fast_optimizer, batch, tags)
    train_slow = _training_step(slow, slow_optimizer, batch, tags)
    train_fast()
    train_slow()
    slow_by_path = {v.path: v for v in slow.trainable_variables}
    for variable in fast.trainable_variables:
        fast_step = variable.numpy() - before[variable.path]
        slow_step = slow_by_path[variable.path].numpy() - before[variable.path]
        assert np.any(slow_step != 0), variable.path
        if variable.path in crf_paths:
            np.testing.assert_allclose(fast_step, 100.0 * slow_step, rtol=1e-4)
        else:
            np.testing.assert_array_equal(fast_step, slow_step)

    for _ in range(9):
        train_fast()
        train_slow()
    # Adam moves a parameter by a few lr per step at most: 10 steps at 1e-4
    # leave the transitions within ~0.01 of 0, at 1e-2 they reach tenths.
    o_to_i = (0, 2)
    assert fast.crf.transitions.numpy()[o_to_i] < -0.1
    assert np.abs(slow.crf.transitions.numpy()).max() < 0.02


# === MirroredStrategy over two logical CPUs ===

# Runs in a fresh interpreter: logical devices must be configured before TF
# initialises its devices, which this process has already done.
_MIRRORED_SCRIPT = textwrap.dedent(
    """
    import json
    import os

    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    import keras
    import numpy as np

    from bert_tf.training import optimization

    STEPS, GLOBAL_BATCH = 3, 8
    # Scales the loss in the clipped runs so that clipping at 1.0 is active.
    CLIPPED_LOSS_SCALE = 20.0
    rng = np.random.default_rng(0)
    INIT = {
        "word_embeddings": rng.normal(size=(6, 4)).astype("float32"),
        "output_weights": rng.normal(size=(4, 3)).astype("float32"),
        "output_bias": rng.normal(size=(3,)).astype("float32"),
    }
    NAMES = {
        "word_embeddings": "bert/embeddings/word_embeddings",
        "output_weights": "output_weights",
        "output_bias": "output_bias",
    }
    IDS = rng.integers(0, 6, size=(GLOBAL_BATCH, 3)).astype("int32")
    LABELS = rng.integers(0, 3, size=(GLOBAL_BATCH,)).astype("int32")


    def make(kind):
        variables = [keras.Variable(INIT[k], name=k) for k in INIT]
        schedule = optimization.LinearWarmupLinearDecay(0.1, 10, 1)
        if kind == "lamb":
            opt = optimization.Lamb(schedule, 0.1, variable_names=NAMES)
        else:
            opt = optimization.AdamWeightDecay(
                schedule, 0.1, bias_correction=kind == "adamw", variable_names=NAMES
            )
        opt.build(variables)
        return variables, opt


    def per_example_loss(variables, ids, labels):
        embeddings, weights, bias = (v.value for v in variables)
        pooled = tf.reduce_mean(tf.gather(embeddings, ids), axis=1)
        logits = tf.matmul(pooled, weights) + bias
        return tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)


    norms = []


    def single(kind, clip):
        variables, opt = make(kind)
        for _ in range(STEPS):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(per_example_loss(variables, IDS, LABELS))
                if clip:
                    loss *= CLIPPED_LOSS_SCALE
            grads = tape.gradient(loss, [v.value for v in variables])
            if clip:
                grads, norm = tf.clip_by_global_norm(grads, 1.0)
                norms.append(float(norm))
            opt.apply_gradients(zip(grads, variables))
        return variables, opt


    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    grad_types = set()


    def mirrored(kind, clip):
        with strategy.scope():
            variables, opt = make(kind)
        if clip:
            # The loop sums over replicas itself; the optimizer must not.
            optimization.set_gradient_aggregation(opt, False)
        local = GLOBAL_BATCH // strategy.num_replicas_in_sync

        def shard(ctx):
            i = ctx.replica_id_in_sync_group
            return IDS[i * local : (i + 1) * local], LABELS[i * local : (i + 1) * local]

        @tf.function
        def train_step(batch):
            def step_fn(batch):
                ids, labels = batch
                with tf.GradientTape() as tape:
                    # Per replica: sum / global batch, since the replicas'
                    # gradients are summed.
                    loss = (
                        tf.reduce_sum(per_example_loss(variables, ids, labels))
                        / GLOBAL_BATCH
                    )
                    if clip:
                        loss *= CLIPPED_LOSS_SCALE
                grads = tape.gradient(loss, [v.value for v in variables])
                grad_types.update(type(g).__name__ for g in grads)
                if clip:
                    # The original's order: sum over replicas, clip, apply.
                    context = tf.distribute.get_replica_context()
                    grads = context.all_reduce(tf.distribute.ReduceOp.SUM, grads)
                    grads, _ = tf.clip_by_global_norm(grads, 1.0)
                    opt.apply_gradients(zip(grads, variables))
                else:
                    # Keras' default: apply sums over replicas itself.
                    opt.apply_gradients(zip(grads, variables))

            strategy.run(step_fn, args=(batch,))

        for _ in range(STEPS):
            train_step(strategy.experimental_distribute_values_from_function(shard))
        return variables, opt


    report = {"replicas": strategy.num_replicas_in_sync}
    for kind in optimization.OPTIMIZER_NAMES:
        for clip in (False, True):
            (sv, so), (mv, mo) = single(kind, clip), mirrored(kind, clip)
            param_diff = slot_diff = copies_diff = moved = 0.0
            for s, m, k in zip(sv, mv, INIT):
                diff = np.abs(s.numpy() - m.numpy()).max()
                param_diff = max(param_diff, float(diff))
                moved = max(moved, float(np.abs(m.numpy() - INIT[k]).max()))
                copies = [c.numpy() for c in strategy.experimental_local_results(m.value)]
                copies_diff = max(copies_diff, float(np.abs(copies[0] - copies[1]).max()))
                for slot in ("m", "v"):
                    diff = so.get_slot(s, slot).numpy() - mo.get_slot(m, slot).numpy()
                    slot_diff = max(slot_diff, float(np.abs(diff).max()))
            report[kind + ("_clipped" if clip else "")] = {
                "param_diff": param_diff,
                "slot_diff": slot_diff,
                "copies_diff": copies_diff,
                "moved": moved,
                "iterations": [int(so.iterations.numpy()), int(mo.iterations.numpy())],
            }
    report["grad_types"] = sorted(grad_types)
    report["min_clipped_norm"] = min(norms)
    print("REPORT " + json.dumps(report))
    """
)


@pytest.mark.slow
def test_mirrored_strategy_step_equals_single_device():
    """Two replicas, each with half the global batch, equal one device.

    Two ways to apply: Keras' default (the optimizer's apply sums the replicas'
    gradients), and the original's order (sum, clip by global norm 1.0, then
    apply with the optimizer's own sum turned off by set_gradient_aggregation). Slots are compared too, so a
    gradient summed twice or not at all would show in m even where Adam's
    scale invariance hides it in the parameters.
    """
    env = {**os.environ, "PYTHONPATH": child_pythonpath(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", _MIRRORED_SCRIPT],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("REPORT ")]
    assert result.returncode == 0 and lines, result.stderr[-4000:]
    report = json.loads(lines[-1][len("REPORT ") :])
    assert report["replicas"] == 2
    # The embedding gradient reached the optimizer as IndexedSlices.
    assert "IndexedSlices" in report["grad_types"]
    assert report["min_clipped_norm"] > 1.0  # clipping was active
    for kind in optimization.OPTIMIZER_NAMES:
        for key in (kind, kind + "_clipped"):
            r = report[key]
            assert r["iterations"] == [3, 3], (key, r)
            assert r["moved"] > 1e-3, (key, r)  # the steps did something
            assert r["param_diff"] < 2e-6, (key, r)
            assert r["slot_diff"] < 2e-6, (key, r)
            assert r["copies_diff"] == 0.0, (key, r)


@pytest.mark.slow
def test_a_second_model_trains_in_the_same_process():
    """The fused AdamW update was one module-level compiled function: its
    trace kept the first model's variables, and training a second model in
    the same process failed ("Called a function referencing variables which
    have been deleted"). Now each optimizer compiles its own."""
    import gc

    import keras
    import tensorflow as tf

    from bert_tf.training.optimization import AdamWeightDecay

    def train_once():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
        optimizer = AdamWeightDecay(learning_rate=1e-3, weight_decay_rate=0.01)

        @tf.function
        def step(x):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(model(x) ** 2)
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(
                zip(grads, model.trainable_variables, strict=True)
            )
            return loss

        losses = [float(step(tf.ones((2, 4)))) for _ in range(3)]
        assert losses[-1] < losses[0]

    train_once()
    gc.collect()
    train_once()
