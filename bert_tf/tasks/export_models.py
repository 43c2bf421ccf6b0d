"""The model an export serves, built from a checkpoint: one builder a family.

export_saved_model.py and export_litert.py read the same checkpoints the
same way: `build_for_export` finds the checkpoint's files, checks the
tokenization against the run that wrote them (`recorded_tokenization`),
calls the builder its `bert_tf.serving.families.Family` names, and checks
that the checkpoint held the family's variables. A builder is
``builder(options, source) -> ExportModel``; `options` is a
`SavedModelExportOptions` or a `LiteRTExportOptions` (the fields both have).
"""

import dataclasses
import os

from absl import logging

from bert_tf.checkpoints.loading import check_special_tokens
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.multi_vector_checkpoint import read_multi_vector_encoder
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    sentence_transformers_dir_of,
)
from bert_tf.checkpoints.sparse_encoder_checkpoint import read_sparse_encoder
from bert_tf.config import BertConfig
from bert_tf.data_prep import glue
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier
from bert_tf.models import BertEncoder
from bert_tf.models import BertMultiVectorEncoder
from bert_tf.models import BertReranker
from bert_tf.models import BertSentenceEncoder
from bert_tf.models import BertSpanLabeler
from bert_tf.models import BertSparseEncoder
from bert_tf.retrieval.rerank_verdict import read_verdict
from bert_tf.serving.families import family_named
from bert_tf.serving.registry import resolve
from bert_tf.serving.span_options import SpanOptions
from bert_tf.tasks import ner
from bert_tf.training.recorded_run import RecordedRun


@dataclasses.dataclass(frozen=True)
class ExportSource:
    """What a builder reads: the checkpoint and its checked tokenization.

    Args:
      init_checkpoint: the checkpoint (a run's output_dir, a directory, a prefix).
      config: --bert_config_file, or None (the checkpoint's own).
      vocab_file: the vocabulary found or given.
      do_lower_case: the run's, the flag's, else True.
      labels: the classifier labels the run recorded, or None.
      text_pair: whether the run classified text pairs, or None
        (`RecordedRun.text_pair`).
    """

    init_checkpoint: str
    config: str | None
    vocab_file: str
    do_lower_case: bool
    labels: list | None
    text_pair: bool | None = None


@dataclasses.dataclass(frozen=True)
class ExportModel:
    """A model built for export, with what its signatures take.

    Args:
      model: the Keras model.
      signature_options: the family's signature arguments (labels,
        text_pair, span_options).
      vocab_file: the vocabulary served.
      do_lower_case, max_seq_length: the tokenization served (a sentence
        encoder's or cross-encoder's own, else the source's).
      tokenizer_options: strip_accents / tokenize_chinese_chars of a
        checkpoint that says its own, else empty.
    """

    model: object
    signature_options: dict
    vocab_file: str
    do_lower_case: bool
    max_seq_length: int | None
    tokenizer_options: dict = dataclasses.field(default_factory=dict)


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
            "labels=",
            argument="labels",
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
    files = _checkpoint_of(options)
    vocab_file = options.vocab_file or files.vocab_file
    if not vocab_file:
        raise UserInputError(
            f"No vocab.txt or tokenizer.json beside {options.init_checkpoint}: "
            "give vocab_file",
            argument="vocab_file",
        )
    config = options.bert_config_file
    bert_config = BertConfig.from_json_file(config or files.config_file)
    if not family_named(options.model_type).own_tokenizer:
        check_special_tokens(vocab_file)
    if bert_config.type_vocab_size < 2 and reads_sentence_pairs(options):
        raise UserInputError(
            f"{config or files.config_file}: type_vocab_size="
            f"{bert_config.type_vocab_size}, but the {options.model_type} export "
            "reads sentence pairs (segment id 1); "
            + (
                "leave out text_pair"
                if options.model_type != "span"
                else "a span model needs a model trained on pairs"
            ),
            argument="text_pair",
        )
    max_positions = bert_config.max_position_embeddings
    # None: the checkpoint's own length (embedding, reranker, retrieval).
    if options.max_seq_length is not None and options.max_seq_length > max_positions:
        # The signature would accept requests the model cannot encode.
        raise UserInputError(
            f"max_seq_length={options.max_seq_length} > max_position_embeddings "
            f"({max_positions}) of {config or files.config_file}",
            argument="max_seq_length",
        )
    return vocab_file, config


