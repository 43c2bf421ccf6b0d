"""The training loop shared by run_classifier.py, run_squad.py and run_pretraining.py.

A `tf.function` around `strategy.run` rather than `model.fit`: Keras 3's `fit`
is broken under MultiWorkerMirroredStrategy (keras#20585), clips gradients per
replica before the all-reduce (the original clips the whole gradient), and has
no gradient accumulation. The loop here:

- sums gradients over micro-batches (`gradient_accumulation_steps`) and over
  replicas (one all-reduce per step: the optimizer's own sum is turned off),
  then clips the summed gradient by global norm (1.0, as the original), then
  applies the optimizer once;
- checkpoints model + optimizer + step every `save_checkpoints_steps` and
  resumes from the latest checkpoint, skipping the batches already consumed,
  so a killed run rerun with the same command ends at the same step;
- shows a progress bar (loss, examples/s) and writes TensorBoard scalars;
- stops with "NaN loss during training" (as the original's NanTensorHook) as
  soon as the loss is not finite, and never saves a checkpoint whose weights
  are not finite: the last good checkpoint stays the newest.
"""

import math
import os
import re
import time

import keras
import tensorflow as tf
from absl import logging

from bert_tf.errors import UserInputError
from bert_tf.training.optimization import set_gradient_aggregation
from bert_tf.training.progress import progress_bar
from bert_tf.training.strategy import is_chief
from bert_tf.training.strategy import lost_worker


def _without_autotune_model():
    # tf.data's autotuning model runs in a thread of each iterator that wakes
    # up at growing intervals (up to a minute), and at the end of training
    # the iterator's destructor waited for it: the process sat idle for 18-40
    # s after the last step in 5 of 10 runs of run_similarity.py (0.4 s in
    # the others). Without the model, the AUTOTUNE map and prefetch
    # keep working; the training input is a small part of a step.
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


WITHOUT_AUTOTUNE_MODEL = _without_autotune_model()


def _one_cpu(strategy):
    return isinstance(strategy, tf.distribute.OneDeviceStrategy) and all(
        "CPU" in device.upper() for device in strategy.extended.worker_devices
    )


