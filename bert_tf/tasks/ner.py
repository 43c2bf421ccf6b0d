"""What run_ner.py does: fine-tune, evaluate and predict a named-entity tagger.

CoNLL files in (`bert_tf.data_prep.conll`: CoNLL-2003 or two-column, IOB1/IOB2/BIOES),
the BERT paper's tagging recipe (the first WordPiece of each word carries its
label; long sentences in overlapping windows, each word scored once), the
training loop, strategies, precision, resume and final checkpoint of
run_classifier.py, and out:

- `eval_results.txt`: entity `precision`, `recall`, `f1` (micro, as
  conlleval), `f1_<TYPE>` per entity type, token `accuracy`, `eval_loss`,
  `global_step`;
- `eval_predictions.txt` / `test_predictions.txt`: `token [gold] predicted`
  lines in the input's tag scheme, for conlleval;
- `label_list.json`: the tags in label-id order and the tag scheme
  (`bert_tf.data_prep.label_list_file`), also beside the final checkpoint
  and in the SavedModel.

`--use_crf` puts a linear-chain CRF (`bert_tf.layers.CRF`) over the logits:
the chain runs over the scored words of each window, training minimises its
negative log-likelihood per word, and predictions are its Viterbi paths
(`--crf_constrained`: only well-formed IOB2 paths). Its transitions are saved
as `cls/crf/*`; a run without the flag on a CRF checkpoint (or the reverse)
stops with an error instead of dropping or inventing them.
"""

import os
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.checkpoints.name_map import CRF_SCOPE
from bert_tf.data_prep import conll
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.data_prep.label_list_file import LABEL_LIST_FILE
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.data_prep.label_list_file import write_label_list
from bert_tf.errors import UserInputError
from bert_tf.metrics.entity import entity_scores
from bert_tf.models import BertTokenClassifier
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.options.checks import check_once
from bert_tf.options.ner_options import SPLIT_RUN_OPTIONS
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.task import with_checkpoint_vocab
from bert_tf.tasks.training_data import TrainingData
from bert_tf.text import tokenization
from bert_tf.training.recorded_run import RecordedRun
from bert_tf.training.train_or_restore import training_steps

TAGGING_SEQUENCE_FEATURES = (*ENCODER_INPUT_NAMES, "label_ids")
# Prediction also reads which positions are words (the CRF's chain), as the
# test split has no labels to tell.
PREDICTION_SEQUENCE_FEATURES = (*TAGGING_SEQUENCE_FEATURES, "word_mask")
# A CRF variable in any checkpoint layout: TF1 `cls/crf/transitions`, object
# `model/crf/transitions/...`, Hugging Face `crf.transitions`.
_CRF_VARIABLE = re.compile(r"(^|[/.])crf[/.]transitions($|[/.])")

# --tfds_name: the option naming each split and its TFDS default.
TFDS_SPLITS = {
    "train": ("tfds_split_train", "train"),
    "dev": ("tfds_split_eval", "dev"),
    "test": ("tfds_split_predict", "test"),
}


def write_tfds_files(options, run):
    """--tfds_name=conll2003: writes the splits the run reads (train for
    --do_train, dev for --do_eval, test for --do_predict) to output_dir as
    `token<TAB>tag` files with IOB2 tags, which `NerOptions.data_file` then
    names."""
    from bert_tf.data_prep import tfds_input

    tfds = options.tfds
    for split, option in SPLIT_RUN_OPTIONS.items():
        if getattr(run, option):
            name, default = TFDS_SPLITS[split]
            tfds_input.write_conll2003_file(
                getattr(tfds, name) or default,
                options.data_file(run, split),
                data_dir=tfds.tfds_data_dir,
                download=tfds.tfds_download,
                tfds_name=tfds.tfds_name,
            )


def crf_arguments(options, label_list):
    """`BertTokenClassifier` arguments of --use_crf / --crf_constrained."""
    return _crf_arguments(options.use_crf, options.crf_constrained, label_list)


def _crf_arguments(use_crf, constrained, label_list):
    if not use_crf:
        return {}
    return {"crf": True, "crf_iob2_labels": list(label_list) if constrained else None}


def crf_learning_rate_multipliers(options):
    """The optimizer's `learning_rate_multipliers` of --use_crf: the CRF
    transitions (`cls/crf/*`) at --crf_learning_rate_multiplier."""
    if not options.use_crf:
        return None
    return {f"^{CRF_SCOPE}/": options.crf_learning_rate_multiplier}


