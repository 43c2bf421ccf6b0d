"""Pre-training step throughput: bert_tf's BertPretrainer against KerasHub's
BertMaskedLM, in one run.

One optimizer step (forward, backward, update) at seq 128 with 20 masked
positions per sequence, at the MiniLM size (L6 H384, batch 32) and the
BERT-base size (L12 H768, batch 16), random weights and inputs. bert_tf runs
the original's full objective (masked LM + next sentence, the pretraining
loss of run_pretraining.py); KerasHub's BertMaskedLM has no next-sentence
head, so it does slightly less work. Issue target: >= 1.2x KerasHub.

Two comparisons, all four steps taking turns in the same rounds:
  - same optimizer: each model + loss with Keras Adam in a plain
    `tf.function` step (the models alone);
  - own step: run_pretraining.py's step (its Trainer loop, default
    --optimizer, the original's gradient clip) against KerasHub's
    `compile()` defaults + `train_on_batch` (what each library's users run).

    python benchmarks/pretraining_throughput.py [--sizes minilm base] [--rounds 3]
    python benchmarks/pretraining_throughput.py --dtype mixed_bfloat16
"""

import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from cpu_flags import cpu_description  # noqa: E402
from encoder_throughput import DTYPES  # noqa: E402
from encoder_throughput import SEQ  # noqa: E402
from encoder_throughput import SIZES  # noqa: E402
from encoder_throughput import VOCAB  # noqa: E402
from encoder_throughput import interleaved_rates  # noqa: E402

PREDICTIONS = 20


def make_batch(batch, seed=0):
    rng = np.random.default_rng(seed)
    positions = np.sort(
        np.stack([rng.choice(np.arange(1, SEQ - 1), PREDICTIONS, replace=False)
                  for _ in range(batch)]), axis=1,
    ).astype("int32")  # fmt: skip
    return {
        "input_ids": rng.integers(1000, VOCAB, size=(batch, SEQ)).astype("int32"),
        "input_mask": np.ones((batch, SEQ), "int32"),
        "segment_ids": (np.arange(SEQ) >= SEQ // 2).astype("int32")[None].repeat(batch, 0),
        "masked_lm_positions": positions,
        "masked_lm_ids": rng.integers(1000, VOCAB, size=(batch, PREDICTIONS)).astype("int32"),
        "masked_lm_weights": np.ones((batch, PREDICTIONS), "float32"),
        "next_sentence_labels": rng.integers(0, 2, size=(batch, 1)).astype("int32"),
    }  # fmt: skip


def bert_tf_config(size):
    """(BertConfig, training batch) of a benchmark size."""
    import bert_tf

    layers, hidden, heads, inter, _, batch = SIZES[size]
    config = bert_tf.BertConfig(
        vocab_size=VOCAB, hidden_size=hidden, num_hidden_layers=layers,
        num_attention_heads=heads, intermediate_size=inter, type_vocab_size=2,
    )  # fmt: skip
    return config, batch


def bench_bert_tf(size):
    """Returns (training step, batch)."""
    import keras
    import tensorflow as tf

    import bert_tf
    from bert_tf.tasks.pretraining import MODEL_INPUTS
    from bert_tf.tasks.pretraining import pretraining_loss

    config, batch = bert_tf_config(size)
    model = bert_tf.BertPretrainer(config)
    optimizer = keras.optimizers.Adam(1e-5)
    optimizer.build(model.trainable_variables)

    @tf.function
    def train(data):
        with tf.GradientTape() as tape:
            outputs = model({k: data[k] for k in MODEL_INPUTS}, training=True)
            loss = pretraining_loss(data, outputs)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    data = {k: tf.constant(v) for k, v in make_batch(batch).items()}
    return lambda: train(data).numpy(), batch


def bench_run_pretraining(size, dtype="float32"):
    """run_pretraining.py's own step: its `Trainer` loop with the default
    --optimizer (the original's AdamWeightDecay) and the original's clip of
    the global gradient norm to 1.0. Returns (training step, batch)."""
    import tempfile

    import keras
    import tensorflow as tf

    import bert_tf
    from bert_tf.tasks.pretraining import pretraining_loss
    from bert_tf.training.optimization import create_optimizer
    from bert_tf.training.strategy import create_strategy
    from bert_tf.training.trainer import Trainer

    config, batch = bert_tf_config(size)
    strategy = create_strategy("one_device")
    with strategy.scope():
        model = bert_tf.BertPretrainer(config)
        optimizer = create_optimizer("adamw_original", 1e-4, 10**6, 10**4, model)
        if dtype == "mixed_float16":  # as run_pretraining.py
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    data = make_batch(batch)

    def dataset_fn(context, skip=0):
        return tf.data.Dataset.from_tensors(data).repeat()

    trainer = Trainer(
        strategy, model, optimizer, pretraining_loss, dataset_fn,
        tempfile.mkdtemp(), num_train_steps=10**6, global_batch_size=batch,
    )  # fmt: skip
    train_loop = trainer.make_train_loop()
    iterator = iter(strategy.distribute_datasets_from_function(dataset_fn))
    one = tf.constant(1)
    return lambda: train_loop(iterator, one).numpy(), batch


def keras_hub_masked_lm(size):
    """KerasHub's BertMaskedLM at `size` with random weights, and its inputs:
    (model, features, labels, sample weights, batch)."""
    import keras_hub
    import tensorflow as tf

    layers, hidden, heads, inter, _, batch = SIZES[size]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB, num_layers=layers, num_heads=heads,
        hidden_dim=hidden, intermediate_dim=inter, max_sequence_length=512,
    )  # fmt: skip
    model = keras_hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
    data = make_batch(batch)
    features = {
        "token_ids": tf.constant(data["input_ids"]),
        "segment_ids": tf.constant(data["segment_ids"]),
        "padding_mask": tf.constant(data["input_mask"]),
        "mask_positions": tf.constant(data["masked_lm_positions"]),
    }
    labels = tf.constant(data["masked_lm_ids"])
    weights = tf.constant(data["masked_lm_weights"])
    return model, features, labels, weights, batch


