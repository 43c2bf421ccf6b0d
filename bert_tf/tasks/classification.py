"""What run_classifier.py does: fine-tune, evaluate and predict a sentence classifier.

The steps and files are the original's (spec §1.1, §4): features written to
`train.tf_record` / `eval.tf_record` / `predict.tf_record` in output_dir,
`num_train_steps = int(len(train_examples) / train_batch_size * num_train_epochs)`,
`eval_results.txt` and `test_results.tsv` in the original format. On top:
any tf.distribute strategy, mixed precision, gradient accumulation, resuming,
per-batch padding, GLUE metrics, and a final checkpoint without optimizer
slots under the original variable names.
"""

import os

import numpy as np
import tensorflow as tf
from absl import flags
from absl import logging

from bert_tf import tokenization
from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.classification_metrics import accuracy
from bert_tf.classification_metrics import glue_metrics
from bert_tf.models import BertClassifier
from bert_tf.training import flags as common_flags
from bert_tf.training.output_dir import examples_fingerprint
from bert_tf.training.run_setup import build_model
from bert_tf.training.run_setup import export_from_flags
from bert_tf.training.run_setup import load_config
from bert_tf.training.run_setup import output_dir_lock
from bert_tf.training.run_setup import prepare_run
from bert_tf.training.run_setup import strategy_from_flags
from bert_tf.training.run_setup import train_or_restore
from bert_tf.training.run_setup import training_steps
from bert_tf.training.run_setup import write_eval_results
from bert_tf.training.strategy import is_chief
from data_prep import glue
from data_prep.classifier_records import record_dataset
from data_prep.classifier_records import training_dataset_fn
from data_prep.classifier_records import write_classifier_records


def per_example_loss(labels, logits, is_regression):
    if is_regression:
        return tf.square(logits[:, 0] - tf.cast(labels, logits.dtype))
    return tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.cast(labels, tf.int32), logits
    )


def classifier_loss_fn(is_regression):
    """The original's loss: the mean over the batch (MSE for regression)."""

    def loss_fn(batch, outputs):
        logits = tf.cast(outputs["logits"], tf.float32)
        return tf.reduce_mean(
            per_example_loss(batch["label_ids"], logits, is_regression)
        )

    return loss_fn


