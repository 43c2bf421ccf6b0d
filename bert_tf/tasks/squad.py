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

from bert_tf import squad_postprocessing
from bert_tf import tokenization
from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.data_prep import record_pipeline
from bert_tf.data_prep import squad as squad_data
from bert_tf.data_prep import tfds_input
from bert_tf.errors import UserInputError
from bert_tf.models import BertSpanLabeler
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.training import flags as common_flags
from bert_tf.training.output_dir import file_fingerprint
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

# The original shuffles the training examples with this fixed seed.
TRAIN_EXAMPLES_SEED = 12345


def validate_flags(flags_obj, bert_config=None):
    """The original's checks (its `validate_flags_or_throw`) and the shared ones
    (`validate_common_flags`), with the flag named in each message.

    The max_position_embeddings check runs only when `bert_config` is given.
    """
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint or ""
    )
    if not flags_obj.do_train and not flags_obj.do_predict:
        raise UserInputError("At least one of `do_train` or `do_predict` must be True.")
    _validate_tfds_flags(flags_obj)
    if flags_obj.do_train and not (
        flags_obj.train_file or getattr(flags_obj, "tfds_name", None)
    ):
        raise UserInputError(
            "If `do_train` is True, then `train_file` must be specified (--train_file)."
        )
    if flags_obj.do_predict and not (
        flags_obj.predict_file or getattr(flags_obj, "tfds_name", None)
    ):
        raise UserInputError(
            "If `do_predict` is True, then `predict_file` must be specified "
            "(--predict_file)."
        )
    if flags_obj.do_eval and not flags_obj.do_predict:
        raise UserInputError("`do_eval` scores the predictions: it needs --do_predict.")
    for name in ("vocab_file", "output_dir"):
        if getattr(flags_obj, name) is None:
            raise UserInputError(f"Flag --{name} must be specified.")
    if bert_config is not None and (
        flags_obj.max_seq_length > bert_config.max_position_embeddings
    ):
        raise UserInputError(
            f"Cannot use sequence length {flags_obj.max_seq_length} because the BERT "
            "model was only trained up to sequence length "
            f"{bert_config.max_position_embeddings} "
            "(--max_seq_length > max_position_embeddings)"
        )
    if flags_obj.max_seq_length <= flags_obj.max_query_length + 3:
        raise UserInputError(
            f"The max_seq_length ({flags_obj.max_seq_length}) must be greater than "
            f"max_query_length ({flags_obj.max_query_length}) + 3 "
            "(--max_seq_length, --max_query_length)"
        )
    common_flags.validate_common_flags(flags_obj)
    # Flag values first, then the files: before a model is built (and before
    # an eval-only run looks for its trained weights, which would be the error
    # shown instead).
    for name, wanted in (
        ("train_file", flags_obj.do_train),
        ("predict_file", flags_obj.do_predict),
    ):
        path = getattr(flags_obj, name, None)
        if wanted and path and not tf.io.gfile.exists(path):
            raise UserInputError(f"--{name}: {path} does not exist")


# The original's name.
validate_flags_or_throw = validate_flags


def _validate_tfds_flags(flags_obj):
    """--tfds_name replaces --train_file/--predict_file; SQuAD 2.0 needs
    --version_2_with_negative and 1.1 must not have it."""
    common_flags.validate_tfds_flags(
        flags_obj, ("train_file", "predict_file"), tfds_input.SQUAD_CONFIGS
    )
    if not getattr(flags_obj, "tfds_name", None):
        return
    version_2 = tfds_input.SQUAD_CONFIGS[tfds_input.config_key(flags_obj.tfds_name)]
    if version_2 != flags_obj.version_2_with_negative:
        raise UserInputError(
            f"--tfds_name={flags_obj.tfds_name} needs "
            f"--version_2_with_negative={str(version_2).lower()}"
        )


def input_files(flags_obj):
    """(train_file, predict_file): the flags', or with --tfds_name the TFDS
    splits written as SQuAD JSON to output_dir (tfds_train.json,
    tfds_predict.json), which the file reader and --do_eval then read."""
    if not flags_obj.tfds_name:
        return flags_obj.train_file, flags_obj.predict_file

    def write(needed, split, name):
        if not needed:
            return None
        return tfds_input.write_squad_json(
            flags_obj.tfds_name,
            split,
            os.path.join(flags_obj.output_dir, name),
            data_dir=flags_obj.tfds_data_dir,
            download=flags_obj.tfds_download,
        )

    return (
        write(
            flags_obj.do_train, flags_obj.tfds_split_train or "train", "tfds_train.json"
        ),
        write(
            flags_obj.do_predict,
            flags_obj.tfds_split_predict or "validation",
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
    train_file, predict_file = input_files(flags_obj)

    def convert(examples, record_file, is_training):
        return squad_data.write_features(
            examples,
            tokenizer,
            record_file,
            max_seq_length=seq_length,
            doc_stride=flags_obj.doc_stride,
            max_query_length=flags_obj.max_query_length,
            is_training=is_training,
        )

    data = []
    dataset_fn = num_train_steps = num_warmup_steps = None
    if flags_obj.do_train:
        train_examples = squad_data.read_squad_examples(
            train_file,
            is_training=True,
            version_2_with_negative=version_2,
            first_answer_only=getattr(flags_obj, "train_answer", "error") == "first",
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
        data = [file_fingerprint(train_file)]
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
            predict_file,
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
            num_features,
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
                predict_file, predictions, null_odds, version_2
            )
            write_eval_results(results, os.path.join(output_dir, "eval_results.json"))
    if flags_obj.export_dir and chief:
        export_from_flags(
            flags_obj,
            model,
            max_query_length=flags_obj.max_query_length,
            max_answer_length=flags_obj.max_answer_length,
            doc_stride=flags_obj.doc_stride,
            n_best_size=flags_obj.n_best_size,
            version_2_with_negative=flags_obj.version_2_with_negative,
            null_score_diff_threshold=flags_obj.null_score_diff_threshold,
        )
    return results