def bench_keras_hub_train_step(size):
    """KerasHub's own step: `BertMaskedLM.compile()` with its defaults (Adam
    5e-5, masked-token accuracy; Keras turns XLA off on CPU-only machines),
    then `train_on_batch`. Returns (training step, batch)."""
    model, features, labels, weights, batch = keras_hub_masked_lm(size)
    model.compile()
    return lambda: model.train_on_batch(features, labels, sample_weight=weights), batch


def bench_keras_hub(size):
    import keras
    import tensorflow as tf

    model, features, labels, weights, batch = keras_hub_masked_lm(size)
    optimizer = keras.optimizers.Adam(1e-5)
    optimizer.build(model.trainable_variables)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train(features, labels, weights):
        with tf.GradientTape() as tape:
            logits = model(features, training=True)
            loss = loss_fn(labels, logits, sample_weight=weights)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply(grads, model.trainable_variables)
        return loss

    return lambda: train(features, labels, weights).numpy(), batch


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["minilm", "base"])
    parser.add_argument(
        "--seconds", type=float, default=10.0, help="timed seconds per figure and round"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--dtype", default="float32", choices=DTYPES, help="Keras dtype policy"
    )
    args = parser.parse_args()
    import keras

    keras.mixed_precision.set_global_policy(args.dtype)
    print(f"pre-training steps, seq {SEQ}, {PREDICTIONS} predictions, {args.dtype}, "
          f"{os.cpu_count()} cores (examples/s, median of {args.rounds} "
          "interleaved rounds)")  # fmt: skip
    for size in args.sizes:
        steps = {
            "bert_tf": bench_bert_tf(size),
            "run_pretraining": bench_run_pretraining(size, args.dtype),
        }
        try:
            steps["keras_hub"] = bench_keras_hub(size)
            steps["keras_hub_train_step"] = bench_keras_hub_train_step(size)
        except ImportError:
            pass
        rates = interleaved_rates(steps, args.seconds, args.rounds)
        batch = steps["bert_tf"][1]
        rows = (
            ("same optimizer (Keras Adam)", "bert_tf", "keras_hub"),
            ("own step", "run_pretraining", "keras_hub_train_step"),
        )
        print(f"  {size} (batch {batch})")
        for title, ours, theirs in rows:
            line = f"    {title:28s} bert_tf (MLM+NSP) {rates[ours]:6.1f}"
            if theirs in rates:
                ratio = rates[ours] / rates[theirs]
                line += f"   KerasHub (MLM) {rates[theirs]:6.1f}   = {ratio:.2f}x"
            else:
                line += "   (keras-hub not installed)"
            print(line, flush=True)


if __name__ == "__main__":
    main()