class Trainer:
    """Trains `model` on a per-replica dataset with `strategy`.

    Args:
        strategy: a `tf.distribute.Strategy`; model and optimizer must have
            been created under its scope.
        model: the Keras model.
        optimizer: a Keras optimizer (it must not clip by itself). The
            Trainer turns its cross-replica sum off
            (`set_gradient_aggregation`): it is given the summed gradient.
        loss_fn: `loss_fn(batch, outputs) -> scalar`, the loss of one
            replica's micro-batch as the original defines it for a batch.
        dataset_fn: `dataset_fn(input_context, skip_batches) -> tf.data.Dataset`
            of per-replica micro-batches (features dict including labels) for
            this input pipeline, repeating, that skips its first
            `skip_batches` batches (those consumed before a resume).
        output_dir: where `checkpoints/` and `tensorboard/train` go.
        num_train_steps: optimizer steps to reach.
        global_batch_size: examples per optimizer step, all replicas and
            micro-batches together (for examples/s).
        save_checkpoints_steps: checkpoint frequency, in steps.
        gradient_accumulation_steps: micro-batches per optimizer step.
        clip_norm: global-norm clip of the summed gradient (None: no clip).
        use_xla: compile the replica step with XLA.
        steps_per_loop: optimizer steps per `tf.function` call (TPU: many).
        max_checkpoints: resumable checkpoints to keep.
    """

    def __init__(
        self,
        strategy,
        model,
        optimizer,
        loss_fn,
        dataset_fn,
        output_dir,
        num_train_steps,
        global_batch_size,
        save_checkpoints_steps=1000,
        gradient_accumulation_steps=1,
        clip_norm=1.0,
        use_xla=False,
        steps_per_loop=1,
        max_checkpoints=3,
    ):
        if gradient_accumulation_steps < 1:
            raise UserInputError(
                "gradient_accumulation_steps must be ≥ 1, got "
                f"{gradient_accumulation_steps}",
                argument="gradient_accumulation_steps",
            )
        self.strategy = strategy
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.dataset_fn = dataset_fn
        self.output_dir = output_dir
        self.num_train_steps = int(num_train_steps)
        self.global_batch_size = global_batch_size
        self.save_checkpoints_steps = max(1, int(save_checkpoints_steps))
        self.gradient_accumulation_steps = gradient_accumulation_steps
        self.clip_norm = clip_norm
        self.use_xla = use_xla
        self.steps_per_loop = max(1, int(steps_per_loop))
        self.chief = is_chief(strategy)
        # The first step's loss of each train_loop call (not checkpointed).
        self._first_loss = tf.Variable(0.0, trainable=False)

        with strategy.scope():
            optimizer.build(model.trainable_variables)
        # The step sums the replicas' gradients once, to clip the global
        # gradient; the optimizer must not sum them a second time.
        set_gradient_aggregation(optimizer, False)
        # The dropout layers' random streams (Keras SeedGenerator states,
        # which FastDropout and the fused kernels draw their ThreeFry seeds
        # from) are not in the model's own checkpoint: saved with it, a
        # resumed run draws the masks the uninterrupted run drew, bit for bit.
        self.checkpoint = tf.train.Checkpoint(
            model=model, optimizer=optimizer, random_streams=random_streams(model)
        )
        # Non-chief workers of a multi-worker run write to a scratch folder:
        # every worker must take part in saving, only the chief's copy counts.
        checkpoint_dir = os.path.join(output_dir, "checkpoints")
        if not self.chief:
            task_id = getattr(strategy.cluster_resolver, "task_id", 0)
            checkpoint_dir = os.path.join(output_dir, "worker_tmp", f"worker_{task_id}")
        remove_unfinished_saves(checkpoint_dir)
        self.manager = tf.train.CheckpointManager(
            self.checkpoint, checkpoint_dir, max_to_keep=max_checkpoints
        )

    @property
    def global_step(self):
        return int(self.optimizer.iterations.numpy())

    def restore(self):
        """Restores the newest readable checkpoint, if any; returns the step reached.

        A checkpoint that cannot be read (truncated, deleted data file) is
        reported with a WARNING naming it and the reason, and the next newest
        is tried. A non-chief worker restores the chief's checkpoints.
        """
        checkpoints = self.manager.checkpoints
        if not self.chief:
            # Every worker resumes from the chief's checkpoints: its own
            # scratch copies may be a save behind (killed while saving), and
            # workers starting at different steps would sum other batches.
            state = tf.train.get_checkpoint_state(
                os.path.join(self.output_dir, "checkpoints")
            )
            checkpoints = list(state.all_model_checkpoint_paths) if state else []
        path = restore_newest_readable(
            self.checkpoint,
            checkpoints,
            lambda status: status.assert_existing_objects_matched(),
        )
        if path:
            logging.info("Resumed from %s at step %d", path, self.global_step)
        return self.global_step

    def make_train_loop(self):
        """The compiled loop `train_loop(iterator, steps) -> loss` that `train` runs.

        Each of the `steps` optimizer steps takes `gradient_accumulation_steps`
        micro-batches from `iterator` (distributed; on one CPU the dataset's
        own), sums their gradients over micro-batches and replicas, clips and
        applies them; the loss of the last step is returned (the first step's
        is kept for the NaN check).
        """
        strategy = self.strategy
        model, optimizer = self.model, self.optimizer
        accumulation = self.gradient_accumulation_steps
        replicas = strategy.num_replicas_in_sync
        variables = model.trainable_variables
        # mixed_float16: the loss is scaled up for the backward pass; the
        # gradient is unscaled before clipping and scaled back for the
        # LossScaleOptimizer, which skips steps with inf/nan and adapts the scale.
        loss_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)

        def replica_step(micro_batches):
            total_loss = 0.0
            summed = None
            for batch in micro_batches:
                with tf.GradientTape() as tape:
                    outputs = model(model_inputs(model, batch), training=True)
                    loss = tf.cast(self.loss_fn(batch, outputs), tf.float32)
                    # Gradients of the mean over micro-batches and replicas.
                    scaled = loss / (accumulation * replicas)
                    if loss_scaled:
                        scaled = optimizer.scale_loss(scaled)
                grads = tape.gradient(scaled, variables)
                grads = [
                    tf.convert_to_tensor(g) if g is not None else None for g in grads
                ]
                summed = (
                    grads
                    if summed is None
                    else [_add(a, b) for a, b in zip(summed, grads, strict=True)]
                )
                total_loss += loss
            context = tf.distribute.get_replica_context()
            present = [g for g in summed if g is not None]
            reduced = iter(context.all_reduce(tf.distribute.ReduceOp.SUM, present))
            summed = [next(reduced) if g is not None else None for g in summed]
            if loss_scaled:
                scale = tf.cast(optimizer.dynamic_scale, tf.float32)
                summed = [g / scale if g is not None else None for g in summed]
            if self.clip_norm:
                # As the original: clip the whole (all-replica) gradient.
                clipped, _ = tf.clip_by_global_norm(
                    [g for g in summed if g is not None], self.clip_norm
                )
                clipped = iter(clipped)
                summed = [next(clipped) if g is not None else None for g in summed]
            if loss_scaled:
                summed = [g * scale if g is not None else None for g in summed]
            # Already the replicas' sum (aggregation is off, see __init__):
            # every replica applies the same update to its copy.
            optimizer.apply(summed, variables)
            return total_loss / accumulation

        # No autograph: replica_step's loops and branches are over Python
        # values, and converting the model's source is start-up time.
        replica_step = tf.function(
            replica_step, jit_compile=self.use_xla, autograph=False
        )

        first_loss = self._first_loss

        @tf.function
        def train_loop(iterator, steps):
            loss = tf.constant(0.0)
            for i in tf.range(steps):
                micro_batches = tuple(next(iterator) for _ in range(accumulation))
                per_replica = strategy.run(replica_step, args=(micro_batches,))
                loss = strategy.reduce(
                    tf.distribute.ReduceOp.MEAN, per_replica, axis=None
                )
                if i == 0:
                    # The loss of the weights the call started from (a
                    # checkpoint, when the previous call ended with a save).
                    first_loss.assign(loss)
            return loss

        return train_loop

    def train(self):
        """Runs (or resumes) training to `num_train_steps`; returns the last loss."""
        start = self.restore()
        if start >= self.num_train_steps:
            logging.info(
                "Already at step %d of %d: nothing to train",
                start,
                self.num_train_steps,
            )
            return None

        def dataset_fn(context):
            # Each input pipeline feeds num_replicas / num_pipelines replicas
            # one micro-batch each per micro-step.
            per_step = context.num_replicas_in_sync // context.num_input_pipelines
            skip = start * self.gradient_accumulation_steps * per_step
            return self.dataset_fn(context, skip).with_options(WITHOUT_AUTOTUNE_MODEL)

        if _one_cpu(self.strategy):
            # Distributing the dataset would put a multi-device iterator and
            # a device-side prefetch behind it, each with an autotuning model
            # of its own: one device takes the dataset as it is.
            dataset = dataset_fn(tf.distribute.InputContext())
        else:
            dataset = self.strategy.distribute_datasets_from_function(dataset_fn)
        try:
            return self._train_from(start, dataset)
        except tf.errors.OpError as error:
            lost = lost_worker(error, self.strategy, self.output_dir)
            if lost is None:
                raise
            # One line instead of TensorFlow's graph traceback; the survivors
            # stop (no hang) and a restart of all workers resumes.
            raise lost from error

    def _train_from(self, start, dataset):
        iterator = iter(dataset)
        train_loop = self.make_train_loop()
        writer = (
            tf.summary.create_file_writer(
                os.path.join(self.output_dir, "tensorboard", "train")
            )
            if self.chief
            else tf.summary.create_noop_writer()
        )
        progress = progress_bar(
            self.num_train_steps,
            stateful_metrics=["loss", "examples/s", "lr"],
            show=None if self.chief else False,
        )
        progress.update(start)
        step, loss = start, None
        while step < self.num_train_steps:
            # Stop each call at a checkpoint boundary so saves land on time.
            to_save = self.save_checkpoints_steps - step % self.save_checkpoints_steps
            steps = min(self.steps_per_loop, to_save, self.num_train_steps - step)
            began = time.perf_counter()
            loss = float(train_loop(iterator, tf.constant(steps)))
            first = float(self._first_loss.numpy())
            elapsed = time.perf_counter() - began
            previous, step = step, self.global_step
            if not (math.isfinite(first) and math.isfinite(loss)):
                if not math.isfinite(first):
                    # The weights this call started from give a NaN loss: a
                    # checkpoint of them is not one to resume or evaluate from.
                    self._remove_checkpoint_of(previous)
                self._stop_on_nan(step, f"loss {loss}")
            rate = steps * self.global_batch_size / elapsed
            lr = _current_learning_rate(self.optimizer)
            with writer.as_default(step=step):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("learning_rate", lr)
                tf.summary.scalar("examples_per_second", rate)
            progress.update(step, [("loss", loss), ("examples/s", rate), ("lr", lr)])
            if step % self.save_checkpoints_steps == 0 or step >= self.num_train_steps:
                # The loss is that of the weights before the step's update:
                # the update itself may have made them NaN.
                if not bool(all_finite(self.model.trainable_variables)):
                    self._stop_on_nan(step, "the weights are not finite")
                path = self.manager.save(checkpoint_number=step)
                logging.info(
                    "Saved checkpoint %s (step %d, loss %.6f)", path, step, loss
                )
        writer.flush()
        return loss

    def _remove_checkpoint_of(self, step):
        path = self.manager.latest_checkpoint
        if not path or not path.endswith(f"-{step}"):
            return
        for name in tf.io.gfile.glob(path + ".*"):
            tf.io.gfile.remove(name)
        kept = [p for p in self.manager.checkpoints if p != path]
        if kept:
            tf.compat.v1.train.update_checkpoint_state(
                self.manager.directory, kept[-1], all_model_checkpoint_paths=kept
            )
        else:
            tf.io.gfile.remove(os.path.join(self.manager.directory, "checkpoint"))
        logging.warning("Removed %s: its weights give a NaN loss", path)

    def _stop_on_nan(self, step, what):
        # From the directory: _remove_checkpoint_of may have changed it.
        last = tf.train.latest_checkpoint(self.manager.directory)
        kept = (
            f"the last good checkpoint, {last}, is kept"
            if last
            else "no checkpoint was written"
        )
        raise UserInputError(
            f"NaN loss during training: {what} at step {step}; training stopped "
            f"and {kept} (lower learning_rate, or check the config and the data)",
            argument="learning_rate",
        )


