"""Training a run to its last step, or restoring the weights a run trained.

`train_or_restore` is what every task's run does between building the model
and evaluating it: with --do_train, claim output_dir for this run
(`RunSettings`), build the optimizer, train (or resume) with the `Trainer`
and save the final weights-only checkpoint; without, find the trained
weights (`restore_trained`).
"""

import os
import shutil

import keras
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import save_tf1_checkpoint
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.errors import UserInputError
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.output_dir import RunSettings
from bert_tf.training.strategy import is_chief
from bert_tf.training.trainer import Trainer
from bert_tf.training.trainer import restore_newest_readable


def training_steps(num_examples, train_batch_size, num_train_epochs):
    """The original's `int(num_examples / train_batch_size * num_train_epochs)`.

    Raises:
        UserInputError: it is 0 (too few examples for one batch).
    """
    steps = int(num_examples / train_batch_size * num_train_epochs)
    if steps < 1:
        raise UserInputError(
            f"{num_examples} training examples / train_batch_size="
            f"{train_batch_size} * num_train_epochs={num_train_epochs} is less than "
            "one step: use a smaller batch or more epochs or examples",
            argument=("train_batch_size", "num_train_epochs"),
        )
    return steps


def make_optimizer(
    run, strategy, model, num_train_steps, learning_rate_multipliers=None
):
    """--optimizer with the original's schedule, loss-scaled for mixed_float16;
    `learning_rate_multipliers` as `create_optimizer`'s."""
    training = run.training
    with strategy.scope():
        optimizer = create_optimizer(
            training.optimizer,
            training.learning_rate,
            num_train_steps,
            training.warmup_steps(num_train_steps),
            model,
            learning_rate_multipliers=learning_rate_multipliers,
        )
        if run.dtype == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer


def save_final_checkpoint(model, output_dir, global_step, vocab_file=None):
    """Weights only (no optimizer slots), original names, beside bert_config.json.

    Earlier `model.ckpt-*` files are removed so the directory holds one
    checkpoint and loads with `from_checkpoint(output_dir)`.
    """
    prefix = os.path.join(output_dir, f"model.ckpt-{global_step}")
    for stale in tf.io.gfile.glob(os.path.join(output_dir, "model.ckpt-*")):
        tf.io.gfile.remove(stale)
    save_tf1_checkpoint(model, prefix)
    if vocab_file:
        vocab = os.path.join(output_dir, "vocab.txt")
        if not tf.io.gfile.exists(vocab):
            shutil.copyfile(vocab_file, vocab)
    logging.info("Saved the trained weights to %s", prefix)


def train_or_restore(
    run,
    strategy,
    model,
    *,
    settings,
    loss_fn,
    training_data,
    vocab_file=None,
    final_checkpoint=True,
):
    """--do_train: trains (or resumes) and saves the final weights; else
    restores the trained weights (`restore_trained`). Returns the step.

    Args:
        run: the `RunOptions`.
        settings: what defines the run (`RunSettings`: a rerun with other
            settings stops instead of resuming).
        loss_fn: `loss_fn(batch, outputs) -> scalar`.
        training_data: the task's `TrainingData` (with --do_train).
        vocab_file: copied beside the final checkpoint, if given.
        final_checkpoint: save the final weights-only `model.ckpt-<step>`
            (False: the task saves the trained model its own way).
    """
    if not run.do_train:
        return restore_trained(model, run)
    training = run.training
    if is_chief(strategy):
        RunSettings(run.output_dir, settings).claim(
            overwrite=training.overwrite_output_dir
        )
    num_train_steps = training_data.num_train_steps
    optimizer = make_optimizer(
        run,
        strategy,
        model,
        num_train_steps,
        training_data.learning_rate_multipliers,
    )
    trainer = Trainer(
        strategy,
        model,
        optimizer,
        loss_fn,
        training_data.dataset_fn,
        run.output_dir,
        num_train_steps=num_train_steps,
        global_batch_size=training.train_batch_size,
        save_checkpoints_steps=training.save_checkpoints_steps,
        gradient_accumulation_steps=training.gradient_accumulation_steps,
        use_xla=training.use_xla,
        steps_per_loop=(
            training.iterations_per_loop if run.distribution.use_tpu else 1
        ),
    )
    trainer.train()
    if final_checkpoint and is_chief(strategy):
        save_final_checkpoint(model, run.output_dir, trainer.global_step, vocab_file)
    return trainer.global_step


def restore_trained(model, run):
    """For runs without --do_train: the trained weights, or a clear error.

    In order: the newest readable training checkpoint in
    output_dir/checkpoints, the final `model.ckpt-<step>` in output_dir, or a
    fine-tuned --init_checkpoint that held every variable of the model (the
    task head too). Returns the step (0 for --init_checkpoint).

    Raises:
        UserInputError: none of these: evaluating pre-trained or random
            weights with a fresh head would report meaningless results.
    """
    output_dir = run.output_dir
    state = tf.train.get_checkpoint_state(os.path.join(output_dir, "checkpoints"))
    if state and state.all_model_checkpoint_paths:
        path = restore_newest_readable(
            tf.train.Checkpoint(model=model),
            state.all_model_checkpoint_paths,
            lambda status: status.expect_partial(),
        )
        step = int(path.rsplit("-", 1)[1])
        logging.info("Using the weights of %s (step %d)", path, step)
        return step
    finals = tf.io.gfile.glob(os.path.join(output_dir, "model.ckpt-*.index"))
    if finals:
        path = max(finals, key=lambda p: int(p[: -len(".index")].rsplit("-", 1)[1]))
        path = path[: -len(".index")]
        report = load_checkpoint(model, path)
        if not report.missing:
            step = int(path.rsplit("-", 1)[1])
            logging.info("Using the final weights %s (step %d)", path, step)
            return step
    init = run.init_checkpoint
    report = getattr(model, "checkpoint_load_report", None)
    if init and report is not None and not report.missing:
        logging.info("Using the fine-tuned weights of init_checkpoint=%s", init)
        return 0
    if init and report is not None:
        reason = (
            f"init_checkpoint={init} lacks {len(report.missing)} of the model's "
            f"variables ({', '.join(report.missing[:4])}"
            f"{', …' if len(report.missing) > 4 else ''}): it is not fine-tuned "
            "for this task"
        )
    else:
        reason = "and no init_checkpoint"
    raise UserInputError(
        "do_eval/do_predict without do_train need trained weights: "
        f"output_dir={output_dir} holds no training checkpoint {reason}. Train "
        "first (do_train), or point output_dir at a trained run or "
        "init_checkpoint at a fine-tuned checkpoint with the task head.",
        argument=("do_eval", "do_predict", "do_train", "output_dir", "init_checkpoint"),
    )
