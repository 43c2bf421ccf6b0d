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

from bert_tf import tokenization
from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.data_prep import conll
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep.label_list_file import LABEL_LIST_FILE
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.data_prep.label_list_file import write_label_list
from bert_tf.entity_metrics import entity_scores
from bert_tf.errors import UserInputError
from bert_tf.models import BertTokenClassifier
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.training import flags as common_flags
from bert_tf.training.output_dir import file_fingerprint
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

SPLIT_FILES = {"train": "train.txt", "dev": "dev.txt", "test": "test.txt"}
TAGGING_SEQUENCE_FEATURES = (*ENCODER_INPUT_NAMES, "label_ids")
# Prediction also reads which positions are words (the CRF's chain), as the
# test split has no labels to tell.
PREDICTION_SEQUENCE_FEATURES = (*TAGGING_SEQUENCE_FEATURES, "word_mask")
# A CRF variable in any checkpoint layout: TF1 `cls/crf/transitions`, object
# `model/crf/transitions/...`, Hugging Face `crf.transitions`.
_CRF_VARIABLE = re.compile(r"(^|[/.])crf[/.]transitions($|[/.])")


# --tfds_name: the flag naming each split and its TFDS default.
TFDS_SPLIT_FLAGS = {
    "train": ("tfds_split_train", "train"),
    "dev": ("tfds_split_eval", "dev"),
    "test": ("tfds_split_predict", "test"),
}


def data_file(flags_obj, split):
    """--<split>_file, else data_dir/<CoNLL-2003 name>; with --tfds_name the
    file `write_tfds_files` made of the TFDS split in output_dir."""
    if getattr(flags_obj, "tfds_name", None):
        return os.path.join(flags_obj.output_dir, f"tfds_{split}.txt")
    path = getattr(flags_obj, f"{split}_file")
    if path:
        return path
    if flags_obj.data_dir:
        return os.path.join(flags_obj.data_dir, SPLIT_FILES[split])
    flag = {"train": "do_train", "dev": "do_eval", "test": "do_predict"}[split]
    raise UserInputError(f"--{flag} needs --{split}_file or --data_dir")


def write_tfds_files(flags_obj):
    """--tfds_name=conll2003: writes the splits the run reads (train for
    --do_train, dev for --do_eval, test for --do_predict) to output_dir as
    `token<TAB>tag` files with IOB2 tags, which `data_file` then names."""
    from bert_tf.data_prep import tfds_input

    wanted = {
        "train": flags_obj.do_train,
        "dev": flags_obj.do_eval,
        "test": flags_obj.do_predict,
    }
    for split, needed in wanted.items():
        if needed:
            flag, default = TFDS_SPLIT_FLAGS[split]
            tfds_input.write_conll2003_file(
                getattr(flags_obj, flag, None) or default,
                data_file(flags_obj, split),
                data_dir=flags_obj.tfds_data_dir,
                download=flags_obj.tfds_download,
                tfds_name=flags_obj.tfds_name,
            )


def validate_flags(flags_obj):
    if not (flags_obj.do_train or flags_obj.do_eval or flags_obj.do_predict):
        raise UserInputError(
            "At least one of `do_train`, `do_eval` or `do_predict' must be True."
        )
    if flags_obj.vocab_file is None and flags_obj.init_checkpoint:
        # A Google or Hugging Face model directory carries its vocab.txt.
        flags_obj.vocab_file = find_checkpoint(flags_obj.init_checkpoint).vocab_file
    for name in ("vocab_file", "output_dir"):
        if getattr(flags_obj, name) is None:
            raise UserInputError(f"Flag --{name} must be specified.")
    common_flags.validate_common_flags(flags_obj)
    _validate_tfds_flags(flags_obj)
    for split, wanted in (
        ("train", flags_obj.do_train),
        ("dev", flags_obj.do_eval),
        ("test", flags_obj.do_predict),
    ):
        path = data_file(flags_obj, split) if wanted else None
        if path and not flags_obj.tfds_name and not tf.io.gfile.exists(path):
            raise UserInputError(f"--{split}_file: {path} does not exist")
    window = flags_obj.max_seq_length - 2
    if flags_obj.doc_stride is None:
        flags_obj.doc_stride = max(1, window // 2)
    if not 1 <= flags_obj.doc_stride <= window:
        raise UserInputError(
            f"--doc_stride={flags_obj.doc_stride} must be between 1 and "
            f"max_seq_length - 2 = {window}, or windows would skip tokens"
        )
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint or ""
    )
    if getattr(flags_obj, "crf_constrained", False) and not flags_obj.use_crf:
        raise UserInputError("--crf_constrained constrains the CRF: add --use_crf")