def predict_logits(model, dataset):
    """Logits and labels of every example, in dataset order."""

    @tf.function
    def step(batch):
        return model({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids")})[
            "logits"
        ]

    logits, labels, real = [], [], []
    for batch in dataset:
        logits.append(np.asarray(step(batch), dtype=np.float32))
        labels.append(batch["label_ids"].numpy())
        real.append(batch["is_real_example"].numpy())
    return np.concatenate(logits), np.concatenate(labels), np.concatenate(real)


def evaluate(model, dataset, task_name, is_regression, global_step):
    """The original's eval metrics plus the task's GLUE metrics."""
    logits, labels, real = predict_logits(model, dataset)
    weights = real.astype(np.float64)
    losses = per_example_loss(labels, logits, is_regression).numpy()
    eval_loss = float(np.sum(losses * weights) / max(np.sum(weights), 1.0))
    keep = real.astype(bool)
    results = {
        "eval_loss": eval_loss,
        "loss": eval_loss,
        "global_step": int(global_step),
    }
    if is_regression:
        predictions = logits[:, 0]
    else:
        predictions = np.argmax(logits, axis=-1)
        results["eval_accuracy"] = accuracy(labels, predictions, weights)
    # Any regression task (STS-B, custom) is scored as GLUE scores STS-B.
    metrics_task = "sts-b" if is_regression else task_name
    for name, value in glue_metrics(
        metrics_task, labels[keep], predictions[keep]
    ).items():
        results.setdefault(f"eval_{name}" if name == "accuracy" else name, value)
    return results


def write_test_results(probabilities, path):
    """One tab-separated line of class probabilities per example, no header."""
    with tf.io.gfile.GFile(path, "w") as writer:
        for row in probabilities:
            writer.write("\t".join(str(float(p)) for p in row) + "\n")


def define_flags():
    """Defines run_classifier.py's flags: the original's, the shared new ones, and
    the task options (custom files, bad rows, batching)."""
    flags.DEFINE_string(
        "data_dir",
        None,
        "The input data dir. Should contain the .tsv files (or other data files) for the task.",
    )
    flags.DEFINE_string("task_name", None, "The name of the task to train.")
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    flags.DEFINE_bool(
        "skip_bad_rows",
        False,
        "Skip malformed data rows (counted and logged) instead of stopping at the first.",
    )
    flags.DEFINE_bool(
        "pad_to_longest",
        True,
        "Cut each batch to its longest example instead of max_seq_length (same "
        "results, less work).",
    )
    flags.DEFINE_bool(
        "length_bucketing",
        True,
        "Training: group examples of similar length into batches (within pools of "
        "16 batches), so short sentences are not padded to long ones.",
    )
    flags.DEFINE_string(
        "xnli_language", "zh", "Language of the XNLI task (the original: zh)."
    )
    # --task_name=custom: your own TSV/CSV/JSONL files, no code needed.
    flags.DEFINE_string(
        "train_file", None, "custom task: training file (.tsv, .csv or .jsonl)."
    )
    flags.DEFINE_string("dev_file", None, "custom task: dev file.")
    flags.DEFINE_string("test_file", None, "custom task: test file.")
    flags.DEFINE_string(
        "text_a_column", "0", "custom task: first text column (name or index)."
    )
    flags.DEFINE_string(
        "text_b_column", None, "custom task: second text column, if any."
    )
    flags.DEFINE_string(
        "label_column", "1", "custom task: label column (name or index)."
    )
    flags.DEFINE_bool(
        "has_header", True, "custom task: .tsv/.csv files start with a header."
    )
    flags.DEFINE_bool(
        "is_regression", False, "custom task: the label is a real number."
    )
    common_flags.define_common_flags(max_seq_length=128)
    common_flags.define_finetuning_flags()


def make_processor(flags_obj):
    options = {"skip_bad_rows": flags_obj.skip_bad_rows}
    task = flags_obj.task_name.lower()
    if task == "xnli":
        options["language"] = flags_obj.xnli_language
    if task == "custom":
        options.update(
            train_file=flags_obj.train_file,
            dev_file=flags_obj.dev_file,
            test_file=flags_obj.test_file,
            text_a_column=_column(flags_obj.text_a_column),
            text_b_column=_column(flags_obj.text_b_column),
            label_column=_column(flags_obj.label_column),
            has_header=flags_obj.has_header,
            is_regression=flags_obj.is_regression,
        )
    return glue.get_processor(task, **options)


def _column(value):
    if value is None or value == "":
        return None
    return int(value) if str(value).isdigit() else value


def validate_flags(flags_obj):
    """The original's checks, with the flag named in each message."""
    if not (flags_obj.do_train or flags_obj.do_eval or flags_obj.do_predict):
        raise ValueError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True."
        )
    for name in ("data_dir", "task_name", "vocab_file", "output_dir"):
        if getattr(flags_obj, name) is None and not (
            name == "data_dir" and _is_custom(flags_obj)
        ):
            raise ValueError(f"Flag --{name} must be specified.")
    common_flags.validate_common_flags(flags_obj)
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint or ""
    )


def _is_custom(flags_obj):
    return (flags_obj.task_name or "").lower() == "custom"


def run(flags_obj):
    """Runs run_classifier.py with the parsed flags; returns the eval results."""
    validate_flags(flags_obj)
    with output_dir_lock(flags_obj):
        return _run(flags_obj)


