"""The set-up and wrap-up steps every run_* script shares.

Config from the flags, seed and precision, the strategy, the model (from
`--init_checkpoint` or fresh), the lock on output_dir, training or restoring
(`train_or_restore`: the Trainer, the run's recorded settings, the
weights-only final checkpoint, the checks of eval/predict-only runs) and the
eval results file — one implementation for run_classifier.py, run_squad.py
and run_pretraining.py.
"""

import contextlib
import json
import os
import shutil

import keras
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import save_tf1_checkpoint
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.optimization import create_optimizer
from bert_tf.training.output_dir import OutputDirLock
from bert_tf.training.output_dir import RunSettings
from bert_tf.training.output_dir import file_fingerprint
from bert_tf.training.strategy import create_strategy
from bert_tf.training.strategy import is_chief
from bert_tf.training.strategy import is_chief_in_tf_config
from bert_tf.training.trainer import Trainer
from bert_tf.training.trainer import restore_newest_readable

# Flags that define what a training run computes (those a script has): a
# rerun that changes one of them is another run, not a resume. Hardware and
# bookkeeping flags (strategy, XLA, save frequency, eval/predict) are not.
RUN_DEFINING_FLAGS = (
    "task_name",
    "xnli_language",
    "data_dir",
    "train_file",
    "text_a_column",
    "text_b_column",
    "label_column",
    "has_header",
    "is_regression",
    "skip_bad_rows",
    "input_file",
    "version_2_with_negative",
    "doc_stride",
    "max_query_length",
    "init_checkpoint",
    "vocab_file",
    "do_lower_case",
    "max_seq_length",
    "use_crf",
    "crf_constrained",
    "max_predictions_per_seq",
    "dynamic_masking",
    "masked_lm_prob",
    "train_batch_size",
    "gradient_accumulation_steps",
    "learning_rate",
    "num_train_epochs",
    "warmup_proportion",
    "num_train_steps",
    "num_warmup_steps",
    "optimizer",
    "dtype",
    "seed",
    "pad_to_longest",
    "length_bucketing",
)


def load_config(flags_obj):
    """--bert_config_file, or the config that sits beside --init_checkpoint."""
    if flags_obj.bert_config_file:
        return BertConfig.from_json_file(flags_obj.bert_config_file)
    if getattr(flags_obj, "init_checkpoint", None):
        return BertConfig.from_json_file(
            find_checkpoint(flags_obj.init_checkpoint).config_file
        )
    raise UserInputError(
        "Flag --bert_config_file must be specified (or an --init_checkpoint with one)."
    )


def prepare_run(flags_obj, config):
    """Seed, precision policy, the original's sequence-length check, output_dir."""
    keras.utils.set_random_seed(flags_obj.seed)
    if flags_obj.dtype != "float32":
        keras.mixed_precision.set_global_policy(flags_obj.dtype)
    if flags_obj.max_seq_length > config.max_position_embeddings:
        raise UserInputError(
            f"Cannot use sequence length {flags_obj.max_seq_length} because the BERT model "
            f"was only trained up to sequence length {config.max_position_embeddings} "
            "(--max_seq_length > max_position_embeddings)"
        )
    tf.io.gfile.makedirs(flags_obj.output_dir)


def strategy_from_flags(flags_obj):
    return create_strategy(
        flags_obj.distribution_strategy,
        num_gpus=flags_obj.num_gpus,
        use_tpu=flags_obj.use_tpu,
        tpu_name=flags_obj.tpu_name,
        tpu_zone=flags_obj.tpu_zone,
        gcp_project=flags_obj.gcp_project,
        master=flags_obj.master,
    )


def build_model(strategy, model_class, config, init_checkpoint=None, **kwargs):
    """`model_class` under the strategy's scope, from the checkpoint if given."""
    with strategy.scope():
        if init_checkpoint:
            return model_class.from_checkpoint(init_checkpoint, config=config, **kwargs)
        return model_class(config, **kwargs)


def optimizer_from_flags(flags_obj, strategy, model, num_train_steps, num_warmup_steps):
    """--optimizer with the original's schedule, loss-scaled for mixed_float16."""
    with strategy.scope():
        optimizer = create_optimizer(
            flags_obj.optimizer,
            flags_obj.learning_rate,
            num_train_steps,
            num_warmup_steps,
            model,
        )
        if flags_obj.dtype == "mixed_float16":
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


def training_steps(num_examples, train_batch_size, num_train_epochs):
    """The original's `int(num_examples / train_batch_size * num_train_epochs)`.

    Raises:
        ValueError: it is 0 (too few examples for one batch).
    """
    steps = int(num_examples / train_batch_size * num_train_epochs)
    if steps < 1:
        raise UserInputError(
            f"{num_examples} training examples / --train_batch_size="
            f"{train_batch_size} * --num_train_epochs={num_train_epochs} is less than "
            "one step: use a smaller batch or more epochs or examples"
        )
    return steps


def output_dir_lock(flags_obj):
    """The lock on --output_dir a run holds (none for a non-chief worker of a
    multi-worker run: the chief holds it for all)."""
    if not is_chief_in_tf_config():
        return contextlib.nullcontext()
    return OutputDirLock(flags_obj.output_dir)


