"""What run_squad.py does: fine-tune a span labeler on SQuAD and predict answers.

The steps and files are the original's (docs/original_bert.md §1, §2, §5): training
examples shuffled with `random.Random(12345)`, features written to
`train.tf_record` / `eval.tf_record` in output_dir,
`num_train_steps = int(len(train_examples) / train_batch_size * num_train_epochs)`
(examples, not features), loss `(CE_start + CE_end) / 2`, and
`predictions.json`, `nbest_predictions.json` (and `null_odds.json` for
SQuAD 2.0) in the original format. On top: any tf.distribute strategy, mixed
precision, gradient accumulation, resuming, a final checkpoint without
optimizer slots under the original variable names, and `--do_eval`, which
scores the predictions as evaluate-v1.1.py / evaluate-v2.0.py do and writes
`eval_results.json`.
"""

import json
import os
import random

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep import squad as squad_data
from bert_tf.data_prep import tfds_input
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.metrics import squad as squad_postprocessing
from bert_tf.models import BertSpanLabeler
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.options.checks import check_once
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.task import with_checkpoint_vocab
from bert_tf.tasks.training_data import TrainingData
from bert_tf.text import tokenization
from bert_tf.training.progress import batches_with_progress
from bert_tf.training.train_or_restore import training_steps

# The original shuffles the training examples with this fixed seed.
TRAIN_EXAMPLES_SEED = 12345


def input_files(options, run):
    """(train_file, predict_file): the options', or with --tfds_name the TFDS
    splits written as SQuAD JSON to output_dir (tfds_train.json,
    tfds_predict.json), which the file reader and --do_eval then read."""
    tfds = options.tfds
    if not tfds.tfds_name:
        return options.train_file, options.predict_file

    def write(needed, split, name):
        if not needed:
            return None
        return tfds_input.write_squad_json(
            tfds.tfds_name,
            split,
            os.path.join(run.output_dir, name),
            data_dir=tfds.tfds_data_dir,
            download=tfds.tfds_download,
        )

    return (
        write(run.do_train, tfds.tfds_split_train or "train", "tfds_train.json"),
        write(
            run.do_predict,
            tfds.tfds_split_predict or "validation",
            "tfds_predict.json",
        ),
    )


def span_loss(batch, outputs):
    """The original's loss: (CE(start) + CE(end)) / 2, averaged over the batch.

    Positions index the whole (fixed-length) sequence.
    """

    def cross_entropy(positions, logits):
        logits = tf.cast(logits, tf.float32)
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(
                tf.cast(positions, tf.int32), logits
            )
        )

    start = cross_entropy(batch["start_positions"], outputs["start_logits"])
    end = cross_entropy(batch["end_positions"], outputs["end_logits"])
    return (start + end) / 2.0


def training_dataset_fn(record_file, num_features, seq_length, batch_size, seed):
    """`dataset_fn(input_context, skip_batches)` for the Trainer.

    Each epoch is a full, seeded shuffle of the training features (so a resumed
    run sees the same batches); the original shuffled a repeated stream with a
    buffer of 100 records. Batches keep the fixed max_seq_length padding, since
    start/end positions index the sequence, and drop the remainder.
    """
    return record_pipeline.training_dataset_fn(
        record_file,
        squad_data.feature_spec(seq_length, True),
        batch_size,
        seed,
        shuffle_buffer=num_features,
    )


def predict_dataset(record_file, seq_length, batch_size):
    """Predict batches, in file order, the last one partial."""
    return record_pipeline.ordered_dataset(
        record_file, squad_data.feature_spec(seq_length, False), batch_size
    )


def predict_raw_results(model, dataset, num_features=None):
    """One `RawResult` per feature, in dataset order (with a progress bar)."""

    # One trace for the full batches and the last, partial one.
    @tf.function(
        input_signature=[
            {k: tf.TensorSpec([None, None], tf.int32) for k in ENCODER_INPUT_NAMES}
        ]
    )
    def step(inputs):
        outputs = model(inputs)
        return (
            tf.cast(outputs["start_logits"], tf.float32),
            tf.cast(outputs["end_logits"], tf.float32),
        )

    results = []
    for batch in batches_with_progress(dataset, num_features):
        start_logits, end_logits = step({k: batch[k] for k in ENCODER_INPUT_NAMES})
        start_logits = np.asarray(start_logits)
        end_logits = np.asarray(end_logits)
        for i, unique_id in enumerate(batch["unique_ids"].numpy()):
            if len(results) % 1000 == 0:
                logging.info("Processing example: %d", len(results))
            # Rows of the batch's float32 arrays, not lists of Python floats
            # (8 times smaller for a whole dev set); write_predictions reads
            # them as floats, the same values.
            results.append(
                squad_postprocessing.RawResult(
                    unique_id=int(unique_id),
                    start_logits=start_logits[i],
                    end_logits=end_logits[i],
                )
            )
    return results


