"""What run_squad.py does: fine-tune a span labeler on SQuAD and predict answers.

The steps and files are the original's (spec §1.2, §2.3, §5): training
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
from absl import flags
from absl import logging

from bert_tf import squad_postprocessing
from bert_tf import tokenization
from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.models import BertSpanLabeler
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
from data_prep import squad as squad_data

# The original shuffles the training examples with this fixed seed.
TRAIN_EXAMPLES_SEED = 12345

_MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids")


def define_flags():
    """Defines run_squad.py's flags: the original's, the shared new ones, and
    --do_eval."""
    common_flags.define_common_flags(max_seq_length=384)
    common_flags.define_finetuning_flags()
    flags.DEFINE_string(
        "train_file", None, "SQuAD json for training. E.g., train-v1.1.json"
    )
    flags.DEFINE_string(
        "predict_file",
        None,
        "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json",
    )
    flags.DEFINE_integer(
        "doc_stride",
        128,
        "When splitting up a long document into chunks, how much stride to take "
        "between chunks.",
    )
    flags.DEFINE_integer(
        "max_query_length",
        64,
        "The maximum number of tokens for the question. Questions longer than this "
        "will be truncated to this length.",
    )
    flags.DEFINE_integer(
        "n_best_size",
        20,
        "The total number of n-best predictions to generate in the "
        "nbest_predictions.json output file.",
    )
    flags.DEFINE_integer(
        "max_answer_length",
        30,
        "The maximum length of an answer that can be generated. This is needed "
        "because the start and end predictions are not conditioned on one another.",
    )
    flags.DEFINE_bool(
        "verbose_logging",
        False,
        "If true, all of the warnings related to data processing will be printed. "
        "A number of warnings are expected for a normal SQuAD evaluation.",
    )
    flags.DEFINE_bool(
        "version_2_with_negative",
        False,
        "If true, the SQuAD examples contain some that do not have an answer.",
    )
    flags.DEFINE_float(
        "null_score_diff_threshold",
        0.0,
        "If null_score - best_non_null is greater than the threshold predict null.",
    )
    flags.DEFINE_bool(
        "do_eval",
        False,
        "After predicting, score predictions.json against --predict_file as "
        "evaluate-v1.1.py (or evaluate-v2.0.py with --version_2_with_negative, "
        "using null_odds.json) and write eval_results.json.",
    )


def validate_flags(flags_obj, bert_config=None):
    """The original's checks (its `validate_flags_or_throw`) and the shared ones
    (`validate_common_flags`), with the flag named in each message.

    The max_position_embeddings check runs only when `bert_config` is given.
    """
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint or ""
    )
    if not flags_obj.do_train and not flags_obj.do_predict:
        raise ValueError("At least one of `do_train` or `do_predict` must be True.")
    if flags_obj.do_train and not flags_obj.train_file:
        raise ValueError(
            "If `do_train` is True, then `train_file` must be specified (--train_file)."
        )
    if flags_obj.do_predict and not flags_obj.predict_file:
        raise ValueError(
            "If `do_predict` is True, then `predict_file` must be specified "
            "(--predict_file)."
        )
    if flags_obj.do_eval and not flags_obj.do_predict:
        raise ValueError("`do_eval` scores the predictions: it needs --do_predict.")
    for name in ("vocab_file", "output_dir"):
        if getattr(flags_obj, name) is None:
            raise ValueError(f"Flag --{name} must be specified.")
    if bert_config is not None and (
        flags_obj.max_seq_length > bert_config.max_position_embeddings
    ):
        raise ValueError(
            f"Cannot use sequence length {flags_obj.max_seq_length} because the BERT "
            "model was only trained up to sequence length "
            f"{bert_config.max_position_embeddings} "
            "(--max_seq_length > max_position_embeddings)"
        )
    if flags_obj.max_seq_length <= flags_obj.max_query_length + 3:
        raise ValueError(
            f"The max_seq_length ({flags_obj.max_seq_length}) must be greater than "
            f"max_query_length ({flags_obj.max_query_length}) + 3 "
            "(--max_seq_length, --max_query_length)"
        )
    common_flags.validate_common_flags(flags_obj)


# The original's name.
validate_flags_or_throw = validate_flags


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

    def dataset_fn(context, skip_batches):
        per_replica = context.get_per_replica_batch_size(batch_size)
        dataset = tf.data.TFRecordDataset(record_file)
        dataset = dataset.shuffle(
            max(1, num_features), seed=seed, reshuffle_each_iteration=True
        )
        dataset = dataset.repeat()
        dataset = dataset.map(
            lambda r: squad_data.parse_squad_record(r, seq_length, True),
            num_parallel_calls=tf.data.AUTOTUNE,
        )
        dataset = dataset.batch(per_replica, drop_remainder=True)
        # Whole batches go to workers in turn: same batches as one worker.
        dataset = dataset.shard(context.num_input_pipelines, context.input_pipeline_id)
        dataset = dataset.skip(skip_batches)
        return dataset.prefetch(tf.data.AUTOTUNE)

    return dataset_fn


def predict_dataset(record_file, seq_length, batch_size):
    """Predict batches, in file order, the last one partial."""
    dataset = tf.data.TFRecordDataset(record_file).map(
        lambda r: squad_data.parse_squad_record(r, seq_length, False),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    return dataset.batch(batch_size).prefetch(tf.data.AUTOTUNE)


def predict_raw_results(model, dataset):
    """One `RawResult` per feature, in dataset order."""

    @tf.function
    def step(batch):
        outputs = model({k: batch[k] for k in _MODEL_INPUTS})
        return (
            tf.cast(outputs["start_logits"], tf.float32),
            tf.cast(outputs["end_logits"], tf.float32),
        )

    results = []
    for batch in dataset:
        start_logits, end_logits = step(batch)
        start_logits = np.asarray(start_logits)
        end_logits = np.asarray(end_logits)
        for i, unique_id in enumerate(batch["unique_ids"].numpy()):
            if len(results) % 1000 == 0:
                logging.info("Processing example: %d", len(results))
            results.append(
                squad_postprocessing.RawResult(
                    unique_id=int(unique_id),
                    start_logits=[float(x) for x in start_logits[i]],
                    end_logits=[float(x) for x in end_logits[i]],
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


def run(flags_obj):
    """Runs run_squad.py with the parsed flags; returns the eval results (or None)."""
    validate_flags(flags_obj)
    with output_dir_lock(flags_obj):
        return _run(flags_obj)


def _run(flags_obj):
    config = load_config(flags_obj)
    validate_flags(flags_obj, config)
    prepare_run(flags_obj, config)
    check_vocab_matches_config(flags_obj.vocab_file, config)

    tokenizer = tokenization.FullTokenizer(
        flags_obj.vocab_file, flags_obj.do_lower_case
    )
    seq_length = flags_obj.max_seq_length
    version_2 = flags_obj.version_2_with_negative

    strategy = strategy_from_flags(flags_obj)
    chief = is_chief(strategy)
    model = build_model(strategy, BertSpanLabeler, config, flags_obj.init_checkpoint)

    def convert(examples, record_file, is_training):
        features = []
        with squad_data.FeatureWriter(record_file, is_training) as writer:

            def append_feature(feature):
                if not is_training:
                    features.append(feature)
                writer.process_feature(feature)

            squad_data.convert_examples_to_features(
                examples=examples,
                tokenizer=tokenizer,
                max_seq_length=seq_length,
                doc_stride=flags_obj.doc_stride,
                max_query_length=flags_obj.max_query_length,
                is_training=is_training,
                output_fn=append_feature,
            )
        return writer.num_features, features

    data = []
    dataset_fn = num_train_steps = num_warmup_steps = None
    if flags_obj.do_train:
        train_examples = squad_data.read_squad_examples(
            flags_obj.train_file,
            is_training=True,
            version_2_with_negative=version_2,
        )
        num_train_steps = training_steps(
            len(train_examples),
            flags_obj.train_batch_size,
            flags_obj.num_train_epochs,
        )
        num_warmup_steps = int(num_train_steps * flags_obj.warmup_proportion)
        # Pre-shuffle the input to avoid having to make a very large shuffle
        # buffer in the input pipeline (the original's fixed seed).
        train_examples = list(train_examples)
        random.Random(TRAIN_EXAMPLES_SEED).shuffle(train_examples)
        record_file = os.path.join(flags_obj.output_dir, "train.tf_record")
        num_features, _ = convert(train_examples, record_file, is_training=True)
        data = [file_fingerprint(flags_obj.train_file)]
        logging.info("***** Running training *****")
        logging.info("  Num orig examples = %d", len(train_examples))
        logging.info("  Num split examples = %d", num_features)
        logging.info("  Batch size = %d", flags_obj.train_batch_size)
        logging.info("  Num steps = %d", num_train_steps)
        dataset_fn = training_dataset_fn(
            record_file,
            num_features,
            seq_length,
            flags_obj.train_batch_size // flags_obj.gradient_accumulation_steps,
            flags_obj.seed,
        )
    train_or_restore(
        flags_obj,
        strategy,
        model,
        script="run_squad",
        config=config,
        loss_fn=span_loss,
        dataset_fn=dataset_fn,
        data=data,
        num_train_steps=num_train_steps,
        num_warmup_steps=num_warmup_steps,
        vocab_file=flags_obj.vocab_file,
    )

    results = None
    if flags_obj.do_predict and chief:
        eval_examples = squad_data.read_squad_examples(
            flags_obj.predict_file,
            is_training=False,
            version_2_with_negative=version_2,
        )
        record_file = os.path.join(flags_obj.output_dir, "eval.tf_record")
        num_features, eval_features = convert(
            eval_examples, record_file, is_training=False
        )
        logging.info("***** Running predictions *****")
        logging.info("  Num orig examples = %d", len(eval_examples))
        logging.info("  Num split examples = %d", num_features)
        logging.info("  Batch size = %d", flags_obj.predict_batch_size)
        all_results = predict_raw_results(
            model,
            predict_dataset(record_file, seq_length, flags_obj.predict_batch_size),
        )
        assert len(all_results) == len(eval_features)
        output_dir = flags_obj.output_dir
        null_odds_file = os.path.join(output_dir, "null_odds.json")
        predictions = squad_postprocessing.write_predictions(
            eval_examples,
            eval_features,
            all_results,
            flags_obj.n_best_size,
            flags_obj.max_answer_length,
            flags_obj.do_lower_case,
            os.path.join(output_dir, "predictions.json"),
            os.path.join(output_dir, "nbest_predictions.json"),
            null_odds_file,
            version_2_with_negative=version_2,
            null_score_diff_threshold=flags_obj.null_score_diff_threshold,
            verbose_logging=flags_obj.verbose_logging,
        )
        if flags_obj.do_eval:
            null_odds = None
            if version_2:
                with tf.io.gfile.GFile(null_odds_file, "r") as reader:
                    null_odds = json.load(reader)
            results = evaluate_predictions(
                flags_obj.predict_file, predictions, null_odds, version_2
            )
            write_eval_results(results, os.path.join(output_dir, "eval_results.json"))
    if flags_obj.export_dir and chief:
        export_from_flags(
            flags_obj,
            model,
            max_query_length=flags_obj.max_query_length,
            max_answer_length=flags_obj.max_answer_length,
        )
    return results
