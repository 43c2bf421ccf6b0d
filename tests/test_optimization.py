"""bert_tf.training.optimization against the original formulas, computed in numpy.

The references (tests/optimizer_references.py) are written from the original
`optimization.py` (and TF Model Garden's `lamb.py` for LAMB), not from bert_tf's
code. Learning-rate multipliers, MirroredStrategy and training twice in one
process are tests/test_optimization_training.py.
"""

import copy

import keras
import numpy as np
import pytest
import tensorflow as tf
from optimizer_references import BIAS_CORRECTED_ATOL
from optimizer_references import DECAYED
from optimizer_references import NAMES
from optimizer_references import adamw
from optimizer_references import apply
from optimizer_references import initial
from optimizer_references import lamb
from optimizer_references import make_gradients
from optimizer_references import make_variables
from optimizer_references import original_adam
from optimizer_references import original_lr

import bert_tf
from bert_tf.training import optimization
from bert_tf.training.optimization import AdamWeightDecay
from bert_tf.training.optimization import Lamb
from bert_tf.training.optimization import LinearWarmupLinearDecay

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
