"""What run_pretraining.py does: pre-train BERT on masked LM + next sentence.

The flags, input pipeline, losses and eval metrics are the original's (spec
§1.3, §2.1, §3.3): records from create_pretraining_data.py, MLM loss
Σ(w·CE) / (Σw + 1e-5), NSP loss the mean CE, total loss their sum, and
`eval_results.txt` with masked_lm_accuracy, masked_lm_loss,
next_sentence_accuracy, next_sentence_loss, loss and global_step. On top: any
tf.distribute strategy, mixed precision, gradient accumulation, LAMB,
resuming a killed run, and a final checkpoint without optimizer slots under
the original variable names (`model.ckpt-<step>` + `bert_config.json`).
"""

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep.dynamic_masking import mask_dynamically
from bert_tf.data_prep.dynamic_masking import special_token_ids
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.data_prep.pretraining import expand_input_files
from bert_tf.data_prep.pretraining import pretraining_feature_spec
from bert_tf.errors import UserInputError
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.options.checks import check_once
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.training_data import TrainingData
from bert_tf.training.progress import batches_with_progress

MODEL_INPUTS = (*ENCODER_INPUT_NAMES, "masked_lm_positions")


# --------------------------------------------------------------------------
# Losses and metrics
# --------------------------------------------------------------------------


def _labels(batch):
    ids = tf.cast(batch["masked_lm_ids"], tf.int32)
    weights = tf.cast(batch["masked_lm_weights"], tf.float32)
    nsp = tf.reshape(tf.cast(batch["next_sentence_labels"], tf.int32), [-1])
    return ids, weights, nsp


def _per_prediction_losses(batch, outputs):
    """(MLM CE [B, P], MLM weights [B, P], NSP CE [B]) in float32."""
    ids, weights, nsp = _labels(batch)
    mlm_logits = tf.cast(outputs["mlm_logits"], tf.float32)
    nsp_logits = tf.cast(outputs["nsp_logits"], tf.float32)
    mlm_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(ids, mlm_logits)
    nsp_ce = tf.nn.sparse_softmax_cross_entropy_with_logits(nsp, nsp_logits)
    return mlm_ce, weights, nsp_ce


def pretraining_loss(batch, outputs):
    """The original's total_loss: Σ(w·CE)/(Σw + 1e-5) + mean(NSP CE).

    Σw is that of the whole global batch: under a strategy of n replicas
    (`strategy.run`) each replica's Σ(w·CE) is divided by (Σw over all
    replicas + 1e-5) / n, so that the mean of the replicas' losses, and the
    sum of their gradients / n, are those of the global batch in one process.
    A replica's own Σw would weight each replica's predictions by its own
    count (replicas with fewer masked tokens weigh more per token): two
    workers ended 40 steps 7% away from the one-process weights.
    """
    mlm_ce, weights, nsp_ce = _per_prediction_losses(batch, outputs)
    total_weight = tf.reduce_sum(weights) + 1e-5
    context = tf.distribute.get_replica_context()
    replicas = context.num_replicas_in_sync if context is not None else 1
    if replicas > 1:
        # The labels' weights carry no gradient: one scalar all-reduce.
        weight = tf.reduce_sum(weights)
        total_weight = (
            context.all_reduce(tf.distribute.ReduceOp.SUM, weight) + 1e-5
        ) / replicas
    mlm_loss = tf.reduce_sum(weights * mlm_ce) / total_weight
    return mlm_loss + tf.reduce_mean(nsp_ce)