def crf_arguments(flags_obj, label_list):
    """`BertTokenClassifier` arguments of --use_crf / --crf_constrained."""
    if not getattr(flags_obj, "use_crf", False):
        return {}
    constrained = getattr(flags_obj, "crf_constrained", False)
    return {"crf": True, "crf_iob2_labels": list(label_list) if constrained else None}


def has_crf_variables(names):
    """Whether checkpoint variable `names` include a CRF's transitions."""
    return any(_CRF_VARIABLE.search(name) for name in names)


def check_crf_flag(use_crf, names, checkpoint):
    """One clear error when --use_crf and the checkpoint disagree.

    Raises:
        UserInputError: a CRF checkpoint without --use_crf (its transitions
            would be dropped) or --use_crf on one without (they'd be zeros).
    """
    has_crf = has_crf_variables(names)
    if has_crf and not use_crf:
        raise UserInputError(
            f"{checkpoint} holds a CRF tagger (cls/crf/transitions): add --use_crf"
        )
    if use_crf and not has_crf:
        raise UserInputError(
            f"{checkpoint} has no CRF transitions (cls/crf/*): drop --use_crf, "
            "or train with it"
        )


def check_restored_crf(flags_obj, model):
    """Without --do_train: the checkpoint `restore_trained` will read (newest
    training checkpoint, final model.ckpt-*, or --init_checkpoint) matches
    --use_crf."""
    use_crf = bool(getattr(flags_obj, "use_crf", False))
    output_dir = flags_obj.output_dir
    state = tf.train.get_checkpoint_state(os.path.join(output_dir, "checkpoints"))
    finals = tf.io.gfile.glob(os.path.join(output_dir, "model.ckpt-*.index"))
    if state and state.all_model_checkpoint_paths:
        path = state.all_model_checkpoint_paths[-1]
    elif finals:
        path = max(finals, key=lambda p: int(p[: -len(".index")].rsplit("-", 1)[1]))
        path = path[: -len(".index")]
    else:
        report = getattr(model, "checkpoint_load_report", None)
        if report is not None and flags_obj.init_checkpoint:
            check_crf_flag(
                use_crf,
                [*report.loaded, *report.unused],
                f"--init_checkpoint={flags_obj.init_checkpoint}",
            )
        return
    try:
        names = [name for name, _ in tf.train.list_variables(path)]
    except (tf.errors.OpError, ValueError):
        return  # unreadable: restore_trained reports it
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


def predict_sentences(model, sentences, features, label_list, batch_size, flags_obj):
    """Predicted IOB2 tags of every word, and the eval loss."""
    positions, loss = predict_positions(
        model, features, batch_size, flags_obj.pad_to_longest
    )
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


def run(flags_obj):
    """Runs run_ner.py with the parsed flags; returns the eval results."""
    validate_flags(flags_obj)
    with output_dir_lock(flags_obj):
        return _run(flags_obj)


def _validate_tfds_flags(flags_obj):
    """--tfds_name=conll2003 replaces the files; its tags are IOB2."""
    from bert_tf.data_prep import tfds_input

    common_flags.validate_tfds_flags(
        flags_obj,
        ("data_dir", "train_file", "dev_file", "test_file"),
        tfds_input.CONLL_CONFIGS,
    )
    if flags_obj.tfds_name and flags_obj.tag_scheme != "iob2":
        raise UserInputError(
            f"--tag_scheme={flags_obj.tag_scheme}: TFDS {flags_obj.tfds_name} "
            "tags are iob2"
        )