def has_crf_variables(names):
    """Whether checkpoint variable `names` include a CRF's transitions."""
    return any(_CRF_VARIABLE.search(name) for name in names)


def tagger_for_export(init_checkpoint, config, options, labels):
    """The `BertTokenClassifier` an export serves, from `init_checkpoint`.

    Its CRF is `options.use_crf`'s when given, else the run's
    (run_settings.json beside the checkpoint), else the checkpoint's own
    (CRF transitions among its variables); `crf_constrained` likewise.
    Checked against the checkpoint: a CRF checkpoint exported without its CRF
    would lose its transitions (argmax tags), and the reverse would decode
    with zeros."""
    recorded = RecordedRun.beside(init_checkpoint).settings
    use_crf = options.use_crf
    if use_crf is None and "use_crf" in recorded:
        use_crf = bool(recorded["use_crf"])
    constrained = options.crf_constrained
    if constrained is None:
        constrained = bool(recorded.get("crf_constrained"))

    def build(crf):
        return BertTokenClassifier.from_checkpoint(
            init_checkpoint,
            config=config,
            num_labels=len(labels),
            **_crf_arguments(crf, constrained, labels),
        )

    model = build(bool(use_crf))
    report = model.checkpoint_load_report
    names = [*report.loaded, *report.unused]
    if use_crf is None and has_crf_variables(names):
        logging.info("%s holds a CRF tagger: exported with its CRF", init_checkpoint)
        return build(True)
    check_crf_flag(bool(use_crf), names, f"init_checkpoint={init_checkpoint}")
    return model


def check_crf_flag(use_crf, names, checkpoint):
    """One clear error when --use_crf and the checkpoint disagree.

    Raises:
        UserInputError: a CRF checkpoint without --use_crf (its transitions
            would be dropped) or --use_crf on one without (they'd be zeros).
    """
    has_crf = has_crf_variables(names)
    if has_crf and not use_crf:
        raise UserInputError(
            f"{checkpoint} holds a CRF tagger (cls/crf/transitions): add use_crf",
            argument=("use_crf", "init_checkpoint"),
        )
    if use_crf and not has_crf:
        raise UserInputError(
            f"{checkpoint} has no CRF transitions (cls/crf/*): drop use_crf, "
            "or train with it",
            argument=("use_crf", "init_checkpoint"),
        )


def check_restored_crf(run, use_crf, model):
    """Without --do_train: the checkpoint the runner will restore (newest
    training checkpoint, final model.ckpt-*, or --init_checkpoint) matches
    --use_crf."""
    output_dir = run.output_dir
    state = tf.train.get_checkpoint_state(os.path.join(output_dir, "checkpoints"))
    finals = tf.io.gfile.glob(os.path.join(output_dir, "model.ckpt-*.index"))
    if state and state.all_model_checkpoint_paths:
        path = state.all_model_checkpoint_paths[-1]
    elif finals:
        path = max(finals, key=lambda p: int(p[: -len(".index")].rsplit("-", 1)[1]))
        path = path[: -len(".index")]
    else:
        report = getattr(model, "checkpoint_load_report", None)
        if report is not None and run.init_checkpoint:
            check_crf_flag(
                use_crf,
                [*report.loaded, *report.unused],
                f"init_checkpoint={run.init_checkpoint}",
            )
        return
    try:
        names = [name for name, _ in tf.train.list_variables(path)]
    except (tf.errors.OpError, ValueError):
        return  # unreadable: the restore reports it
    check_crf_flag(use_crf, names, path)


def scored_cross_entropy(labels, logits):
    """(sum of the cross-entropies, number) over the scored positions: the
    first piece of each word (the others have IGNORED_LABEL)."""
    logits = tf.cast(logits, tf.float32)
    scored = labels != conll.IGNORED_LABEL
    losses = tf.nn.sparse_softmax_cross_entropy_with_logits(
        tf.where(scored, labels, 0), logits
    )
    weights = tf.cast(scored, tf.float32)
    return tf.reduce_sum(losses * weights), tf.reduce_sum(weights)


def tagging_loss(batch, outputs):
    """Mean cross-entropy over the batch's scored positions (as HF's -100)."""
    total, count = scored_cross_entropy(batch["label_ids"], outputs["logits"])
    return total / tf.maximum(count, 1.0)


def crf_negative_log_likelihood(crf, labels, logits):
    """(sum of the windows' CRF negative log-likelihoods, number of scored
    words): the chain of each window runs over its scored words."""
    scored = labels != conll.IGNORED_LABEL
    total = -tf.reduce_sum(crf.log_likelihood(logits, labels, scored))
    return total, tf.reduce_sum(tf.cast(scored, tf.float32))