@tf.function
def all_finite(variables):
    """Whether every value of every variable is finite (one scalar)."""
    return tf.reduce_all(
        [tf.reduce_all(tf.math.is_finite(tf.cast(v, tf.float32))) for v in variables]
    )


def remove_unfinished_saves(checkpoint_dir):
    """Deletes `ckpt-N_temp/` folders: the shards of a save that never
    finished (a full disk, a kill), which nothing else would ever remove.
    One writer per output_dir (its lock) makes them no one's work in progress."""
    if not tf.io.gfile.isdir(checkpoint_dir):
        return
    for name in tf.io.gfile.listdir(checkpoint_dir):
        name = name.rstrip("/")
        if re.fullmatch(r"ckpt-\d+_temp", name):
            path = os.path.join(checkpoint_dir, name)
            logging.warning("Removing %s, left by a save that did not finish", path)
            tf.io.gfile.rmtree(path)


def random_streams(model):
    """The state variables of `model`'s random streams (dropout seeds), in
    layer order: the same list for the same architecture."""
    return [
        variable
        for variable in model.non_trainable_variables
        if variable.path.endswith("seed_generator_state")
    ]


def restore_newest_readable(checkpoint, paths, check=None):
    """Restores `checkpoint` from the newest of `paths` (oldest first) that reads.

    Unreadable ones are skipped with a WARNING naming the file and the
    reason. Returns the path restored, or None when `paths` is empty.

    Raises:
        ValueError: none of `paths` could be read.
    """
    failures = []
    for path in reversed(list(paths)):
        try:
            status = checkpoint.restore(path)
            if check is not None:
                check(status)
            return path
        # A damaged file fails in many ways (OpError, IndexError "read less
        # bytes", ValueError, a failed assert_*): each is reported, none lost.
        except Exception as error:  # noqa: BLE001
            reason = str(error).strip().splitlines()[0] if str(error) else repr(error)
            logging.warning(
                "Checkpoint %s cannot be read (%s): trying an older one", path, reason
            )
            failures.append(f"{path}: {reason}")
    if failures:
        raise UserInputError(
            "No readable checkpoint: " + "; ".join(failures) + " (delete them, or "
            "rerun with overwrite_output_dir to start over)",
            argument="overwrite_output_dir",
        )
    return None


def model_inputs(model, batch):
    """The entries of `batch` that are `model`'s inputs (labels stay out)."""
    if isinstance(model.input, dict):
        return {name: batch[name] for name in model.input}
    return batch


def _add(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a + b


def _current_learning_rate(optimizer):
    lr = optimizer.learning_rate
    return float(keras.ops.convert_to_numpy(lr))