def run_settings(flags_obj, script, config, data):
    """What defines a training run: the script, its run-defining flags, the
    model config, the vocabulary's fingerprint and `data` (fingerprints of
    the training data: `file_fingerprint`, `examples_fingerprint`)."""
    settings = {"script": script, "bert_config": config.to_dict()}
    for name in RUN_DEFINING_FLAGS:
        if hasattr(flags_obj, name):
            settings[name] = getattr(flags_obj, name)
    if getattr(flags_obj, "vocab_file", None):
        settings["vocab"] = file_fingerprint(flags_obj.vocab_file)
    settings["data"] = list(data)
    return settings


def train_or_restore(
    flags_obj,
    strategy,
    model,
    *,
    script,
    config,
    loss_fn,
    dataset_fn,
    data,
    num_train_steps,
    num_warmup_steps,
    vocab_file=None,
):
    """--do_train: trains (or resumes) and saves the final weights; else
    restores the trained weights (`restore_trained`). Returns the step.

    Training checks the output_dir holds this run or none (`RunSettings`,
    `--overwrite_output_dir`), builds the optimizer and the `Trainer` from the
    flags, trains to `num_train_steps` and (chief) writes `model.ckpt-<step>`,
    copying `vocab_file` beside it if given.

    Args:
        dataset_fn: the Trainer's `dataset_fn(input_context, skip_batches)`,
            batches of `train_batch_size // gradient_accumulation_steps`.
        data: fingerprints of the training data (`file_fingerprint` of
            input files, `examples_fingerprint` of parsed examples; not of
            records written by the run, whose bytes vary between processes).
    """
    if not flags_obj.do_train:
        return restore_trained(model, flags_obj)
    if is_chief(strategy):
        RunSettings(
            flags_obj.output_dir, run_settings(flags_obj, script, config, data)
        ).claim(overwrite=getattr(flags_obj, "overwrite_output_dir", False))
    optimizer = optimizer_from_flags(
        flags_obj, strategy, model, num_train_steps, num_warmup_steps
    )
    trainer = Trainer(
        strategy,
        model,
        optimizer,
        loss_fn,
        dataset_fn,
        flags_obj.output_dir,
        num_train_steps=num_train_steps,
        global_batch_size=flags_obj.train_batch_size,
        save_checkpoints_steps=flags_obj.save_checkpoints_steps,
        gradient_accumulation_steps=flags_obj.gradient_accumulation_steps,
        use_xla=flags_obj.use_xla,
        steps_per_loop=flags_obj.iterations_per_loop if flags_obj.use_tpu else 1,
    )
    trainer.train()
    if is_chief(strategy):
        save_final_checkpoint(
            model, flags_obj.output_dir, trainer.global_step, vocab_file
        )
    return trainer.global_step


def restore_trained(model, flags_obj):
    """For runs without --do_train: the trained weights, or a clear error.

    In order: the newest readable training checkpoint in
    output_dir/checkpoints, the final `model.ckpt-<step>` in output_dir, or a
    fine-tuned --init_checkpoint that held every variable of the model (the
    task head too). Returns the step (0 for --init_checkpoint).

    Raises:
        ValueError: none of these: evaluating pre-trained or random weights
            with a fresh head would report meaningless results.
    """
    output_dir = flags_obj.output_dir
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
    init = getattr(flags_obj, "init_checkpoint", None)
    report = getattr(model, "checkpoint_load_report", None)
    if init and report is not None and not report.missing:
        logging.info("Using the fine-tuned weights of --init_checkpoint=%s", init)
        return 0
    if init and report is not None:
        reason = (
            f"--init_checkpoint={init} lacks {len(report.missing)} of the model's "
            f"variables ({', '.join(report.missing[:4])}"
            f"{', …' if len(report.missing) > 4 else ''}): it is not fine-tuned "
            "for this task"
        )
    else:
        reason = "and no --init_checkpoint"
    raise UserInputError(
        "--do_eval/--do_predict without --do_train need trained weights: "
        f"--output_dir={output_dir} holds no training checkpoint {reason}. Train "
        "first (--do_train), or point --output_dir at a trained run or "
        "--init_checkpoint at a fine-tuned checkpoint with the task head."
    )


def export_from_flags(flags_obj, model, **kwargs):
    """--export_dir: the SavedModel (and model.keras) for TF Serving."""
    from bert_tf.serving import export_saved_model

    return export_saved_model(
        model,
        flags_obj.export_dir,
        flags_obj.vocab_file,
        flags_obj.do_lower_case,
        flags_obj.max_seq_length,
        tokenizer=flags_obj.serving_tokenizer,
        dtype=flags_obj.serving_dtype,
        version=flags_obj.export_version,
        **kwargs,
    )


def write_eval_results(results, path):
    """Logs `results` and writes them to `path`: for a `.json` path (run_squad's
    eval_results.json) a JSON object indented by 4, else `key = value` lines
    sorted by key, as the original's eval_results.txt."""
    logging.info("***** Eval results *****")
    for key in sorted(results):
        logging.info("  %s = %s", key, results[key])
    with tf.io.gfile.GFile(path, "w") as writer:
        if path.endswith(".json"):
            writer.write(json.dumps(results, indent=4) + "\n")
        else:
            for key in sorted(results):
                writer.write(f"{key} = {results[key]}\n")