def _checkpoint_of(options):
    """The `CheckpointFiles` an export reads: a SPLADE or ColBERT
    sentence-transformers directory's transformer module (which a Router
    keeps in a subdirectory), else what `find_checkpoint` finds."""
    path = options.init_checkpoint
    readers = {
        "sparse_encoder": read_sparse_encoder,
        "multi_vector_encoder": read_multi_vector_encoder,
    }
    st_dir = sentence_transformers_dir_of(path)
    if options.model_type in readers and st_dir is not None:
        return readers[options.model_type](st_dir).checkpoint
    return find_checkpoint(path)


def recorded_tokenization(options, recorded):
    """`(do_lower_case, classifier labels or None)` of an export, checked
    against `recorded`, the `RecordedRun` of the run init_checkpoint names:
    what the run recorded wins, an option that contradicts it is a
    `UserInputError`.

    do_lower_case left out: the run's (True without a record); classifier
    labels left out: the run's label_list.json."""
    labels, labels_flag = None, None
    if options.model_type == "classifier" and (options.labels or options.task_name):
        labels = options.classifier_labels()[0]
        labels_flag = (
            f"labels={','.join(options.labels)}"
            if options.labels
            else f"task_name={options.task_name}"
        )
        if options.labels and _renames(labels, recorded.label_list, labels_flag):
            # --labels names the run's labels for display, in label-id order.
            logging.info(
                "Labels: the run's %s shown as %s",
                ",".join(map(str, recorded.label_list)),
                ",".join(labels),
            )
            labels = None  # checked: the run's own are the ones recorded
    elif options.model_type == "tagger" and options.labels:
        labels = list(options.labels)
        labels_flag = f"labels={','.join(options.labels)}"
    tokenizes = not family_named(options.model_type).own_tokenizer
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


def _renames(labels, trained, labels_flag):
    """Whether --labels renames the run's `trained` labels (as many, and a
    classification run's); another count is a `UserInputError`. Names that
    are the run's own in another order are no renaming (the record's check
    stops them: a reorder would swap the classes' names)."""
    if trained is None or glue.is_regression_label_list(trained):
        return False  # a regression run: the record's check names it
    labels, trained = [str(x) for x in labels], [str(x) for x in trained]
    if labels == trained or any(
        new != old and new in trained for new, old in zip(labels, trained, strict=False)
    ):
        return False
    if len(labels) != len(trained):
        raise UserInputError(
            f"{labels_flag}: {len(labels)} labels, but the run was trained with "
            f"{len(trained)} ({','.join(trained)}); labels renames them in "
            "label-id order, one name each",
            argument="labels",
        )
    return True


def build_for_export(options):
    """The `ExportModel` of the checkpoint `options` name, checked: its
    family's builder (`Family.builder`) over the checked `ExportSource`."""
    vocab_file, config = checkpoint_files(options)
    # What the run recorded wins over the options.
    recorded = RecordedRun.beside(options.init_checkpoint)
    do_lower_case, recorded_labels = recorded_tokenization(options, recorded)
    source = ExportSource(
        options.init_checkpoint,
        config,
        vocab_file,
        do_lower_case,
        recorded_labels,
        recorded.text_pair,
    )
    built = resolve(family_named(options.model_type).builder)(options, source)
    missing = built.model.checkpoint_load_report.missing_read(built.model)
    if missing:
        raise UserInputError(
            f"{options.init_checkpoint} lacks {len(missing)} of the "
            f"{options.model_type} model's variables, e.g. {missing[:3]}: "
            "is model_type right?",
            argument="model_type",
        )
    return built


def _as_exported(options, source, model, **signature_options):
    return ExportModel(
        model,
        signature_options,
        source.vocab_file,
        source.do_lower_case,
        options.max_seq_length,
    )


