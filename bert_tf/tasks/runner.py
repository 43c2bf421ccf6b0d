"""The one runner: drives any `bert_tf.tasks.task.Task` from its options.

What every run shares lives here, once: the config (--bert_config_file or
the one beside --init_checkpoint) and its checks, seed and precision, the
strategy, the model under its scope, the lock on output_dir and the
settings that identify its run, training or restoring, chief-only
prediction and evaluation (eval results written), and the export.
"""

import contextlib
import json
import os

import keras
import tensorflow as tf
from absl import logging

from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.options import run_identity
from bert_tf.training.output_dir import OutputDirLock
from bert_tf.training.recorded_run import RecordedRun
from bert_tf.training.strategy import create_strategy
from bert_tf.training.strategy import is_chief
from bert_tf.training.strategy import is_chief_in_tf_config
from bert_tf.training.train_or_restore import train_or_restore


def run_task(task):
    """Runs `task` as its `RunOptions` ask; returns `evaluate`'s results (or None).

    Example:

    ```python
    results = run_task(ClassificationTask(run_options, classifier_options))
    ```
    """
    with output_dir_lock(task.run.output_dir):
        return _run_task(task)


def _run_task(task):
    run = task.run
    config = task.load_config()
    if config is not None:
        run.check_config(config)
    keras.utils.set_random_seed(run.seed)
    if run.dtype != "float32":
        keras.mixed_precision.set_global_policy(run.dtype)
    tf.io.gfile.makedirs(run.output_dir)
    # Read before `prepare`, which may rewrite label_list.json.
    recorded = recorded_runs(run)
    task.prepare(config)
    for record in recorded:
        check_recorded_run(task, record)
    if config is not None:
        check_segments(task, config)

    strategy = create_strategy(**run.distribution.strategy_kwargs())
    chief = is_chief(strategy)
    with strategy.scope():
        model = task.build_model(config)
    if config is None:
        # The checkpoint's own (e.g. a sentence-transformers directory's).
        config = model.encoder.config
        run.check_config(config)
    vocab_file = task.tokenization(model)[0]

    training_data = task.training_data() if run.do_train else None
    global_step = 0
    if run.do_train or task.restores_trained:
        global_step = train_or_restore(
            run,
            strategy,
            model,
            settings=(
                run_settings(task, config, training_data.fingerprints)
                if training_data
                else None
            ),
            loss_fn=task.loss,
            training_data=training_data,
            vocab_file=vocab_file if task.copies_vocab else None,
            final_checkpoint=task.saves_final_checkpoint,
        )
    if run.do_train and chief:
        task.after_training(model)

    results = None
    if run.do_predict and chief:
        task.predict(model, global_step)
    if run.do_eval and chief:
        results = task.evaluate(model, global_step)
        if task.eval_results_file:
            write_eval_results(
                results, os.path.join(run.output_dir, task.eval_results_file)
            )
    if run.export is not None and chief:
        task.export(model)
    return results


def load_config(run):
    """--bert_config_file, or the config that sits beside --init_checkpoint."""
    if run.bert_config_file:
        return BertConfig.from_json_file(run.bert_config_file)
    if run.init_checkpoint:
        from bert_tf.checkpoints.loading import find_checkpoint

        return BertConfig.from_json_file(
            find_checkpoint(run.init_checkpoint).config_file
        )
    raise UserInputError(
        "Flag bert_config_file must be specified (or an init_checkpoint with one).",
        argument=("bert_config_file", "init_checkpoint"),
    )


def recorded_runs(run):
    """Without --do_train: the runs whose weights this one reads (its
    output_dir's and --init_checkpoint's), whose records win over the flags.
    (With --do_train, `RunSettings` compares the whole run.)"""
    if run.do_train:
        return []
    runs = [RecordedRun(run.output_dir)]
    if run.init_checkpoint and tf.io.gfile.exists(run.init_checkpoint):
        runs.append(RecordedRun.beside(run.init_checkpoint))
    return [record for record in runs if record.exists]


def check_segments(task, config):
    """A task that reads sentence pairs needs two segment types: with
    `type_vocab_size=1` segment id 1 would index past the token type table
    (an error inside a gather on a CPU, silently row 0 on a GPU)."""
    if config.type_vocab_size < 2 and task.reads_sentence_pairs():
        raise UserInputError(
            f"{config.source or 'bert_config_file'}: type_vocab_size="
            f"{config.type_vocab_size}, but {task.script} reads sentence pairs "
            "(segment id 1): use a model with type_vocab_size >= 2",
            argument="bert_config_file",
        )


def check_recorded_run(task, recorded):
    """The vocabulary, casing and labels of `task`'s flags against what the
    run it reads recorded: a difference is a `UserInputError`."""
    run = task.run
    labels, labels_flag = task.flag_labels() or (None, None)
    recorded.check(
        vocab_file=run.vocab_file,
        do_lower_case=run.do_lower_case,
        label_list=labels,
        labels_flag=labels_flag,
    )


def output_dir_lock(output_dir):
    """The lock on --output_dir a run holds (none for a non-chief worker of a
    multi-worker run: the chief holds it for all)."""
    if not is_chief_in_tf_config():
        return contextlib.nullcontext()
    return OutputDirLock(output_dir)


def run_settings(task, config, fingerprints):
    """What defines a training run: the script, the run-defining options of
    the run and the task, the model config, the vocabulary's fingerprint and
    the training data's `fingerprints`."""
    return run_identity.run_settings(
        task.script, task.run, task.run_settings(), config, fingerprints
    )


def export_model(
    export, model, vocab_file, do_lower_case, max_seq_length, **serving_kwargs
):
    """The SavedModel for TF Serving of the model's family, as `export` (an
    `ExportOptions`: --export_dir, tokenizer, dtype, version) says."""
    from bert_tf.serving import export_saved_model

    return export_saved_model(
        model,
        export.export_dir,
        vocab_file,
        do_lower_case,
        max_seq_length,
        tokenizer=export.serving_tokenizer,
        dtype=export.serving_dtype,
        version=export.export_version,
        **serving_kwargs,
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
