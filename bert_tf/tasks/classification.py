"""What run_classifier.py does: fine-tune, evaluate and predict a sentence classifier.

The steps and files are the original's (docs/original_bert.md §1, §4): features written to
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
from absl import logging

from bert_tf import tokenization
from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.classification_metrics import accuracy
from bert_tf.classification_metrics import glue_metrics
from bert_tf.data_prep import glue
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep import tfds_input
from bert_tf.data_prep.classifier_records import feature_spec
from bert_tf.data_prep.classifier_records import file_based_convert_examples_to_features
from bert_tf.data_prep.label_list_file import write_label_list
from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.training import flags as common_flags
from bert_tf.training.output_dir import examples_fingerprint
from bert_tf.training.progress import batches_with_progress
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


def predict_logits(model, dataset, num_examples=None):
    """Logits and labels of every example, in dataset order (with a progress bar)."""

    # One trace for every batch shape: with --pad_to_longest each batch has
    # its own length, which would retrace the step per length.
    @tf.function(
        input_signature=[
            {k: tf.TensorSpec([None, None], tf.int32) for k in ENCODER_INPUT_NAMES}
        ]
    )
    def step(inputs):
        return model(inputs)["logits"]

    logits, labels, real = [], [], []
    for batch in batches_with_progress(dataset, num_examples):
        logits.append(
            np.asarray(
                step({k: batch[k] for k in ENCODER_INPUT_NAMES}), dtype=np.float32
            )
        )
        labels.append(batch["label_ids"].numpy())
        real.append(batch["is_real_example"].numpy())
    return np.concatenate(logits), np.concatenate(labels), np.concatenate(real)


def evaluate(model, dataset, task_name, is_regression, global_step, num_examples=None):
    """The original's eval metrics plus the task's GLUE metrics."""
    logits, labels, real = predict_logits(model, dataset, num_examples)
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


def make_processor(flags_obj):
    options = {
        "skip_bad_rows": flags_obj.skip_bad_rows,
        "allow_single_class": flags_obj.allow_single_class,
    }
    if flags_obj.tfds_name:
        return tfds_input.TfdsGlueProcessor(
            flags_obj.tfds_name,
            data_dir=flags_obj.tfds_data_dir,
            train_split=flags_obj.tfds_split_train,
            eval_split=flags_obj.tfds_split_eval,
            predict_split=flags_obj.tfds_split_predict,
            text_a_feature=flags_obj.tfds_text_a_feature,
            text_b_feature=flags_obj.tfds_text_b_feature,
            label_feature=flags_obj.tfds_label_feature,
            download=flags_obj.tfds_download,
            **options,
        )
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
            allow_header_like_first_row=flags_obj.allow_header_like_first_row,
        )
    return glue.get_processor(task, **options)


def _column(value):
    if value is None or value == "":
        return None
    return int(value) if str(value).isdigit() else value


def validate_flags(flags_obj):
    """The original's checks, with the flag named in each message."""
    if not (flags_obj.do_train or flags_obj.do_eval or flags_obj.do_predict):
        raise UserInputError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True."
        )
    _validate_tfds_flags(flags_obj)
    for name in ("data_dir", "task_name", "vocab_file", "output_dir"):
        if getattr(flags_obj, name) is None and not (
            name == "data_dir" and (_is_custom(flags_obj) or flags_obj.tfds_name)
        ):
            raise UserInputError(f"Flag --{name} must be specified.")
    common_flags.validate_common_flags(flags_obj)
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint or ""
    )


def _validate_tfds_flags(flags_obj):
    """--tfds_name replaces --data_dir (and the custom files); --task_name
    defaults to the config's task and must match it when given."""
    common_flags.validate_tfds_flags(
        flags_obj,
        ("data_dir", "train_file", "dev_file", "test_file"),
        tfds_input.GLUE_CONFIGS,
    )
    if not flags_obj.tfds_name:
        return
    task = tfds_input.GLUE_CONFIGS[tfds_input.config_key(flags_obj.tfds_name)].task
    if flags_obj.task_name is None:
        flags_obj.task_name = task
    elif flags_obj.task_name.lower() != task:
        raise UserInputError(
            f"--task_name={flags_obj.task_name} does not match "
            f"--tfds_name={flags_obj.tfds_name} (task {task}); drop --task_name"
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
    write_label_list(flags_obj.output_dir, label_list)
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
        file_based_convert_examples_to_features(
            examples, label_list, seq_length, tokenizer, record_file
        )
        data = [examples_fingerprint(examples)]
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(examples))
        logging.info("  Batch size = %d", flags_obj.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        dataset_fn = record_pipeline.training_dataset_fn(
            record_file,
            feature_spec(seq_length, is_regression),
            flags_obj.train_batch_size // flags_obj.gradient_accumulation_steps,
            flags_obj.seed,
            # A full shuffle each epoch (the original: a 100-record buffer).
            shuffle_buffer=len(examples),
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
        file_based_convert_examples_to_features(
            examples, label_list, seq_length, tokenizer, record_file
        )
        logging.info("***** Running %s *****", what)
        logging.info("  Num examples = %d", len(examples))
        return record_pipeline.ordered_dataset(
            record_file,
            feature_spec(seq_length, is_regression),
            batch_size,
            pad_to_longest=flags_obj.pad_to_longest,
        )

    results = None
    if flags_obj.do_eval and chief:
        task = flags_obj.task_name.lower()

        def evaluate_split(examples, record_name):
            dataset = examples_dataset(
                examples, record_name, flags_obj.eval_batch_size, "evaluation"
            )
            return evaluate(
                model, dataset, task, is_regression, global_step, len(examples)
            )

        results = evaluate_split(processor.get_dev_examples(data_dir), "eval.tf_record")
        if getattr(processor, "matched", False):
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
        logits, _, _ = predict_logits(model, dataset, len(examples))
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
