"""What export_saved_model.py does: a trained checkpoint to a TF Serving model.

Reads any checkpoint `from_checkpoint` reads (a run_classifier / run_squad
output_dir, a Google checkpoint or model directory, a Hugging Face directory),
builds the task model, and writes `export_dir/<version>/` with
`bert_tf.serving.export_saved_model`.
"""

import os

from absl import logging

from bert_tf.checkpoints.loading import check_special_tokens
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
from bert_tf.serving import export_saved_model
from bert_tf.training.recorded_run import RecordedRun


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


def reads_sentence_pairs(options):
    """Whether the export's signature packs two segments (question and
    context, text_a and text_b)."""
    if options.model_type == "span":
        return True
    if options.model_type == "classifier":
        return bool(options.classifier_labels()[1])
    if options.model_type == "encoder":
        return bool(options.text_pair)
    return False


def checkpoint_files(options):
    """(vocab_file, --bert_config_file or None) of an export's checkpoint,
    checked: a vocabulary is found and --max_seq_length fits the model."""
    files = find_checkpoint(options.init_checkpoint)
    vocab_file = options.vocab_file or files.vocab_file
    if not vocab_file:
        raise UserInputError(
            f"No vocab.txt or tokenizer.json beside {options.init_checkpoint}: "
            "give --vocab_file"
        )
    config = options.bert_config_file
    bert_config = BertConfig.from_json_file(config or files.config_file)
    if options.model_type not in ("embedding", "reranker"):
        # (Those two read their tokenizer from the checkpoint's own files.)
        check_special_tokens(vocab_file)
    if bert_config.type_vocab_size < 2 and reads_sentence_pairs(options):
        raise UserInputError(
            f"{config or files.config_file}: type_vocab_size="
            f"{bert_config.type_vocab_size}, but the {options.model_type} export "
            "reads sentence pairs (segment id 1); "
            + (
                "leave out --text_pair"
                if options.model_type != "span"
                else "a span model needs a model trained on pairs"
            )
        )
    max_positions = bert_config.max_position_embeddings
    # None: the checkpoint's own length (embedding, reranker, retrieval).
    if options.max_seq_length is not None and options.max_seq_length > max_positions:
        # The signature would accept requests the model cannot encode.
        raise UserInputError(
            f"--max_seq_length={options.max_seq_length} > max_position_embeddings "
            f"({max_positions}) of {config or files.config_file}"
        )
    return vocab_file, config


def recorded_tokenization(options):
    """`(do_lower_case, classifier labels or None)` of an export, checked
    against the run `--init_checkpoint` names (`RecordedRun`): what the run
    recorded wins, a flag that contradicts it is a `UserInputError`.

    `--do_lower_case` left out: the run's (True without a record);
    classifier labels left out: the run's label_list.json."""
    recorded = RecordedRun.beside(options.init_checkpoint)
    labels, labels_flag = None, None
    if options.model_type == "classifier" and (options.labels or options.task_name):
        labels = options.classifier_labels()[0]
        labels_flag = (
            f"--labels={','.join(options.labels)}"
            if options.labels
            else f"--task_name={options.task_name}"
        )
    elif options.model_type == "tagger" and options.labels:
        labels = list(options.labels)
        labels_flag = f"--labels={','.join(options.labels)}"
    # The embedding and reranker exports read their tokenization from the
    # checkpoint's own files.
    tokenizes = options.model_type not in ("embedding", "reranker")
    recorded.check(
        vocab_file=options.vocab_file if tokenizes else None,
        do_lower_case=options.do_lower_case if tokenizes else None,
        label_list=labels,
        labels_flag=labels_flag,
    )
    do_lower_case = options.do_lower_case
    if do_lower_case is None:
        do_lower_case = recorded.do_lower_case
    if do_lower_case is None:
        do_lower_case = True
    if options.model_type == "classifier" and labels is None:
        labels = recorded.label_list
    return bool(do_lower_case), labels


def run(options):
    """Exports the checkpoint `SavedModelExportOptions` name; returns the
    version directory."""
    if options.model_type == "retrieval":
        from bert_tf.tasks import retrieval

        return retrieval.export_from_checkpoint(options)
    vocab_file, config = checkpoint_files(options)
    init = options.init_checkpoint
    do_lower_case, recorded_labels = recorded_tokenization(options)
    max_seq_length = options.max_seq_length
    if options.model_type == "classifier":
        labels, pair = options.classifier_labels()
        if labels is None:
            labels = recorded_labels
        regression = glue.is_regression_label_list(labels)
        model = BertClassifier.from_checkpoint(
            init, config=config, num_labels=1 if regression else len(labels)
        )
        serving = {"label_list": None if regression else labels, "text_pair": pair}
    elif options.model_type == "span":
        model = BertSpanLabeler.from_checkpoint(init, config=config)
        serving = {"span_options": options.span_options()}
    elif options.model_type == "tagger":
        from bert_tf.tasks import ner

        labels = list(options.labels or tagger_labels(init))
        model = ner.tagger_for_export(init, config, options, labels)
        serving = {"label_list": labels}
    elif options.model_type == "embedding":
        model = BertSentenceEncoder.from_checkpoint(
            init,
            config=config,
            pooling=options.pooling,
            vocab_file=vocab_file,
            max_seq_length=options.max_seq_length,
        )
        model.set_defaults(options.prompt_name, options.truncate_dim)
        # The tokenization the encoder was trained with: its checkpoint's.
        do_lower_case = model.preprocessor.do_lower_case
        max_seq_length = model.preprocessor.seq_length
        serving = {}
    elif options.model_type == "reranker":
        # Strict: a checkpoint without the one-label score head is an error.
        model = BertReranker.from_checkpoint(
            init,
            config=config,
            vocab_file=vocab_file,
            seq_length=options.max_seq_length,
        )
        # The tokenization the cross-encoder was trained with: its directory's.
        do_lower_case = model.preprocessor.do_lower_case
        max_seq_length = model.preprocessor.seq_length
        serving = {}
    else:
        model = BertEncoder.from_checkpoint(init, config=config)
        serving = {"text_pair": bool(options.text_pair)}
    tokenizer_options = {}
    if options.model_type in ("embedding", "reranker"):
        tokenizer_options = {
            "strip_accents": model.preprocessor.strip_accents,
            "tokenize_chinese_chars": model.preprocessor.tokenize_chinese_chars,
        }
    report = model.checkpoint_load_report
    missing = [
        name
        for name in report.missing
        # A model that does not read the pooler may lack it.
        if model.reads_pooled_output or not name.startswith("bert/pooler/")
    ]
    if missing:
        raise UserInputError(
            f"{init} lacks {len(missing)} of the "
            f"{options.model_type} model's variables, e.g. {missing[:3]}: "
            "is --model_type right?"
        )
    export = options.export
    path = export_saved_model(
        model,
        export.export_dir,
        vocab_file,
        do_lower_case,
        max_seq_length,
        tokenizer=export.serving_tokenizer,
        dtype=export.serving_dtype,
        version=export.export_version,
        **tokenizer_options,
        **serving,
    )
    logging.info(
        "Serve it with: --model_base_path=%s", os.path.abspath(export.export_dir)
    )
    return path
