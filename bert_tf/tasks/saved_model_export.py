"""What export_saved_model.py does: a trained checkpoint to a TF Serving model.

Reads any checkpoint `from_checkpoint` reads (a run_classifier / run_squad
output_dir, a Google checkpoint or model directory, a Hugging Face directory),
builds the task model, and writes `export_dir/<version>/` with
`bert_tf.serving.export_saved_model`.
"""

import os

from absl import logging

from bert_tf import tokenization
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.config import BertConfig
from bert_tf.data_prep import glue
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier
from bert_tf.models import BertEncoder
from bert_tf.models import BertReranker
from bert_tf.models import BertSentenceEncoder
from bert_tf.models import BertSpanLabeler
from bert_tf.models import BertTokenClassifier
from bert_tf.serving import export_saved_model
from bert_tf.tasks.saved_model_types import MODEL_TYPES
from bert_tf.training import flags as common_flags


def classifier_labels(flags_obj):
    """(label_list, text_pair) from --labels / --task_name / --text_pair."""
    if flags_obj.labels and flags_obj.task_name:
        raise UserInputError("Give --labels or --task_name, not both")
    if flags_obj.labels:
        labels, pair = list(flags_obj.labels), False
    elif flags_obj.task_name:
        task = flags_obj.task_name.lower()
        if task == "custom":
            raise UserInputError(
                "--task_name=custom: give the labels with --labels and pairs with "
                "--text_pair"
            )
        processor = glue.get_processor(task)
        labels, pair = processor.get_labels(None), processor.text_pair
    else:
        raise UserInputError(
            "--model_type=classifier needs --task_name or --labels (label names)"
        )
    if flags_obj.text_pair is not None:
        pair = flags_obj.text_pair
    return labels, pair


def tagger_labels(init_checkpoint):
    """The tags run_ner.py saved in its output_dir (label_list.json)."""
    directory = (
        init_checkpoint
        if os.path.isdir(init_checkpoint)
        else os.path.dirname(init_checkpoint)
    )
    saved = read_label_list(directory)
    if saved is None:
        raise UserInputError(
            f"No label_list.json in {directory}: give the tagger's IOB2 tags with "
            "--labels"
        )
    return saved.label_list


def run(flags_obj):
    """Exports the checkpoint; returns the version directory."""
    for name in ("model_type", "init_checkpoint", "export_dir"):
        if not getattr(flags_obj, name):
            raise UserInputError(f"Flag --{name} must be specified.")
    if flags_obj.model_type not in MODEL_TYPES:
        # Library callers skip the CLI's enum check; an unknown type must not
        # fall through to the encoder export.
        raise UserInputError(
            f"--model_type={flags_obj.model_type}: expected one of {list(MODEL_TYPES)}"
        )
    common_flags.validate_common_flags(flags_obj)
    files = find_checkpoint(flags_obj.init_checkpoint)
    vocab_file = flags_obj.vocab_file or files.vocab_file
    if not vocab_file:
        raise UserInputError(
            f"No vocab.txt beside {flags_obj.init_checkpoint}: give --vocab_file"
        )
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint
    )
    config = flags_obj.bert_config_file
    max_positions = BertConfig.from_json_file(
        config or files.config_file
    ).max_position_embeddings
    if flags_obj.max_seq_length > max_positions:
        # The signature would accept requests the model cannot encode.
        raise UserInputError(
            f"--max_seq_length={flags_obj.max_seq_length} > max_position_embeddings "
            f"({max_positions}) of {config or files.config_file}"
        )
    options = {}
    do_lower_case = flags_obj.do_lower_case
    max_seq_length = flags_obj.max_seq_length
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
    elif flags_obj.model_type == "tagger":
        from bert_tf.tasks import ner

        labels = flags_obj.labels or tagger_labels(flags_obj.init_checkpoint)
        model = BertTokenClassifier.from_checkpoint(
            flags_obj.init_checkpoint,
            config=config,
            num_labels=len(labels),
            **ner.crf_arguments(flags_obj, labels),
        )
        report = model.checkpoint_load_report
        ner.check_crf_flag(
            bool(getattr(flags_obj, "use_crf", False)),
            [*report.loaded, *report.unused],
            f"--init_checkpoint={flags_obj.init_checkpoint}",
        )
        options = {"label_list": labels}
    elif flags_obj.model_type == "embedding":
        model = BertSentenceEncoder.from_checkpoint(
            flags_obj.init_checkpoint,
            config=config,
            pooling=getattr(flags_obj, "pooling", None),
            vocab_file=vocab_file,
        )
        # The tokenization the encoder was trained with: its checkpoint's.
        do_lower_case = model.preprocessor.do_lower_case
        max_seq_length = model.preprocessor.seq_length
    elif flags_obj.model_type == "reranker":
        # Strict: a checkpoint without the one-label score head is an error.
        model = BertReranker.from_checkpoint(
            flags_obj.init_checkpoint, config=config, vocab_file=vocab_file
        )
        # The tokenization the cross-encoder was trained with: its directory's.
        do_lower_case = model.preprocessor.do_lower_case
        max_seq_length = model.preprocessor.seq_length
    else:
        model = BertEncoder.from_checkpoint(flags_obj.init_checkpoint, config=config)
        options = {"text_pair": bool(flags_obj.text_pair)}
    report = model.checkpoint_load_report
    missing = [
        name
        for name in report.missing
        # A model that does not read the pooler may lack it.
        if model.reads_pooled_output or not name.startswith("bert/pooler/")
    ]
    if missing:
        raise UserInputError(
            f"{flags_obj.init_checkpoint} lacks {len(missing)} of the "
            f"{flags_obj.model_type} model's variables, e.g. {missing[:3]}: "
            "is --model_type right?"
        )
    path = export_saved_model(
        model,
        flags_obj.export_dir,
        vocab_file,
        do_lower_case,
        max_seq_length,
        tokenizer=flags_obj.serving_tokenizer,
        dtype=flags_obj.serving_dtype,
        version=flags_obj.export_version,
        **options,
    )
    logging.info(
        "Serve it with: --model_base_path=%s", os.path.abspath(flags_obj.export_dir)
    )
    return path
