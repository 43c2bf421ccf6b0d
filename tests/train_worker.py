"""A small training run in its own process, for the Trainer's strategy tests.

    python tests/train_worker.py STRATEGY OUTPUT_DIR STEPS [--logical-cpus N]
        [--accumulation K]

Prints one JSON line: {"losses": [...], "step": N, "weights_sum": float}
(with --count-all-reduces also "all_reduces": [[device, dtype, elements]...]
and "num_parameters").
Dropout is off so that runs under different strategies are comparable.
"""

import argparse
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tiny_models import tiny_bert_config


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("strategy")
    parser.add_argument("output_dir")
    parser.add_argument("steps", type=int)
    parser.add_argument("--logical-cpus", type=int, default=1)
    parser.add_argument("--accumulation", type=int, default=1)
    parser.add_argument("--save-every", type=int, default=1000)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--xla", action="store_true")
    parser.add_argument(
        "--count-all-reduces",
        action="store_true",
        help="also report the all-reduce ops of the traced step",
    )
    args = parser.parse_args()

    if args.logical_cpus > 1:
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * args.logical_cpus
        )
    import keras

    import bert_tf
    from bert_tf.training import Trainer
    from bert_tf.training import create_strategy

    if args.dtype != "float32":
        keras.mixed_precision.set_global_policy(args.dtype)
    strategy = create_strategy(args.strategy)
    config = tiny_bert_config(
        99, intermediate_size=37, max_position_embeddings=40, dropout=0.0
    )
    with strategy.scope():
        keras.utils.set_random_seed(1)
        model = bert_tf.BertClassifier(config, num_labels=2, dropout_rate=0.0)
        optimizer = keras.optimizers.SGD(0.5)
        if args.dtype == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)

    rng = np.random.default_rng(0)
    ids = rng.integers(1, 99, size=(64, 12)).astype("int32")
    labels = (ids[:, 1] > 50).astype("int32")
    global_batch = 16

    def dataset_fn(context, skip):
        per_replica = (
            context.get_per_replica_batch_size(global_batch) // args.accumulation
        )
        data = tf.data.Dataset.from_tensor_slices(
            {
                "input_ids": ids,
                "input_mask": np.ones_like(ids),
                "segment_ids": np.zeros_like(ids),
                "label_ids": labels,
            }
        )
        # Consecutive per-replica batches go to consecutive replicas (and
        # workers), so each global batch is the single-device batch.
        data = data.repeat().batch(per_replica, drop_remainder=True)
        data = data.shard(context.num_input_pipelines, context.input_pipeline_id)
        return data.skip(skip)

    def loss_fn(batch, outputs):
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                batch["label_ids"], outputs["logits"]
            )
        )

    losses = []
    trainer = Trainer(
        strategy,
        model,
        optimizer,
        loss_fn,
        dataset_fn,
        args.output_dir,
        num_train_steps=args.steps,
        global_batch_size=global_batch,
        save_checkpoints_steps=args.save_every,
        gradient_accumulation_steps=args.accumulation,
        clip_norm=1.0,
        use_xla=args.xla,
    )
    original = trainer.make_train_loop

    def recording_loop():
        loop = original()

        def run(iterator, steps):
            loss = loop(iterator, steps)
            losses.append(float(loss))
            return loss

        return run

    trainer.make_train_loop = recording_loop
    trainer.train()
    weights_sum = float(sum(np.abs(v.numpy()).sum() for v in model.trainable_variables))
    report = {"losses": losses, "step": trainer.global_step, "weights_sum": weights_sum}
    if args.count_all_reduces:
        from collectives import all_reduces

        iterator = iter(
            strategy.distribute_datasets_from_function(lambda c: dataset_fn(c, 0))
        )
        traced = original().get_concrete_function(iterator, tf.constant(1))
        report["all_reduces"] = all_reduces(traced)
        report["num_parameters"] = int(
            sum(np.prod(v.shape) for v in model.trainable_variables)
        )
    print(json.dumps(report))


if __name__ == "__main__":
    main()
