"""What export_saved_model.py does: a trained checkpoint to a TF Serving model.

Reads any checkpoint `from_checkpoint` reads (a run_classifier / run_squad
output_dir, a Google checkpoint or model directory, a Hugging Face directory),
builds the task model, and writes `export_dir/<version>/` with
`bert_tf.export.export_saved_model`.
"""

import os

from absl import flags
from absl import logging

from bert_tf import tokenization
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.export import export_saved_model
from bert_tf.models import BertClassifier
from bert_tf.models import BertEncoder
from bert_tf.models import BertSpanLabeler
from bert_tf.training import flags as common_flags
from data_prep import glue

MODEL_TYPES = ("classifier", "span", "encoder")


def define_flags():
    flags.DEFINE_enum(
        "model_type",
        None,
        list(MODEL_TYPES),
        "classifier (run_classifier output), span (run_squad output) or encoder.",
    )
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "The trained model: a run_* --output_dir, a checkpoint prefix, or a Google "
        "or Hugging Face model directory.",
    )
    flags.DEFINE_string(
        "bert_config_file",
        None,
        "bert_config.json; default: the one beside the checkpoint.",
    )
    flags.DEFINE_string(
        "vocab_file", None, "vocab.txt; default: the one beside the checkpoint."
    )
    flags.DEFINE_bool(
        "do_lower_case",
        True,
        "Whether to lower case the input text (as the model was trained).",
    )
    flags.DEFINE_integer(
        "max_seq_length",
        128,
        "Longest packed input of the raw-text signature (each request is padded "
        "to its longest row, up to this); span: the window length.",
    )
    flags.DEFINE_string(
        "export_dir", None, "Base directory; the model goes to export_dir/<version>/."
    )
    flags.DEFINE_string(
        "task_name",
        None,
        "classifier: a run_classifier task (e.g. MRPC) for the label names and "
        "whether it takes text pairs.",
    )
    flags.DEFINE_list(
        "labels",
        None,
        "classifier: label names in label-id order (instead of --task_name).",
    )
    flags.DEFINE_bool(
        "text_pair",
        None,
        "classifier/encoder: serving_default takes text_b too (default: from "
        "--task_name; else false).",
    )
    flags.DEFINE_integer("max_query_length", 64, "span: question tokens kept.")
    flags.DEFINE_integer("max_answer_length", 30, "span: longest answer in tokens.")
    flags.DEFINE_integer(
        "doc_stride", 128, "span: how far each window of a long context moves on."
    )
    flags.DEFINE_integer(
        "n_best_size", 20, "span: start/end candidates per window, n-best entries."
    )
    flags.DEFINE_bool(
        "version_2_with_negative",
        False,
        "span: the model was trained on SQuAD 2.0 (answers may be empty).",
    )
    flags.DEFINE_float(
        "null_score_diff_threshold",
        0.0,
        'span, SQuAD 2.0: answer "" when the null score beats the best span by '
        "more than this.",
    )
    common_flags.define_serving_flags()


def classifier_labels(flags_obj):
    """(label_list, text_pair) from --labels / --task_name / --text_pair."""
    if flags_obj.labels and flags_obj.task_name:
        raise ValueError("Give --labels or --task_name, not both")
    if flags_obj.labels:
        labels, pair = list(flags_obj.labels), False
    elif flags_obj.task_name:
        task = flags_obj.task_name.lower()
        if task == "custom":
            raise ValueError(
                "--task_name=custom: give the labels with --labels and pairs with "
                "--text_pair"
            )
        processor = glue.get_processor(task)
        labels, pair = processor.get_labels(None), processor.text_pair
    else:
        raise ValueError(
            "--model_type=classifier needs --task_name or --labels (label names)"
        )
    if flags_obj.text_pair is not None:
        pair = flags_obj.text_pair
    return labels, pair


def run(flags_obj):
    """Exports the checkpoint; returns the version directory."""
    for name in ("model_type", "init_checkpoint", "export_dir"):
        if not getattr(flags_obj, name):
            raise ValueError(f"Flag --{name} must be specified.")
    files = find_checkpoint(flags_obj.init_checkpoint)
    vocab_file = flags_obj.vocab_file or files.vocab_file
    if not vocab_file:
        raise ValueError(
            f"No vocab.txt beside {flags_obj.init_checkpoint}: give --vocab_file"
        )
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint
    )
    config = flags_obj.bert_config_file
    options = {}
    if flags_obj.model_type == "classifier":
        labels, pair = classifier_labels(flags_obj)
        regression = glue.is_regression_label_list(labels)
        model = BertClassifier.from_checkpoint(
            flags_obj.init_checkpoint,
            config=config,
            num_labels=1 if regression else len(labels),
        )
        options = {"label_list": None if regression else labels, "text_pair": pair}
    elif flags_obj.model_type == "span":
        model = BertSpanLabeler.from_checkpoint(
            flags_obj.init_checkpoint, config=config
        )
        options = {
            name: getattr(flags_obj, name)
            for name in (
                "max_query_length",
                "max_answer_length",
                "doc_stride",
                "n_best_size",
                "version_2_with_negative",
                "null_score_diff_threshold",
            )
        }
    else:
        model = BertEncoder.from_checkpoint(flags_obj.init_checkpoint, config=config)
        options = {"text_pair": bool(flags_obj.text_pair)}
    report = model.checkpoint_load_report
    if report.missing:
        raise ValueError(
            f"{flags_obj.init_checkpoint} lacks {len(report.missing)} of the "
            f"{flags_obj.model_type} model's variables, e.g. {report.missing[:3]}: "
            "is --model_type right?"
        )
    path = export_saved_model(
        model,
        flags_obj.export_dir,
        vocab_file,
        flags_obj.do_lower_case,
        flags_obj.max_seq_length,
        tokenizer=flags_obj.serving_tokenizer,
        dtype=flags_obj.serving_dtype,
        version=flags_obj.export_version,
        **options,
    )
    logging.info(
        "Serve it with: --model_base_path=%s", os.path.abspath(flags_obj.export_dir)
    )
    return path