def _run(flags_obj):
    config = load_config(flags_obj)
    prepare_run(flags_obj, config)
    check_vocab_matches_config(flags_obj.vocab_file, config)

    processor = make_processor(flags_obj)
    data_dir = flags_obj.data_dir
    label_list = processor.get_labels(data_dir)
    is_regression = glue.is_regression_label_list(label_list)
    num_labels = 1 if is_regression else len(label_list)
    tokenizer = tokenization.FullTokenizer(
        flags_obj.vocab_file, flags_obj.do_lower_case
    )
    seq_length = flags_obj.max_seq_length

    strategy = strategy_from_flags(flags_obj)
    chief = is_chief(strategy)
    model = build_model(
        strategy,
        BertClassifier,
        config,
        flags_obj.init_checkpoint,
        num_labels=num_labels,
    )

    data = []
    dataset_fn = num_train_steps = num_warmup_steps = None
    if flags_obj.do_train:
        examples = processor.get_train_examples(data_dir)
        num_train_steps = training_steps(
            len(examples), flags_obj.train_batch_size, flags_obj.num_train_epochs
        )
        num_warmup_steps = int(num_train_steps * flags_obj.warmup_proportion)
        record_file = os.path.join(flags_obj.output_dir, "train.tf_record")
        _write_records(
            examples, label_list, seq_length, tokenizer, record_file, is_regression
        )
        data = [examples_fingerprint(examples)]
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(examples))
        logging.info("  Batch size = %d", flags_obj.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        dataset_fn = training_dataset_fn(
            record_file,
            len(examples),
            seq_length,
            is_regression,
            flags_obj.train_batch_size // flags_obj.gradient_accumulation_steps,
            flags_obj.seed,
            pad_to_longest=flags_obj.pad_to_longest,
            bucket_pool_batches=16 if flags_obj.length_bucketing else 1,
        )
    global_step = train_or_restore(
        flags_obj,
        strategy,
        model,
        script="run_classifier",
        config=config,
        loss_fn=classifier_loss_fn(is_regression),
        dataset_fn=dataset_fn,
        data=data,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        vocab_file=flags_obj.vocab_file,
    )

    def examples_dataset(examples, record_name, batch_size, what):
        """Writes the examples' records (as the original) and batches them."""
        record_file = os.path.join(flags_obj.output_dir, record_name)
        _write_records(
            examples, label_list, seq_length, tokenizer, record_file, is_regression
        )
        logging.info("***** Running %s *****", what)
        logging.info("  Num examples = %d", len(examples))
        return record_dataset(
            record_file, seq_length, is_regression, batch_size, flags_obj.pad_to_longest
        )

    results = None
    if flags_obj.do_eval and chief:
        task = flags_obj.task_name.lower()

        def evaluate_split(examples, record_name):
            dataset = examples_dataset(
                examples, record_name, flags_obj.eval_batch_size, "evaluation"
            )
            return evaluate(model, dataset, task, is_regression, global_step)

        results = evaluate_split(processor.get_dev_examples(data_dir), "eval.tf_record")
        if isinstance(processor, glue.MnliProcessor) and processor.matched:
            # GLUE reports MNLI on both dev sets; the original read only matched.
            mismatched = evaluate_split(
                processor.get_dev_examples(data_dir, matched=False),
                "eval_mismatched.tf_record",
            )
            results["eval_accuracy_mismatched"] = mismatched["eval_accuracy"]
            results["eval_loss_mismatched"] = mismatched["eval_loss"]
        write_eval_results(
            results, os.path.join(flags_obj.output_dir, "eval_results.txt")
        )

    if flags_obj.do_predict and chief:
        examples = processor.get_test_examples(data_dir)
        dataset = examples_dataset(
            examples, "predict.tf_record", flags_obj.predict_batch_size, "prediction"
        )
        logits, _, _ = predict_logits(model, dataset)
        rows = logits if is_regression else tf.nn.softmax(logits, axis=-1).numpy()
        assert len(rows) == len(examples)
        write_test_results(rows, os.path.join(flags_obj.output_dir, "test_results.tsv"))
    if flags_obj.export_dir and chief:
        export_from_flags(
            flags_obj,
            model,
            label_list=label_list,
            text_pair=processor.text_pair,
        )
    return results


def _write_records(examples, label_list, seq_length, tokenizer, path, is_regression):
    features = glue.convert_examples_to_features(
        examples, label_list, seq_length, tokenizer
    )
    write_classifier_records(features, path, is_regression=is_regression)
