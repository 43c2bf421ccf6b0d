"""The set-up and wrap-up steps every run_* script shares.

Config from the flags, seed and precision, the strategy, the model (from
`--init_checkpoint` or fresh), the weights-only final checkpoint and the
restore for eval/predict-only runs — one implementation for
run_classifier.py, run_squad.py and run_pretraining.py.
"""

import os
import shutil

import keras
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import save_tf1_checkpoint
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.optimization import create_optimizer
from bert_tf.training.strategy import create_strategy


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


def restore_latest(model, output_dir):
    """For runs without training: the newest training checkpoint in output_dir.

    Returns its step, or 0 (the model keeps its initial weights) when there is
    none.
    """
    latest = tf.train.latest_checkpoint(os.path.join(output_dir, "checkpoints"))
    if latest:
        tf.train.Checkpoint(model=model).restore(latest).expect_partial()
        step = int(latest.rsplit("-", 1)[1])
        logging.info("Using the weights of %s (step %d)", latest, step)
        return step
    logging.info("No checkpoint in %s: using the initial weights", output_dir)
    return 0


def export_from_flags(flags_obj, model, **kwargs):
    """--export_dir: the SavedModel (and model.keras) for TF Serving."""
    from bert_tf.export import export_saved_model

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
    """`key = value` lines sorted by key, as the original's eval_results.txt."""
    with tf.io.gfile.GFile(path, "w") as writer:
        logging.info("***** Eval results *****")
        for key in sorted(results):
            logging.info("  %s = %s", key, results[key])
            writer.write(f"{key} = {results[key]}\n")