def evaluate(model, dataset, global_step, num_examples=None):
    """The original's eval metrics, accumulated over every batch as tf.metrics."""

    @tf.function
    def step(batch):
        outputs = model({k: batch[k] for k in MODEL_INPUTS}, training=False)
        mlm_ce, weights, nsp_ce = _per_prediction_losses(batch, outputs)
        ids, _, nsp = _labels(batch)
        mlm_pred = tf.argmax(outputs["mlm_logits"], axis=-1, output_type=tf.int32)
        nsp_pred = tf.argmax(outputs["nsp_logits"], axis=-1, output_type=tf.int32)
        mlm_loss = tf.reduce_sum(weights * mlm_ce) / (tf.reduce_sum(weights) + 1e-5)
        return {
            "mlm_correct": tf.reduce_sum(
                weights * tf.cast(mlm_pred == ids, tf.float32)
            ),
            "mlm_ce": tf.reduce_sum(weights * mlm_ce),
            "mlm_weight": tf.reduce_sum(weights),
            "nsp_correct": tf.reduce_sum(tf.cast(nsp_pred == nsp, tf.float32)),
            "nsp_ce": tf.reduce_sum(nsp_ce),
            "nsp_count": tf.cast(tf.size(nsp), tf.float32),
            "loss": mlm_loss + tf.reduce_mean(nsp_ce),
        }

    sums = {}
    batches = 0
    for batch in batches_with_progress(dataset, num_examples):
        for key, value in step(batch).items():
            sums[key] = sums.get(key, 0.0) + float(value)
        batches += 1
    if not batches:
        raise UserInputError(
            "No eval batch: the input files hold fewer records than eval_batch_size",
            argument="eval_batch_size",
        )

    def ratio(a, b):
        return float(np.float32(sums[a] / sums[b])) if sums[b] else 0.0

    return {
        "masked_lm_accuracy": ratio("mlm_correct", "mlm_weight"),
        "masked_lm_loss": ratio("mlm_ce", "mlm_weight"),
        "next_sentence_accuracy": ratio("nsp_correct", "nsp_count"),
        "next_sentence_loss": ratio("nsp_ce", "nsp_count"),
        # The Estimator's `loss`: the mean of the batches' total losses.
        "loss": float(np.float32(sums["loss"] / batches)),
        "global_step": int(global_step),
    }


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------


def training_dataset_fn(
    input_files,
    max_seq_length,
    max_predictions_per_seq,
    batch_size,
    seed,
    dynamic_masking=None,
):
    """`dataset_fn(input_context, skip_batches)` for the Trainer.

    As the original's training input_fn: the file list shuffled and repeated,
    read `cycle_length=min(4, n_files)` files at a time, shuffled with a
    buffer of 100 records, parsed and batched with drop_remainder. Seeded and
    deterministic, so a resumed run skips exactly the batches it consumed.
    `dynamic_masking`: keyword arguments of `mask_dynamically` (special_ids,
    vocab_size, masked_lm_prob) to re-mask every element as it is read.
    """
    indexed_map = None
    if dynamic_masking:
        # Keyed by the element's index in the endless stream: new masks each
        # epoch, the same ones after a resume.
        def indexed_map(index, features):
            return mask_dynamically(
                features,
                tf.stack([tf.cast(seed, tf.int64), index]),
                **dynamic_masking,
            )

    return record_pipeline.training_dataset_fn(
        list(input_files),
        pretraining_feature_spec(max_seq_length, max_predictions_per_seq),
        batch_size,
        seed,
        shuffle_buffer=100,
        interleave_files=True,
        indexed_map=indexed_map,
    )


def eval_dataset(
    input_files, max_seq_length, max_predictions_per_seq, batch_size, max_eval_steps
):
    """As the original: the files in order, repeated, `max_eval_steps` batches."""
    return record_pipeline.ordered_dataset(
        list(input_files),
        pretraining_feature_spec(max_seq_length, max_predictions_per_seq),
        batch_size,
        repeat=True,
        drop_remainder=True,
        max_batches=max_eval_steps,
    )


# --------------------------------------------------------------------------
# Run
# --------------------------------------------------------------------------


def dynamic_masking_options(options, vocab_file, config):
    """mask_dynamically's options for --dynamic_masking, else None."""
    if not options.dynamic_masking:
        return None
    return {
        "special_ids": special_token_ids(vocab_file),
        "vocab_size": config.vocab_size,
        "masked_lm_prob": options.masked_lm_prob,
    }


