"""What run_similarity.py does: fine-tune a sentence encoder and score it.

Two kinds of training rows (`bert_tf.data_prep.similarity_rows`):

* scored pairs (STS-B, SICK): `cosine` (mean squared error between the
  cosine and the score, scores divided by `score_scale`) or `cosent`;
* (anchor, positive[, negative]) rows: `mnr`, in-batch negatives
  (multiple-negatives ranking), or `mnr_symmetric`.

Every text of a micro-batch goes through the encoder in one pass (the
columns one after the other, padded to the batch's longest), and the loss
splits the embeddings back into columns. With --group_by_length (the default
for scored pairs) a batch holds rows of similar length
(`bert_tf.data_prep.length_grouped_batches`): the same rows every epoch, less
than half the padded word pieces on STS-B. sentence-transformers batches rows
at random. --do_eval writes the Pearson and
Spearman correlation of cosine and gold score on the dev pairs to
eval_results.txt. The trained model is saved as our checkpoint
(`model.ckpt-<step>`) and as a sentence-transformers directory
(`output_dir/sentence_transformers`), which PyTorch's `SentenceTransformer`
and `BertSentenceEncoder.from_checkpoint` load.

The model's config, vocabulary, casing and length are the checkpoint's
(`load_config` returns None; `tokenization` reads the model's preprocessor),
so the SavedModel tokenizes as the model was trained.
"""

import math
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints.sentence_transformers_checkpoint import TRAINED_MODEL_SUBDIR
from bert_tf.data_prep.length_grouped_batches import length_grouped_batches
from bert_tf.data_prep.similarity_rows import read_similarity_rows
from bert_tf.errors import UserInputError
from bert_tf.layers import token_packing
from bert_tf.metrics.similarity import similarity_metrics
from bert_tf.models import BertSentenceEncoder
from bert_tf.options.checks import check_once
from bert_tf.tasks import similarity_losses
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.training_data import TrainingData
from bert_tf.tasks.training_data import pipeline_share


