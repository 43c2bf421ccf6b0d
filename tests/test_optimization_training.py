"""bert_tf.training.optimization in training: per-variable learning-rate
multipliers, MirroredStrategy over two logical CPUs, and a second model trained
in the same process.

The references are tests/optimizer_references.py's, as for
tests/test_optimization.py.
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

import bert_tf
from bert_tf.training import optimization
from bert_tf.training.optimization import AdamWeightDecay
from bert_tf.training.optimization import Lamb

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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