# What the heads of a checkpoint without them start from (`MaskedLMHead`,
# `LogitsHead`): the original's run_pretraining initialisers.
_HEADS = {
    "cls/predictions/": "masked-LM head",
    "cls/seq_relationship/": "next-sentence head",
}


def log_initialised_heads(report):
    """One line per head the checkpoint lacked (a Hugging Face or
    sentence-transformers encoder has neither): they start as the original's
    run_pretraining initialises them."""
    for prefix, head in _HEADS.items():
        names = [n for n in report.missing if n.startswith(prefix)]
        if names:
            logging.info(
                "%s has no %s (%d variables): initialised as the original does "
                "(truncated normal with stddev initializer_range, zero biases, "
                "LayerNorm gamma 1 and beta 0)",
                report.path,
                head,
                len(names),
            )


class PretrainingTask(Task):
    """Masked LM + next sentence prediction: run_pretraining's task.

    A task on the same protocol as the fine-tuning ones: it builds a model,
    batches records, has a loss and an evaluation; it has no predictions
    and no export (the encoder is exported with export_saved_model).

    Args:
      run: the `RunOptions` (step schedule: `TrainingOptions.num_train_steps`).
      options: the `PretrainingOptions`.

    Example:

    ```python
    results = run_task(PretrainingTask(run_options, PretrainingOptions(input_file=f)))
    ```
    """

    script = "run_pretraining"
    model_class = BertPretrainer

    def __init__(self, run, options):
        check_once(options, run)
        super().__init__(run, options)

    def build_model(self, config):
        model = super().build_model(config)
        report = getattr(model, "checkpoint_load_report", None)
        if report is not None:
            log_initialised_heads(report)
        return model

    def tokenization(self, model):
        """The vocabulary copied beside the final checkpoint (so the output
        dir is a model dir that embed, run_similarity and the exports read):
        --vocab_file, else --init_checkpoint's own, else none (as the
        original, run_pretraining needs no vocabulary)."""
        vocab_file = self.run.vocab_file
        if vocab_file is None and self.run.init_checkpoint:
            from bert_tf.checkpoints.loading import find_checkpoint

            vocab_file = find_checkpoint(self.run.init_checkpoint).vocab_file
            if vocab_file is not None and not vocab_file.endswith(".txt"):
                vocab_file = None  # a tokenizer.json: not the original's format
        return vocab_file, self.run.do_lower_case, self.run.max_seq_length

    def prepare(self, config):
        self.config = config
        self.input_files = expand_input_files(self.options.input_file)
        logging.info("*** Input Files ***")
        for path in self.input_files:
            logging.info("  %s", path)

    def training_data(self):
        run, training = self.run, self.run.training
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d", training.train_batch_size)
        logging.info("  Num steps = %d", training.num_train_steps)
        dataset_fn = training_dataset_fn(
            self.input_files,
            run.max_seq_length,
            self.options.max_predictions_per_seq,
            training.micro_batch_size,
            run.seed,
            dynamic_masking=dynamic_masking_options(
                self.options, run.vocab_file, self.config
            ),
        )
        return TrainingData(
            dataset_fn,
            training.num_train_steps,
            [file_fingerprint(path) for path in self.input_files],
        )

    def loss(self, batch, outputs):
        return pretraining_loss(batch, outputs)

    def evaluate(self, model, global_step):
        run, options = self.run, self.options
        logging.info("***** Running evaluation *****")
        logging.info("  Batch size = %d", run.eval_batch_size)
        dataset = eval_dataset(
            self.input_files,
            run.max_seq_length,
            options.max_predictions_per_seq,
            run.eval_batch_size,
            options.max_eval_steps,
        )
        return evaluate(
            model,
            dataset,
            global_step,
            options.max_eval_steps * run.eval_batch_size,
        )


def run(run_options, pretraining_options):
    """Runs run_pretraining with its options; returns the eval results."""
    return run_task(PretrainingTask(run_options, pretraining_options))
