"""What run_similarity.py does: fine-tune a sentence encoder and score it.

Two kinds of training rows (`bert_tf.data_prep.similarity_rows`):

* scored pairs (STS-B, SICK): `cosine` (mean squared error between the
  cosine and the score, scores divided by `score_scale`) or `cosent`;
* (anchor, positive[, negative]) rows: `mnr`, in-batch negatives
  (multiple-negatives ranking), or `mnr_symmetric`.

Every text of a micro-batch goes through the encoder in one pass (the
columns one after the other, padded to the batch's longest), and the loss
splits the embeddings back into columns. --do_eval writes the Pearson and
Spearman correlation of cosine and gold score on the dev pairs to
eval_results.txt. The trained model is saved as our checkpoint
(`model.ckpt-<step>`) and as a sentence-transformers directory
(`output_dir/sentence_transformers`), which PyTorch's `SentenceTransformer`
and `BertSentenceEncoder.from_checkpoint` load.

The task is written as the methods of the task protocol (prepare,
build_model, training_data, loss, evaluate, serving_kwargs) so that the one
runner can drive it; `run` drives it with `bert_tf.training.run_setup` until
then.
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data_prep.similarity_rows import read_similarity_rows
from bert_tf.errors import UserInputError
from bert_tf.models import BertSentenceEncoder
from bert_tf.similarity_metrics import similarity_metrics
from bert_tf.tasks import similarity_losses
from bert_tf.training.output_dir import file_fingerprint

LOSSES = similarity_losses.SCORED_LOSSES + similarity_losses.RANKING_LOSSES
# Where the sentence-transformers copy of the trained model goes.
SENTENCE_TRANSFORMERS_DIR = "sentence_transformers"


@dataclasses.dataclass(frozen=True)
class SimilarityOptions:
    """run_similarity's task options (flags of the same names).

    Args:
      train_file, dev_file: .tsv/.csv/.jsonl rows.
      text_a_column, text_b_column: the two texts (anchor, positive).
      score_column: the gold similarity (scored pairs).
      negative_column: a hard negative per row (ranking losses), or None.
      loss: one of `LOSSES`.
      score_scale: scores are divided by it (5 for STS-B's 0-5).
      similarity_scale: the scale (inverse temperature) of cosent and mnr.
      pooling: pooling of a plain BERT checkpoint (a sentence-transformers
        directory says its own).
      normalize: L2-normalise the embeddings (None: as the checkpoint says).
    """

    RUN_DEFINING = (
        "train_file",
        "text_a_column",
        "text_b_column",
        "score_column",
        "negative_column",
        "loss",
        "score_scale",
        "similarity_scale",
        "pooling",
        "normalize",
    )

    train_file: str | None = None
    dev_file: str | None = None
    text_a_column: str = "sentence1"
    text_b_column: str = "sentence2"
    score_column: str | None = "score"
    negative_column: str | None = None
    loss: str = "cosine"
    score_scale: float = 1.0
    similarity_scale: float = similarity_losses.DEFAULT_SCALE
    pooling: str | None = None
    normalize: bool | None = None

    def __post_init__(self):
        if self.loss not in LOSSES:
            raise UserInputError(f"--loss={self.loss!r} is not one of {LOSSES}")
        if self.score_scale <= 0:
            raise UserInputError(
                f"--score_scale must be positive, got {self.score_scale}"
            )
        if self.negative_column and self.loss not in similarity_losses.RANKING_LOSSES:
            raise UserInputError(
                f"--negative_column needs a ranking loss (mnr, mnr_symmetric), "
                f"not --loss={self.loss}"
            )

    @property
    def scored(self):
        return self.loss in similarity_losses.SCORED_LOSSES

    def train_columns(self):
        columns = [self.text_a_column, self.text_b_column]
        if self.negative_column:
            columns.append(self.negative_column)
        return columns

    def check(self, do_train, do_eval):
        if do_train and not self.train_file:
            raise UserInputError("--do_train needs --train_file")
        if do_eval and not self.dev_file:
            raise UserInputError("--do_eval needs --dev_file (scored pairs)")
        if (do_train and self.scored or do_eval) and not self.score_column:
            raise UserInputError(
                f"--score_column is needed (--loss={self.loss} or --do_eval)"
            )
        for name in ("train_file", "dev_file"):
            path = getattr(self, name)
            if path and not os.path.exists(path):
                raise UserInputError(f"--{name}: {path} does not exist")


class SimilarityTask:
    """Sentence-similarity fine-tuning on the task protocol's methods.

    Args:
        options: `SimilarityOptions`.
        seed: data-order seed.
        micro_batch_size: rows per micro-batch (each row is 2 or 3 texts).
        num_train_epochs: epochs of training data.
        do_lower_case, max_seq_length: None for what the checkpoint says.
    """

    script = "run_similarity"
    model_class = BertSentenceEncoder
    eval_results_file = "eval_results.txt"

    def __init__(
        self,
        options,
        seed=12345,
        micro_batch_size=16,
        train_batch_size=16,
        num_train_epochs=1.0,
        do_lower_case=None,
        max_seq_length=None,
        vocab_file=None,
    ):
        self.options = options
        self.seed = seed
        self.micro_batch_size = micro_batch_size
        self.train_batch_size = train_batch_size
        self.num_train_epochs = num_train_epochs
        self.do_lower_case = do_lower_case
        self.max_seq_length = max_seq_length
        self.vocab_file = vocab_file
        self.train_rows = None
        self.model = None

    def prepare(self, do_train):
        """Reads the training rows (a bad row stops the run before TF work)."""
        if do_train:
            options = self.options
            self.train_rows = read_similarity_rows(
                options.train_file,
                options.train_columns(),
                options.score_column if options.scored else None,
            )
            logging.info(
                "Read %d training rows of %s", len(self.train_rows), options.train_file
            )

    def model_kwargs(self):
        kwargs = {
            "pooling": self.options.pooling,
            "normalize": self.options.normalize,
            "do_lower_case": self.do_lower_case,
            "max_seq_length": self.max_seq_length,
            "vocab_file": self.vocab_file,
        }
        return {k: v for k, v in kwargs.items() if v is not None}

    def build_model(self, init_checkpoint):
        if not init_checkpoint:
            raise UserInputError(
                "--init_checkpoint is needed: a sentence-transformers directory or a "
                "BERT checkpoint (with --pooling)"
            )
        self.model = BertSentenceEncoder.from_checkpoint(
            init_checkpoint, **self.model_kwargs()
        )
        return self.model

    # --- training -----------------------------------------------------------

    def num_train_steps(self):
        steps = int(
            len(self.train_rows) / self.train_batch_size * self.num_train_epochs
        )
        if steps < 1:
            raise UserInputError(
                f"{len(self.train_rows)} training rows / --train_batch_size="
                f"{self.train_batch_size} * --num_train_epochs="
                f"{self.num_train_epochs} is less than one step"
            )
        return steps

    def fingerprints(self):
        return [file_fingerprint(self.options.train_file)]

    def dataset_fn(self, input_context, skip_batches):
        """Repeating, shuffled micro-batches: the texts of every column one
        after the other, tokenized and padded to the batch's longest."""
        rows = self.train_rows
        columns = tuple(tf.constant(texts) for texts in rows.texts)
        scores = (
            rows.scores / self.options.score_scale
            if rows.scores is not None
            else np.zeros(len(rows), np.float32)
        )
        preprocessor = self.model.preprocessor
        dataset = tf.data.Dataset.from_tensor_slices((columns, scores))
        if input_context is not None and input_context.num_input_pipelines > 1:
            dataset = dataset.shard(
                input_context.num_input_pipelines, input_context.input_pipeline_id
            )
        dataset = (
            dataset.shuffle(len(rows), seed=self.seed, reshuffle_each_iteration=True)
            .repeat()
            .batch(self.micro_batch_size, drop_remainder=True)
            .skip(skip_batches)
        )

        def tokenize(texts, batch_scores):
            features = preprocessor(tf.concat(list(texts), axis=0))
            features["scores"] = batch_scores
            return features

        return dataset.map(tokenize, num_parallel_calls=tf.data.AUTOTUNE).prefetch(
            tf.data.AUTOTUNE
        )

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

    def evaluate(self, model, global_step, batch_size=32):
        """Pearson and Spearman of cosine vs gold score on the dev pairs."""
        options = self.options
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

    def save_outputs(self, model, output_dir):
        """The sentence-transformers copy of the trained model."""
        directory = os.path.join(output_dir, SENTENCE_TRANSFORMERS_DIR)
        model.save_sentence_transformers(directory)
        logging.info("Saved the sentence-transformers directory %s", directory)
        return directory

    def serving_kwargs(self):
        return {}


def options_from_flags(flags_obj):
    f = flags_obj
    options = SimilarityOptions(
        train_file=f.train_file,
        dev_file=f.dev_file,
        text_a_column=f.text_a_column,
        text_b_column=f.text_b_column,
        score_column=f.score_column or None,
        negative_column=f.negative_column or None,
        loss=f.loss,
        score_scale=f.score_scale,
        similarity_scale=f.similarity_scale,
        pooling=f.pooling,
        normalize=f.normalize,
    )
    options.check(f.do_train, f.do_eval)
    return options


def run(flags_obj):
    """run_similarity.py: train (or resume), evaluate, save, export.

    Until the task protocol's runner is on main, the shared steps come from
    `bert_tf.training.run_setup`, as in the other run_* tasks.
    """
    import keras

    from bert_tf.serving import export_saved_model
    from bert_tf.training.run_setup import output_dir_lock
    from bert_tf.training.run_setup import strategy_from_flags
    from bert_tf.training.run_setup import train_or_restore
    from bert_tf.training.run_setup import write_eval_results
    from bert_tf.training.strategy import is_chief

    f = flags_obj
    options = options_from_flags(f)
    if not (f.do_train or f.do_eval):
        raise UserInputError("At least one of `do_train` or `do_eval` must be True.")
    if f.train_batch_size % f.gradient_accumulation_steps:
        raise UserInputError(
            f"--train_batch_size={f.train_batch_size} is not divisible by "
            f"--gradient_accumulation_steps={f.gradient_accumulation_steps}"
        )
    task = SimilarityTask(
        options,
        seed=f.seed,
        micro_batch_size=f.train_batch_size // f.gradient_accumulation_steps,
        train_batch_size=f.train_batch_size,
        num_train_epochs=f.num_train_epochs,
        do_lower_case=f.do_lower_case,
        max_seq_length=f.max_seq_length,
        vocab_file=f.vocab_file,
    )
    with output_dir_lock(f):
        task.prepare(f.do_train)
        keras.utils.set_random_seed(f.seed)
        if f.dtype != "float32":
            keras.mixed_precision.set_global_policy(f.dtype)
        tf.io.gfile.makedirs(f.output_dir)
        strategy = strategy_from_flags(f)
        with strategy.scope():
            model = task.build_model(f.init_checkpoint)
        steps = warmup = 0
        if f.do_train:
            steps = task.num_train_steps()
            warmup = int(steps * f.warmup_proportion)
        global_step = train_or_restore(
            f,
            strategy,
            model,
            script=task.script,
            config=model.encoder.config,
            loss_fn=task.loss,
            dataset_fn=task.dataset_fn,
            # What else defines the run: the task's own options.
            data=[*task.fingerprints(), run_defining(options)] if f.do_train else [],
            num_train_steps=steps,
            num_warmup_steps=warmup,
            vocab_file=model.preprocessor.vocab_file,
        )
        chief = is_chief(strategy)
        if f.do_train and chief:
            task.save_outputs(model, f.output_dir)
        results = None
        if f.do_eval and chief:
            results = task.evaluate(model, global_step, batch_size=f.eval_batch_size)
            write_eval_results(
                results, os.path.join(f.output_dir, task.eval_results_file)
            )
        if f.export_dir and chief:
            export_saved_model(
                model,
                f.export_dir,
                model.preprocessor.vocab_file,
                model.preprocessor.do_lower_case,
                model.preprocessor.seq_length,
                tokenizer=f.serving_tokenizer,
                dtype=f.serving_dtype,
                version=f.export_version,
            )
    return results


def run_defining(options):
    return {name: getattr(options, name) for name in options.RUN_DEFINING}