def _run(flags_obj):
    config = load_config(flags_obj)
    prepare_run(flags_obj, config)
    check_vocab_matches_config(flags_obj.vocab_file, config)
    if flags_obj.tfds_name:
        write_tfds_files(flags_obj)
    scheme = flags_obj.tag_scheme

    def read(split):
        return conll.read_conll(
            data_file(flags_obj, split), scheme, flags_obj.strict_tags
        )

    train_sentences = read("train") if flags_obj.do_train else None
    # Checked before training: an untagged dev file can't be scored.
    dev_sentences = read("dev") if flags_obj.do_eval else None
    if dev_sentences is not None and dev_sentences[0].tags is None:
        raise UserInputError(f"{data_file(flags_obj, 'dev')}: --do_eval needs tags")
    if train_sentences is not None:
        label_list = conll.label_list_from(train_sentences, flags_obj.labels)
    else:
        saved = read_label_list(flags_obj.output_dir)
        label_list = saved.label_list if saved else None
        if label_list is None and flags_obj.labels:
            label_list = conll.label_list_from([], flags_obj.labels)
        if label_list is None:
            raise UserInputError(
                f"No {LABEL_LIST_FILE} in {flags_obj.output_dir} (written by a training "
                "run): give the entity types with --labels"
            )
    tf.io.gfile.makedirs(flags_obj.output_dir)
    write_label_list(flags_obj.output_dir, label_list, scheme)

    tokenizer = tokenization.FullTokenizer(
        flags_obj.vocab_file, flags_obj.do_lower_case
    )
    seq_length = flags_obj.max_seq_length

    def featurize(sentences):
        return conll.convert_sentences_to_features(
            sentences, label_list, seq_length, tokenizer, flags_obj.doc_stride
        )

    strategy = strategy_from_flags(flags_obj)
    chief = is_chief(strategy)
    model = build_model(
        strategy,
        BertTokenClassifier,
        config,
        flags_obj.init_checkpoint,
        num_labels=len(label_list),
        **crf_arguments(flags_obj, label_list),
    )
    if not flags_obj.do_train:
        check_restored_crf(flags_obj, model)

    dataset_fn = num_train_steps = num_warmup_steps = None
    data = []
    if flags_obj.do_train:
        features = featurize(train_sentences)
        num_examples = len(features.input_ids)
        num_train_steps = training_steps(
            num_examples, flags_obj.train_batch_size, flags_obj.num_train_epochs
        )
        num_warmup_steps = int(num_train_steps * flags_obj.warmup_proportion)
        logging.info("***** Running training *****")
        logging.info(
            "  Num examples = %d windows of %d sentences",
            num_examples,
            len(train_sentences),
        )
        logging.info("  Batch size = %d", flags_obj.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        data = [file_fingerprint(data_file(flags_obj, "train"))]
        dataset_fn = training_dataset_fn(
            features,
            flags_obj.train_batch_size // flags_obj.gradient_accumulation_steps,
            flags_obj.seed,
            flags_obj.pad_to_longest,
            16 if flags_obj.length_bucketing else 1,
        )
    global_step = train_or_restore(
        flags_obj,
        strategy,
        model,
        script="run_ner",
        config=config,
        loss_fn=crf_tagging_loss(model.crf) if model.crf is not None else tagging_loss,
        dataset_fn=dataset_fn,
        data=data,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        vocab_file=flags_obj.vocab_file,
    )

    def predict_split(split, what, sentences):
        if sentences[0].tags is not None:
            conll.check_labels(sentences, label_list, data_file(flags_obj, split))
        features = featurize(sentences)
        logging.info("***** Running %s *****", what)
        logging.info("  Num examples = %d sentences", len(sentences))
        batch_size = (
            flags_obj.eval_batch_size
            if split == "dev"
            else flags_obj.predict_batch_size
        )
        predicted, loss = predict_sentences(
            model, sentences, features, label_list, batch_size, flags_obj
        )
        name = "eval_predictions.txt" if split == "dev" else "test_predictions.txt"
        conll.write_predictions(
            os.path.join(flags_obj.output_dir, name), sentences, predicted, scheme
        )
        return sentences, predicted, loss

    results = None
    if flags_obj.do_eval and chief:
        sentences, predicted, loss = predict_split("dev", "evaluation", dev_sentences)
        results = evaluate(sentences, predicted, scheme, loss, global_step)
        write_eval_results(
            results, os.path.join(flags_obj.output_dir, "eval_results.txt")
        )
    if flags_obj.do_predict and chief:
        predict_split("test", "prediction", read("test"))
    if flags_obj.export_dir and chief:
        export_from_flags(flags_obj, model, label_list=label_list)
    return results