class SimilarityTask(Task):
    """Sentence-similarity fine-tuning of a `BertSentenceEncoder`: run_similarity's task.

    Args:
      run: the `RunOptions` (max_seq_length, do_lower_case, vocab_file None:
        the checkpoint's).
      options: the `SimilarityOptions`.

    Example:

    ```python
    results = run_task(SimilarityTask(run_options, SimilarityOptions(
        train_file="stsb/train.tsv", dev_file="stsb/dev.tsv", score_scale=5.0)))
    ```
    """

    script = "run_similarity"
    model_class = BertSentenceEncoder

    def __init__(self, run, options):
        check_once(options, run)
        if not run.init_checkpoint:
            raise UserInputError(
                "init_checkpoint is needed: a sentence-transformers directory or a "
                "BERT checkpoint (with pooling=)",
                argument=("init_checkpoint", "pooling"),
            )
        super().__init__(run, options)
        self.train_rows = None
        self.model = None

    def load_config(self):
        return None  # the checkpoint's own, read by from_checkpoint

    def prepare(self, config):
        """Reads the training rows and checks the dev file's scores (a bad
        row stops the run before TF work)."""
        if self.run.do_eval:
            options = self.options
            check_correlation_defined(
                read_similarity_rows(
                    options.dev_file,
                    [options.text_a_column, options.text_b_column],
                    options.score_column,
                )
            )
        if self.run.do_train:
            options = self.options
            self.train_rows = read_similarity_rows(
                options.train_file,
                options.train_columns(),
                options.score_column if options.scored else None,
            )
            logging.info(
                "Read %d training rows of %s", len(self.train_rows), options.train_file
            )
            if options.loss == "cosine":
                check_cosine_targets(self.train_rows, options.score_scale)

    def model_kwargs(self):
        run = self.run
        kwargs = {
            "pooling": self.options.pooling,
            "normalize": self.options.normalize,
            "do_lower_case": run.do_lower_case,
            "max_seq_length": run.max_seq_length,
            "vocab_file": run.vocab_file,
        }
        return {k: v for k, v in kwargs.items() if v is not None}

    def build_model(self, config):
        self.model = BertSentenceEncoder.from_checkpoint(
            self.run.init_checkpoint, **self.model_kwargs()
        )
        # Training steps run on the real word pieces only (embeddings ignore
        # the padded positions' outputs).
        self.model.encoder.packed_training_rows = token_packing.ROWS_MULTIPLE
        return self.model

    def tokenization(self, model):
        preprocessor = model.preprocessor
        return (
            preprocessor.vocab_file,
            preprocessor.do_lower_case,
            preprocessor.seq_length,
        )

    # --- training -----------------------------------------------------------

    def training_data(self):
        training = self.run.training
        steps = int(
            len(self.train_rows) / training.train_batch_size * training.num_train_epochs
        )
        if steps < 1:
            raise UserInputError(
                f"{len(self.train_rows)} training rows / train_batch_size="
                f"{training.train_batch_size} * num_train_epochs="
                f"{training.num_train_epochs} is less than one step",
                argument=("train_batch_size", "num_train_epochs"),
            )
        self.train_steps = steps
        return TrainingData(
            self.dataset_fn,
            steps,
            self.options.training_fingerprints(self.run),
        )

    def dataset_fn(self, input_context, skip_batches):
        """Repeating, shuffled micro-batches (grouped by length if asked): the
        texts of every column one after the other, tokenized and padded to the
        batch's longest."""
        rows = self.train_rows
        columns = tuple(tf.constant(texts) for texts in rows.texts)
        scores = (
            rows.scores / self.options.score_scale
            if rows.scores is not None
            else np.zeros(len(rows), np.float32)
        )
        preprocessor = self.model.preprocessor
        micro_batch_size = self.run.training.micro_batch_size
        if self.options.group_by_length:
            # The plan covers every pipeline's micro-batches of the whole run;
            # pipeline i takes every n-th batch of it.
            replicas = input_context.num_replicas_in_sync if input_context else 1
            plan = length_grouped_batches(
                self._row_lengths(),
                micro_batch_size,
                self.train_steps
                * self.run.training.gradient_accumulation_steps
                * replicas,
                self.run.seed,
            )
            if input_context is not None and input_context.num_input_pipelines > 1:
                plan = plan[
                    input_context.input_pipeline_id :: input_context.num_input_pipelines
                ]
            dataset = (
                tf.data.Dataset.from_tensor_slices(plan)
                .repeat()
                .skip(skip_batches)
                .map(
                    lambda indexes: (
                        tuple(tf.gather(column, indexes) for column in columns),
                        tf.gather(scores, indexes),
                    )
                )
            )
        else:
            dataset = tf.data.Dataset.from_tensor_slices((columns, scores))
            dataset = pipeline_share(dataset, input_context)
            dataset = (
                dataset.shuffle(
                    len(rows), seed=self.run.seed, reshuffle_each_iteration=True
                )
                .repeat()
                .batch(micro_batch_size, drop_remainder=True)
                .skip(skip_batches)
            )

        def tokenize(texts, batch_scores):
            features = preprocessor(tf.concat(list(texts), axis=0))
            features["scores"] = batch_scores
            return features

        return dataset.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE
        )

    def _row_lengths(self):
        """Each training row's longest text, in word pieces (as cut)."""
        preprocessor = self.model.preprocessor
        lengths = np.zeros(len(self.train_rows), np.int32)
        chunk = 1024
        for texts in self.train_rows.texts:
            for start in range(0, len(texts), chunk):
                mask = preprocessor(tf.constant(texts[start : start + chunk]))[
                    "input_mask"
                ]
                lengths[start : start + chunk] = np.maximum(
                    lengths[start : start + chunk],
                    tf.reduce_sum(tf.cast(mask, tf.int32), axis=1).numpy(),
                )
        return lengths

    def loss(self, batch, outputs):
        """The chosen loss on the embeddings split back into columns."""
        options = self.options
        columns = tf.split(
            tf.cast(outputs, tf.float32), len(options.train_columns()), axis=0
        )
        if options.loss == "cosine":
            return similarity_losses.cosine_similarity_loss(*columns, batch["scores"])
        if options.loss == "cosent":
            return similarity_losses.cosent_loss(
                *columns, batch["scores"], scale=options.similarity_scale
            )
        return similarity_losses.multiple_negatives_ranking_loss(
            *columns,
            scale=options.similarity_scale,
            symmetric=options.loss == "mnr_symmetric",
        )

    # --- evaluation and outputs ---------------------------------------------

    def evaluate(self, model, global_step):
        """Pearson and Spearman of cosine vs gold score on the dev pairs."""
        options = self.options
        batch_size = self.run.eval_batch_size
        rows = read_similarity_rows(
            options.dev_file,
            [options.text_a_column, options.text_b_column],
            options.score_column,
        )
        first = model.encode(rows.texts[0], batch_size=batch_size)
        second = model.encode(rows.texts[1], batch_size=batch_size)
        cosine = similarity_losses.pair_cosine(first, second).numpy()
        results = similarity_metrics(cosine, rows.scores)
        results["global_step"] = global_step
        return results

    def after_training(self, model):
        """The sentence-transformers copy of the trained model."""
        directory = os.path.join(self.run.output_dir, TRAINED_MODEL_SUBDIR)
        model.save_sentence_transformers(directory)
        logging.info("Saved the sentence-transformers directory %s", directory)
        return directory


def check_correlation_defined(rows):
    """The dev rows' gold scores must vary: Pearson and Spearman of the
    cosines against one repeated score (or one row) are 0 / 0, undefined."""
    scores = rows.scores
    if len(scores) < 2 or float(scores.min()) == float(scores.max()):
        what = f"{len(scores)} row" + ("s" if len(scores) != 1 else "")
        if len(scores):
            what += f", every score {float(scores[0]):g}"
        raise UserInputError(
            f"{rows.path}: {what}: the correlation of the cosines with the "
            "scores is undefined (it needs two rows with different scores)",
            argument="dev_file",
        )


def check_cosine_targets(rows, score_scale):
    """The cosine loss pulls each pair's cosine to its score / score_scale: a
    target outside [-1, 1] is one no cosine reaches (STS-B's 0-5 scores
    without --score_scale=5 train towards 5.0)."""
    low, high = float(rows.scores.min()), float(rows.scores.max())
    scaled = max(abs(low), abs(high)) / score_scale
    if scaled > 1.0:
        needed = math.ceil(max(abs(low), abs(high)))
        raise UserInputError(
            f"{rows.path}: scores range {low:g} to {high:g}; divided by "
            f"score_scale={score_scale:g} they reach {scaled:g}, a cosine "
            f"target outside [-1, 1] (loss=cosine): pass score_scale={needed}",
            argument=("score_scale", "loss"),
        )


def run(run_options, options):
    """run_similarity.py: train (or resume), evaluate, save, export; returns
    the eval results (or None)."""
    return run_task(SimilarityTask(run_options, options))