def _with_own_tokenizer(model, source):
    """A sentence encoder's or cross-encoder's export: the tokenization it
    was trained with, its checkpoint's (e.g. sentence_bert_config.json's
    256 word pieces)."""
    preprocessor = model.preprocessor
    return ExportModel(
        model,
        {},
        source.vocab_file,
        preprocessor.do_lower_case,
        preprocessor.seq_length,
        {
            "strip_accents": preprocessor.strip_accents,
            "tokenize_chinese_chars": preprocessor.tokenize_chinese_chars,
        },
    )


def classifier(options, source):
    labels, pair = options.classifier_labels()
    if labels is None:
        labels = source.labels
    if options.text_pair is None and not options.task_name and source.text_pair:
        # A pair task's run (MRPC, a custom task with text_b_column) serves
        # pairs without its task_name given again.
        pair = True
    regression = glue.is_regression_label_list(labels)
    model = BertClassifier.from_checkpoint(
        source.init_checkpoint,
        config=source.config,
        num_labels=1 if regression else len(labels),
    )
    renamed = {}
    if options.labels and source.labels and list(source.labels) != list(labels):
        renamed = {"trained_labels": list(source.labels)}
    return _as_exported(
        options,
        source,
        model,
        label_list=None if regression else labels,
        text_pair=pair,
        **renamed,
    )


def span(options, source):
    model = BertSpanLabeler.from_checkpoint(
        source.init_checkpoint, config=source.config
    )
    return _as_exported(
        options, source, model, span_options=SpanOptions.from_attributes(options)
    )


def tagger(options, source):
    init = source.init_checkpoint
    labels = list(options.labels or tagger_labels(init))
    model = ner.tagger_for_export(init, source.config, options, labels)
    return _as_exported(options, source, model, label_list=labels)


def encoder(options, source):
    model = BertEncoder.from_checkpoint(source.init_checkpoint, config=source.config)
    return _as_exported(options, source, model, text_pair=bool(options.text_pair))


def embedding(options, source):
    model = BertSentenceEncoder.from_checkpoint(
        source.init_checkpoint,
        config=source.config,
        # (export_litert.py has no --pooling: the checkpoint's own.)
        pooling=getattr(options, "pooling", None),
        vocab_file=source.vocab_file,
        max_seq_length=options.max_seq_length,
    )
    model.set_defaults(options.prompt_name, options.truncate_dim)
    return _with_own_tokenizer(model, source)


def reranker(options, source):
    verdict = read_verdict(source.init_checkpoint)
    if verdict and verdict["keep_first_stage"]:
        # Exported alone it re-ranks whatever it is given (no first stage to
        # keep), so the export goes on; said, not lost silently.
        logging.warning(
            "%s records that this cross-encoder re-ranked worse than its first "
            "stage (%s %.4f -> %.4f on %s): the export scores as it does",
            verdict["path"],
            verdict["metric"],
            verdict["retrieval"],
            verdict["reranked"],
            verdict["eval_split"],
        )
    # Strict: a checkpoint without the one-label score head is an error.
    model = BertReranker.from_checkpoint(
        source.init_checkpoint,
        config=source.config,
        vocab_file=source.vocab_file,
        seq_length=options.max_seq_length,
    )
    return _with_own_tokenizer(model, source)


def sparse_encoder(options, source):
    """A SPLADE model: a sentence-transformers SparseEncoder directory (or a
    BERT checkpoint with its masked-LM head), served top-`options.top_k`."""
    model = BertSparseEncoder.from_checkpoint(
        source.init_checkpoint,
        config=source.config,
        vocab_file=source.vocab_file,
        max_seq_length=options.max_seq_length,
    )
    built = _with_own_tokenizer(model, source)
    return dataclasses.replace(built, signature_options={"top_k": options.top_k})


def multi_vector_encoder(options, source):
    """A ColBERT model: a sentence-transformers MultiVectorEncoder directory."""
    model = BertMultiVectorEncoder.from_checkpoint(
        source.init_checkpoint,
        config=source.config,
        vocab_file=source.vocab_file,
        max_seq_length=options.max_seq_length,
    )
    return _with_own_tokenizer(model, source)
