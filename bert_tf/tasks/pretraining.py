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

import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.config import BertConfig
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep.dynamic_masking import mask_dynamically
from bert_tf.data_prep.dynamic_masking import special_token_ids
from bert_tf.data_prep.pretraining import expand_input_files
from bert_tf.data_prep.pretraining import pretraining_feature_spec
from bert_tf.errors import UserInputError
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.training import flags as common_flags
from bert_tf.training.output_dir import file_fingerprint
from bert_tf.training.progress import batches_with_progress
from bert_tf.training.run_setup import build_model
from bert_tf.training.run_setup import output_dir_lock
from bert_tf.training.run_setup import prepare_run
from bert_tf.training.run_setup import strategy_from_flags
from bert_tf.training.run_setup import train_or_restore
from bert_tf.training.run_setup import write_eval_results
from bert_tf.training.strategy import is_chief

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
    """The original's total_loss: Σ(w·CE)/(Σw + 1e-5) + mean(NSP CE)."""
    mlm_ce, weights, nsp_ce = _per_prediction_losses(batch, outputs)
    mlm_loss = tf.reduce_sum(weights * mlm_ce) / (tf.reduce_sum(weights) + 1e-5)
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
            "No eval batch: the input files hold fewer records than --eval_batch_size"
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


def dynamic_masking_options(flags_obj, config):
    """mask_dynamically's options for --dynamic_masking, else None."""
    if not flags_obj.dynamic_masking:
        return None
    return {
        "special_ids": special_token_ids(flags_obj.vocab_file),
        "vocab_size": config.vocab_size,
        "masked_lm_prob": flags_obj.masked_lm_prob,
    }


def validate_flags(flags_obj):
    """The original's checks, with the flag named in each message."""
    if not (flags_obj.do_train or flags_obj.do_eval):
        raise UserInputError("At least one of `do_train` or `do_eval` must be True.")
    for name in ("bert_config_file", "input_file", "output_dir"):
        if not getattr(flags_obj, name):
            raise UserInputError(f"Flag --{name} must be specified.")
    common_flags.validate_common_flags(flags_obj)
    for name in ("max_predictions_per_seq", "max_eval_steps"):
        if getattr(flags_obj, name) < 1:
            raise UserInputError(
                f"--{name}: must be positive, got {getattr(flags_obj, name)}"
            )
    if flags_obj.do_train and flags_obj.num_train_steps < 1:
        raise UserInputError(
            f"--num_train_steps: must be positive, got {flags_obj.num_train_steps}"
        )
    if flags_obj.num_warmup_steps < 0:
        raise UserInputError(
            f"--num_warmup_steps: must be ≥ 0, got {flags_obj.num_warmup_steps}"
        )
    if flags_obj.dynamic_masking and not flags_obj.vocab_file:
        raise UserInputError("--dynamic_masking needs --vocab_file (for the [MASK] id)")
    if not 0.0 < flags_obj.masked_lm_prob < 1.0:
        raise UserInputError(
            f"--masked_lm_prob must be in (0, 1), got {flags_obj.masked_lm_prob}"
        )
    if flags_obj.export_dir:
        raise UserInputError(
            "--export_dir: run_pretraining.py trains the pre-training heads; export "
            "the pre-trained encoder with export_saved_model.py "
            "--model_type=encoder --init_checkpoint=OUTPUT_DIR --vocab_file=..."
        )


def run(flags_obj):
    """Runs run_pretraining.py with the parsed flags; returns the eval results."""
    validate_flags(flags_obj)
    with output_dir_lock(flags_obj):
        return _run(flags_obj)


def _run(flags_obj):
    config = BertConfig.from_json_file(flags_obj.bert_config_file)
    prepare_run(flags_obj, config)
    input_files = expand_input_files(flags_obj.input_file)
    tf.io.gfile.makedirs(flags_obj.output_dir)
    logging.info("*** Input Files ***")
    for path in input_files:
        logging.info("  %s", path)

    strategy = strategy_from_flags(flags_obj)
    chief = is_chief(strategy)
    model = build_model(strategy, BertPretrainer, config, flags_obj.init_checkpoint)

    if flags_obj.do_train:
        logging.info("***** Running training *****")
        logging.info("  Batch size = %d", flags_obj.train_batch_size)
        logging.info("  Num steps = %d", flags_obj.num_train_steps)
    global_step = train_or_restore(
        flags_obj,
        strategy,
        model,
        script="run_pretraining",
        config=config,
        loss_fn=pretraining_loss,
        dataset_fn=training_dataset_fn(
            input_files,
            flags_obj.max_seq_length,
            flags_obj.max_predictions_per_seq,
            flags_obj.train_batch_size // flags_obj.gradient_accumulation_steps,
            flags_obj.seed,
            dynamic_masking=dynamic_masking_options(flags_obj, config),
        ),
        data=[file_fingerprint(path) for path in input_files],
        num_train_steps=flags_obj.num_train_steps,
        num_warmup_steps=flags_obj.num_warmup_steps,
    )

    results = None
    if flags_obj.do_eval and chief:
        logging.info("***** Running evaluation *****")
        logging.info("  Batch size = %d", flags_obj.eval_batch_size)
        dataset = eval_dataset(
            input_files,
            flags_obj.max_seq_length,
            flags_obj.max_predictions_per_seq,
            flags_obj.eval_batch_size,
            flags_obj.max_eval_steps,
        )
        results = evaluate(
            model,
            dataset,
            global_step,
            flags_obj.max_eval_steps * flags_obj.eval_batch_size,
        )
        write_eval_results(
            results, os.path.join(flags_obj.output_dir, "eval_results.txt")
        )
    return results