def evaluate_predictions(predict_file, predictions, null_odds=None, version_2=False):
    """What evaluate-v1.1.py (or evaluate-v2.0.py with null_odds) prints."""
    with tf.io.gfile.GFile(predict_file, "r") as reader:
        dataset = json.load(reader)
    if version_2:
        return dict(
            squad_postprocessing.evaluate_v2(dataset, predictions, na_probs=null_odds)
        )
    return squad_postprocessing.evaluate_v1(dataset, predictions)


class SquadTask(Task):
    """Extractive question answering on SQuAD: run_squad's task.

    --do_eval scores what --do_predict wrote, as evaluate-v1.1.py /
    evaluate-v2.0.py do (eval_results.json).

    Args:
      run: the `RunOptions`.
      options: the `SquadOptions`.

    Example:

    ```python
    results = run_task(SquadTask(run_options, SquadOptions(predict_file="dev-v1.1.json")))
    ```
    """

    script = "run_squad"
    model_class = BertSpanLabeler
    eval_results_file = "eval_results.json"

    def __init__(self, run, options):
        check_once(options, run)
        super().__init__(with_checkpoint_vocab(run), options)
        self._predictions = None

    def reads_sentence_pairs(self):
        return True

    def prepare(self, config):
        check_vocab_matches_config(self.run.vocab_file, config)
        self.tokenizer = tokenization.FullTokenizer(
            self.run.vocab_file, self.run.do_lower_case
        )
        self.train_file, self.predict_file = input_files(self.options, self.run)

    def _convert(self, examples, record_file, is_training):
        return squad_data.write_features(
            examples,
            self.tokenizer,
            record_file,
            max_seq_length=self.run.max_seq_length,
            doc_stride=self.options.doc_stride,
            max_query_length=self.options.max_query_length,
            is_training=is_training,
        )

    def training_data(self):
        training = self.run.training
        train_examples = squad_data.read_squad_examples(
            self.train_file,
            is_training=True,
            version_2_with_negative=self.options.version_2_with_negative,
            first_answer_only=self.options.train_answer == "first",
        )
        num_train_steps = training_steps(
            len(train_examples), training.train_batch_size, training.num_train_epochs
        )
        # Pre-shuffle the input to avoid having to make a very large shuffle
        # buffer in the input pipeline (the original's fixed seed).
        train_examples = list(train_examples)
        random.Random(TRAIN_EXAMPLES_SEED).shuffle(train_examples)
        record_file = os.path.join(self.records_dir, "train.tf_record")
        num_features, _ = self._convert(train_examples, record_file, is_training=True)
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", num_features)
        logging.info("  Batch size = %d", training.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        dataset_fn = training_dataset_fn(
            record_file,
            num_features,
            self.run.max_seq_length,
            training.micro_batch_size,
            self.run.seed,
        )
        return TrainingData(
            dataset_fn,
            num_train_steps,
            self.options.training_fingerprints(self.run)
            or [file_fingerprint(self.train_file)],
        )

    def loss(self, batch, outputs):
        return span_loss(batch, outputs)

    def predict(self, model, global_step):
        """predictions.json, nbest_predictions.json (and null_odds.json)."""
        run, options = self.run, self.options
        version_2 = options.version_2_with_negative
        eval_examples = squad_data.read_squad_examples(
            self.predict_file, is_training=False, version_2_with_negative=version_2
        )
        record_file = os.path.join(self.output_dir, "eval.tf_record")
        num_features, eval_features = self._convert(
            eval_examples, record_file, is_training=False
        )
        logging.info("***** Running predictions *****")
        logging.info("  Num orig examples = %d", len(eval_examples))
        logging.info("  Num split examples = %d", num_features)
        logging.info("  Batch size = %d", run.predict_batch_size)
        all_results = predict_raw_results(
            model,
            predict_dataset(record_file, run.max_seq_length, run.predict_batch_size),
            num_features,
        )
        assert len(all_results) == len(eval_features)
        output_dir = self.output_dir
        self._predictions = squad_postprocessing.write_predictions(
            eval_examples,
            eval_features,
            all_results,
            options.n_best_size,
            options.max_answer_length,
            run.do_lower_case,
            os.path.join(output_dir, "predictions.json"),
            os.path.join(output_dir, "nbest_predictions.json"),
            os.path.join(output_dir, "null_odds.json"),
            version_2_with_negative=version_2,
            null_score_diff_threshold=options.null_score_diff_threshold,
            verbose_logging=options.verbose_logging,
        )

    def evaluate(self, model, global_step):
        """Scores the predictions `predict` made (--do_eval needs --do_predict)."""
        version_2 = self.options.version_2_with_negative
        null_odds = None
        if version_2:
            path = os.path.join(self.output_dir, "null_odds.json")
            with tf.io.gfile.GFile(path, "r") as reader:
                null_odds = json.load(reader)
        return evaluate_predictions(
            self.predict_file, self._predictions, null_odds, version_2
        )

    def serving_kwargs(self):
        return {"span_options": self.options.span_options()}


def run(run_options, squad_options):
    """Runs run_squad with its options; returns the eval results (or None)."""
    return run_task(SquadTask(run_options, squad_options))
