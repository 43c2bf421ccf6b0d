"""Gradient all-reduce per training step: one (now) against two (before).

The Trainer's step sums the replicas' gradients once, clips the sum by global
norm and hands it to an optimizer whose own cross-replica sum is turned off
(`set_gradient_aggregation(optimizer, False)`). Before, the optimizer summed
the (already summed) gradient once more. This script builds run_classifier's
step (BertClassifier, its AdamWeightDecay, clip 1.0) under MirroredStrategy
over two logical CPUs, both ways, and prints for each the elements and bytes
the traced step all-reduces per device (from the graph, `all_reduces`) and
the median step time over interleaved rounds.

"before" re-enables the optimizer's sum on the same step: the communication
and work of the previous step, although the update it makes (with the
gradient counted twice) is not the one it made, which divided by the replica
count first. On one host the "network" is a memory copy, so the time saved is
small here; between hosts, each all-reduce of S bytes moves about 2(n-1)/n * S
through each worker's link (ring), which docs/guides/pretraining.md works out for BERT-base
and BERT-large.

    python benchmarks/gradient_all_reduce.py [--layers 4 --hidden 256] [--rounds 5]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from cpu_flags import cpu_description  # noqa: E402


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--vocab", type=int, default=30522)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8, help="global batch")
    parser.add_argument("--steps", type=int, default=5, help="steps per round")
    parser.add_argument("--rounds", type=int, default=5)
    return parser.parse_args()


def build(args, strategy, aggregate_twice):
    import bert_tf
    from bert_tf.tasks.classification import classifier_loss_fn
    from bert_tf.training import Trainer
    from bert_tf.training.optimization import create_optimizer
    from bert_tf.training.optimization import set_gradient_aggregation

    config = bert_tf.BertConfig(
        vocab_size=args.vocab,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=max(1, args.hidden // 64),
        intermediate_size=4 * args.hidden,
        max_position_embeddings=max(512, args.seq),
    )
    with strategy.scope():
        model = bert_tf.BertClassifier(config, num_labels=2)
        optimizer = create_optimizer("adamw_original", 2e-5, 10**6, 0, model)
    rng = np.random.default_rng(0)
    features = {
        "input_ids": rng.integers(1000, args.vocab, (64, args.seq)).astype("int32"),
        "input_mask": np.ones((64, args.seq), "int32"),
        "segment_ids": np.zeros((64, args.seq), "int32"),
        "label_ids": rng.integers(0, 2, 64).astype("int32"),
    }

    def dataset_fn(context, skip):
        data = tf.data.Dataset.from_tensor_slices(features).repeat()
        return data.batch(context.get_per_replica_batch_size(args.batch)).skip(skip)

    trainer = Trainer(
        strategy,
        model,
        optimizer,
        classifier_loss_fn(is_regression=False),
        dataset_fn,
        tempfile.mkdtemp(),
        num_train_steps=10**6,
        global_batch_size=args.batch,
    )
    if aggregate_twice:
        set_gradient_aggregation(optimizer, True)
    iterator = iter(
        strategy.distribute_datasets_from_function(lambda c: dataset_fn(c, 0))
    )
    loop = trainer.make_train_loop()
    params = int(sum(np.prod(v.shape) for v in model.trainable_variables))
    return loop, iterator, params


def main():
    print(cpu_description(), flush=True)
    args = parse_args()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration()] * 2
    )
    from bert_tf.training import create_strategy

    # The traced-graph all-reduce counter the trainer tests use.
    sys.path.insert(
        0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tests")
    )
    from collectives import all_reduces

    strategy = create_strategy("mirrored")
    runs = {}
    for name, twice in (("before (2 sums)", True), ("now (1 sum)", False)):
        loop, iterator, params = build(args, strategy, twice)
        traced = loop.get_concrete_function(iterator, tf.constant(args.steps))
        per_device = {}
        for device, dtype, elements in all_reduces(traced):
            size = tf.as_dtype(dtype).size
            per_device.setdefault(device, 0)
            per_device[device] += elements * size
        loop(iterator, tf.constant(1))  # warm-up
        runs[name] = (loop, iterator, params, max(per_device.values()), [])
    for _ in range(args.rounds):
        for loop, iterator, _, _, times in runs.values():
            began = time.perf_counter()
            float(loop(iterator, tf.constant(args.steps)))
            times.append((time.perf_counter() - began) / args.steps)
    print(
        f"BERT L{args.layers} H{args.hidden} vocab {args.vocab}, seq {args.seq}, "
        f"global batch {args.batch}, MirroredStrategy over 2 logical CPUs"
    )
    for name, (_, _, params, nbytes, times) in runs.items():
        print(
            f"{name:16s} params {params:,}  all-reduced per device per step "
            f"{nbytes / 1e6:8.2f} MB ({nbytes / (4 * params):.2f} x the gradient)  "
            f"step {statistics.median(times) * 1000:8.1f} ms (median of {args.rounds})"
        )


if __name__ == "__main__":
    main()