def crf_tagging_loss(crf):
    """The loss of --use_crf: the CRF's negative log-likelihood per scored word
    (on the cross-entropy's scale, so the learning rates carry over)."""

    def loss(batch, outputs):
        total, count = crf_negative_log_likelihood(
            crf, batch["label_ids"], outputs["logits"]
        )
        return total / tf.maximum(count, 1.0)

    return loss


def training_dataset_fn(features, batch_size, seed, pad_to_longest, bucket_pool):
    """`dataset_fn(input_context, skip_batches)` for the Trainer, as the
    classifier's: a seeded full shuffle each epoch, optional length buckets."""
    return record_pipeline.in_memory_training_dataset_fn(
        features.model_inputs(),
        batch_size,
        seed,
        bucket_pool_batches=bucket_pool,
        pad_to_longest=pad_to_longest,
        sequence_features=TAGGING_SEQUENCE_FEATURES,
    )


def _trim(batch):
    return record_pipeline.trim_to_longest(batch, PREDICTION_SEQUENCE_FEATURES)


def predict_positions(model, features, batch_size, pad_to_longest=True):
    """Per-position label ids [windows, seq] and the mean loss of the scored
    positions (None without labels). With a CRF (`model.crf`) the ids at the
    words are each window's Viterbi path over its scored words."""
    crf = getattr(model, "crf", None)
    word_mask = (features.word_index >= 0).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(
        {**features.model_inputs(), "word_mask": word_mask}
    )
    dataset = dataset.batch(batch_size)
    if pad_to_longest:
        dataset = dataset.map(_trim)

    # One trace for every batch shape (trimmed batches vary in length): a
    # signature of unknown sizes, so no batch retraces (nor warns that it did).
    signature = tf.nest.map_structure(
        lambda spec: tf.TensorSpec([None] * spec.shape.rank, spec.dtype),
        dataset.element_spec,
    )

    @tf.function(input_signature=[signature])
    def step(batch):
        inputs = {name: batch[name] for name in ENCODER_INPUT_NAMES}
        logits = model(inputs, training=False)["logits"]
        ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        if crf is None:
            total, count = scored_cross_entropy(batch["label_ids"], logits)
            return ids, total, count
        words = batch["word_mask"] > 0
        ids = tf.where(words, crf.decode(logits, words), ids)
        total, count = crf_negative_log_likelihood(crf, batch["label_ids"], logits)
        return ids, total, count

    seq_length = features.input_ids.shape[1]
    predictions, loss_sum, scored = [], 0.0, 0.0
    for batch in dataset:
        ids, batch_loss, batch_scored = step(batch)
        ids = ids.numpy()
        predictions.append(np.pad(ids, [(0, 0), (0, seq_length - ids.shape[1])]))
        loss_sum += float(batch_loss)
        scored += float(batch_scored)
    loss = loss_sum / scored if scored else None
    return np.concatenate(predictions), loss


def predict_sentences(
    model, sentences, features, label_list, batch_size, pad_to_longest=True
):
    """Predicted IOB2 tags of every word, and the eval loss."""
    positions, loss = predict_positions(model, features, batch_size, pad_to_longest)
    ids = conll.words_predictions(features, positions, sentences)
    return [[label_list[i] for i in sentence] for sentence in ids], loss


def evaluate(sentences, predicted, scheme, eval_loss, global_step):
    """conlleval's scores of the tags as written to eval_predictions.txt."""
    gold = [conll.canonical_tags(s.tags, scheme) for s in sentences]
    written = [conll.canonical_tags(tags, scheme) for tags in predicted]
    results = entity_scores(gold, written)
    results = {
        name: value
        for name, value in results.items()
        if not name.startswith(("precision_", "recall_", "support_"))
    }
    results["eval_loss"] = eval_loss
    results["global_step"] = int(global_step)
    return results


