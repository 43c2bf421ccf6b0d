"""What run_classifier.py does: fine-tune, evaluate and predict a sentence classifier.

The steps and files are the original's (docs/original_bert.md §1, §4): features written to
`train.tf_record` / `eval.tf_record` / `predict.tf_record` in output_dir,
`num_train_steps = int(len(train_examples) / train_batch_size * num_train_epochs)`,
`eval_results.txt` and `test_results.tsv` in the original format. On top:
any tf.distribute strategy, mixed precision, gradient accumulation, resuming,
per-batch padding, GLUE metrics, and a final checkpoint without optimizer
slots under the original variable names.

`ClassificationTask` is the task on the runner's protocol
(`bert_tf.tasks.task`); `run(run_options, classifier_options)` runs it.
"""

import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.data_prep import glue
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep import tfds_input
from bert_tf.data_prep.classifier_records import feature_spec
from bert_tf.data_prep.classifier_records import file_based_convert_examples_to_features
from bert_tf.data_prep.fingerprints import examples_fingerprint
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.data_prep.label_list_file import write_label_list
from bert_tf.metrics.classification import accuracy
from bert_tf.metrics.classification import glue_metrics
from bert_tf.models import BertClassifier
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.options.checks import check_once
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.task import with_checkpoint_vocab
from bert_tf.tasks.training_data import TrainingData
from bert_tf.text import tokenization
from bert_tf.training.progress import batches_with_progress
from bert_tf.training.strategy import is_chief_in_tf_config
from bert_tf.training.train_or_restore import training_steps


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


def make_processor(options):
    """The data processor `ClassifierOptions` name (GLUE, custom or TFDS)."""
    common = {
        "skip_bad_rows": options.skip_bad_rows,
        "allow_single_class": options.allow_single_class,
    }
    tfds = options.tfds
    if tfds.tfds_name:
        return tfds_input.TfdsGlueProcessor(
            tfds.tfds_name,
            data_dir=tfds.tfds_data_dir,
            train_split=tfds.tfds_split_train,
            eval_split=tfds.tfds_split_eval,
            predict_split=tfds.tfds_split_predict,
            text_a_feature=tfds.tfds_text_a_feature,
            text_b_feature=tfds.tfds_text_b_feature,
            label_feature=tfds.tfds_label_feature,
            download=tfds.tfds_download,
            **common,
        )
    task = options.task_name.lower()
    if task == "xnli":
        common["language"] = options.xnli_language
    if task == "custom":
        common.update(
            train_file=options.train_file,
            dev_file=options.dev_file,
            test_file=options.test_file,
            text_a_column=_column(options.text_a_column),
            text_b_column=_column(options.text_b_column),
            label_column=_column(options.label_column),
            has_header=options.has_header,
            is_regression=options.is_regression,
            allow_header_like_first_row=options.allow_header_like_first_row,
        )
    return glue.get_processor(task, **common)


def _column(value):
    if value is None or value == "":
        return None
    return int(value) if str(value).isdigit() else value