class NerTask(Task):
    """Named-entity tagging of CoNLL files: run_ner's task.

    Args:
      run: the `RunOptions` (without --vocab_file: the vocab.txt beside
        --init_checkpoint).
      options: the `NerOptions`.

    Example:

    ```python
    results = run_task(NerTask(run_options, NerOptions(data_dir="conll2003")))
    ```
    """

    script = "run_ner"
    model_class = BertTokenClassifier

    def __init__(self, run, options):
        check_once(options, run)
        super().__init__(with_checkpoint_vocab(run), options)

    def _read(self, split):
        return conll.read_conll(
            self.options.data_file(self.run, split),
            self.options.tag_scheme,
            self.options.strict_tags,
        )

    def prepare(self, config):
        run, options = self.run, self.options
        check_vocab_matches_config(run.vocab_file, config)
        if options.tfds.tfds_name:
            write_tfds_files(options, run)
        self.train_sentences = self._read("train") if run.do_train else None
        # Checked before training: an untagged dev file can't be scored.
        self.dev_sentences = self._read("dev") if run.do_eval else None
        if self.dev_sentences is not None and self.dev_sentences[0].tags is None:
            raise UserInputError(
                f"{options.data_file(run, 'dev')}: do_eval needs tags",
                argument="do_eval",
            )
        labels = list(options.labels) if options.labels is not None else None
        if self.train_sentences is not None:
            label_list = conll.label_list_from(self.train_sentences, labels)
        else:
            saved = read_label_list(run.output_dir)
            label_list = saved.label_list if saved else None
            if label_list is None and labels:
                label_list = conll.label_list_from([], labels)
            if label_list is None:
                raise UserInputError(
                    f"No {LABEL_LIST_FILE} in {run.output_dir} (written by a "
                    "training run): give the entity types with labels=",
                    argument="labels",
                )
        self.label_list = label_list
        write_label_list(run.output_dir, label_list, options.tag_scheme)
        self.tokenizer = tokenization.FullTokenizer(run.vocab_file, run.do_lower_case)

    def flag_labels(self):
        labels = self.options.labels
        if labels is None:
            return None
        return conll.label_list_from([], list(labels)), f"labels={','.join(labels)}"

    def model_kwargs(self):
        return {
            "num_labels": len(self.label_list),
            **crf_arguments(self.options, self.label_list),
        }

    def build_model(self, config):
        model = super().build_model(config)
        if not self.run.do_train:
            check_restored_crf(self.run, self.options.use_crf, model)
        self.crf = model.crf
        return model

    def _featurize(self, sentences):
        return conll.convert_sentences_to_features(
            sentences,
            self.label_list,
            self.run.max_seq_length,
            self.tokenizer,
            self.options.doc_stride,
        )

    def training_data(self):
        run, training = self.run, self.run.training
        features = self._featurize(self.train_sentences)
        num_examples = len(features.input_ids)
        num_train_steps = training_steps(
            num_examples, training.train_batch_size, training.num_train_epochs
        )
        logging.info("***** Running training *****")
        logging.info(
            "  Num examples = %d windows of %d sentences",
            num_examples,
            len(self.train_sentences),
        )
        logging.info("  Batch size = %d", training.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        dataset_fn = training_dataset_fn(
            features,
            training.micro_batch_size,
            run.seed,
            run.pad_to_longest,
            16 if training.length_bucketing else 1,
        )
        return TrainingData(
            dataset_fn,
            num_train_steps,
            self.options.training_fingerprints(run)
            or [file_fingerprint(self.options.data_file(run, "train"))],
            learning_rate_multipliers=crf_learning_rate_multipliers(self.options),
        )

    def loss(self, batch, outputs):
        if self.crf is None:
            return tagging_loss(batch, outputs)
        return crf_tagging_loss(self.crf)(batch, outputs)

    def _predict_split(self, model, split, what, sentences):
        run, scheme = self.run, self.options.tag_scheme
        if sentences[0].tags is not None:
            conll.check_labels(
                sentences, self.label_list, self.options.data_file(run, split)
            )
        features = self._featurize(sentences)
        logging.info("***** Running %s *****", what)
        logging.info("  Num examples = %d sentences", len(sentences))
        batch_size = run.eval_batch_size if split == "dev" else run.predict_batch_size
        predicted, loss = predict_sentences(
            model, sentences, features, self.label_list, batch_size, run.pad_to_longest
        )
        name = "eval_predictions.txt" if split == "dev" else "test_predictions.txt"
        conll.write_predictions(
            os.path.join(run.output_dir, name), sentences, predicted, scheme
        )
        return predicted, loss

    def evaluate(self, model, global_step):
        sentences = self.dev_sentences
        predicted, loss = self._predict_split(model, "dev", "evaluation", sentences)
        return evaluate(
            sentences, predicted, self.options.tag_scheme, loss, global_step
        )

    def predict(self, model, global_step):
        self._predict_split(model, "test", "prediction", self._read("test"))

    def serving_kwargs(self):
        return {"label_list": self.label_list}


def run(run_options, ner_options):
    """Runs run_ner with its options; returns the eval results (or None)."""
    return run_task(NerTask(run_options, ner_options))