class ClassificationTask(Task):
    """Sentence (pair) classification or regression: run_classifier's task.

    Args:
      run: the `RunOptions`.
      options: the `ClassifierOptions`.

    Example:

    ```python
    results = run_task(ClassificationTask(run_options, ClassifierOptions(task_name="MRPC", data_dir=d)))
    ```
    """

    script = "run_classifier"
    model_class = BertClassifier

    def __init__(self, run, options):
        check_once(options, run)
        super().__init__(with_checkpoint_vocab(run), options)
        self.processor = make_processor(options)

    def prepare(self, config):
        check_vocab_matches_config(self.run.vocab_file, config)
        self.label_list = self.processor.get_labels(self.options.data_dir)
        self.is_regression = glue.is_regression_label_list(self.label_list)
        chief = is_chief_in_tf_config()
        if chief and (self.run.do_train or read_label_list(self.output_dir) is None):
            # A run that does not train keeps the trained run's record,
            # which the runner checks these labels against. One writer: the
            # other workers of a multi-worker run read it.
            write_label_list(self.output_dir, self.label_list)
        self.tokenizer = tokenization.FullTokenizer(
            self.run.vocab_file, self.run.do_lower_case
        )

    def reads_sentence_pairs(self):
        return bool(self.processor.text_pair)

    def flag_labels(self):
        options = self.options
        if options.tfds.tfds_name:
            source = f"tfds_name={options.tfds.tfds_name}"
        elif (options.task_name or "").lower() == "custom":
            source = f"train_file={options.train_file}"
        else:
            source = f"task_name={options.task_name}"
        return self.label_list, source

    def model_kwargs(self):
        return {"num_labels": 1 if self.is_regression else len(self.label_list)}

    def _write_records(self, examples, record_name):
        record_file = os.path.join(self.records_dir, record_name)
        file_based_convert_examples_to_features(
            examples,
            self.label_list,
            self.run.max_seq_length,
            self.tokenizer,
            record_file,
        )
        return record_file

    def training_data(self):
        run, training = self.run, self.run.training
        examples = self.processor.get_train_examples(self.options.data_dir)
        num_train_steps = training_steps(
            len(examples), training.train_batch_size, training.num_train_epochs
        )
        record_file = self._write_records(examples, "train.tf_record")
        logging.info("***** Running training *****")
        logging.info("  Num examples = %d", len(examples))
        logging.info("  Batch size = %d", training.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        dataset_fn = record_pipeline.training_dataset_fn(
            record_file,
            feature_spec(run.max_seq_length, self.is_regression),
            training.micro_batch_size,
            run.seed,
            # A full shuffle each epoch (the original: a 100-record buffer).
            shuffle_buffer=len(examples),
            pad_to_longest=run.pad_to_longest,
            bucket_pool_batches=16 if training.length_bucketing else 1,
        )
        return TrainingData(
            dataset_fn, num_train_steps, [examples_fingerprint(examples)]
        )

    def loss(self, batch, outputs):
        return classifier_loss_fn(self.is_regression)(batch, outputs)

    def _dataset(self, examples, record_name, batch_size, what):
        """Writes the examples' records (as the original) and batches them."""
        record_file = self._write_records(examples, record_name)
        logging.info("***** Running %s *****", what)
        logging.info("  Num examples = %d", len(examples))
        return record_pipeline.ordered_dataset(
            record_file,
            feature_spec(self.run.max_seq_length, self.is_regression),
            batch_size,
            pad_to_longest=self.run.pad_to_longest,
        )

    def evaluate(self, model, global_step):
        task = self.options.task_name.lower()
        data_dir = self.options.data_dir

        def evaluate_split(examples, record_name):
            dataset = self._dataset(
                examples, record_name, self.run.eval_batch_size, "evaluation"
            )
            return evaluate(
                model, dataset, task, self.is_regression, global_step, len(examples)
            )

        results = evaluate_split(
            self.processor.get_dev_examples(data_dir), "eval.tf_record"
        )
        if getattr(self.processor, "matched", False):
            # GLUE reports MNLI on both dev sets; the original read only matched.
            mismatched = evaluate_split(
                self.processor.get_dev_examples(data_dir, matched=False),
                "eval_mismatched.tf_record",
            )
            results["eval_accuracy_mismatched"] = mismatched["eval_accuracy"]
            results["eval_loss_mismatched"] = mismatched["eval_loss"]
        return results

    def predict(self, model, global_step):
        examples = self.processor.get_test_examples(self.options.data_dir)
        dataset = self._dataset(
            examples, "predict.tf_record", self.run.predict_batch_size, "prediction"
        )
        logits, _, _ = predict_logits(model, dataset, len(examples))
        rows = logits if self.is_regression else tf.nn.softmax(logits, axis=-1).numpy()
        assert len(rows) == len(examples)
        write_test_results(rows, os.path.join(self.output_dir, "test_results.tsv"))

    def serving_kwargs(self):
        return {"label_list": self.label_list, "text_pair": self.processor.text_pair}


def run(run_options, classifier_options):
    """Runs run_classifier with its options; returns the eval results (or None)."""
    return run_task(ClassificationTask(run_options, classifier_options))
