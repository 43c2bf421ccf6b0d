"""`CheckpointSource`: a pipeline's model built from a checkpoint directory."""

import os

import tensorflow as tf

from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.errors import UserInputError
from bert_tf.serving.families import SCRIPT_FAMILIES
from bert_tf.text.tokenizer_json import read_json_or_empty
from bert_tf.training.recorded_run import RecordedRun

SPAN_FIELDS = (
    "max_query_length",
    "max_answer_length",
    "doc_stride",
    "n_best_size",
    "version_2_with_negative",
    "null_score_diff_threshold",
)


class CheckpointSource:
    """The model of one family, loaded from `path`, behind the calls a
    `TextPipeline` makes: `classify` (via `BertTextClassifier.predict_labels`),
    `embed` (`BertSentenceEncoder.encode`), `tag` and `answer` (the
    `serving_default` functions of `TaggerSignatures` / `SpanSignatures`,
    run in this process: the outputs an export of the model gives).

    Args:
        path: a bert_tf output_dir or checkpoint directory, or a Hugging Face
            / sentence-transformers directory.
        family: "classifier", "tagger", "span" or "embedding".
        seq_length: longest input in word pieces; default: run_settings.json's
            max_seq_length, else 384 for "span" and 128 otherwise (at most
            the model's max_position_embeddings).
        labels: class names / IOB2 tags in label-id order; default:
            label_list.json, else config.json's id2label.
        pooling: the pooling of an "embedding" model over a plain checkpoint
            (default "mean"; a sentence-transformers directory says its own).
        **span_fields: `SpanOptions` fields (default: the run's, else
            `SpanOptions`' defaults).

    Raises:
        UserInputError: `path` holds no checkpoint, or one of another family,
            or no label names.

    Example:
    >>> CheckpointSource("/tmp/squad_output", "span").answer(["Who?"], ["Ada."])
    """

    def __init__(
        self, path, family, seq_length=None, labels=None, pooling=None, **span_fields
    ):
        unknown = sorted(set(span_fields) - set(SPAN_FIELDS))
        if unknown or (span_fields and family != "span"):
            raise UserInputError(
                f"bert_tf.pipeline: unknown option(s) {', '.join(sorted(span_fields))} "
                f"for a {family} model"
            )
        self.path = path
        self.family = family
        self.recorded = RecordedRun(path)
        self.settings = self.recorded.settings
        trained = SCRIPT_FAMILIES.get(self.settings.get("script"))
        if trained is not None and trained != family:
            raise UserInputError(
                f"bert_tf.pipeline: {path} holds a {self.settings['script']} model "
                f"(a {trained}), not a {family}"
            )
        self.text_pair = None
        if family == "embedding":
            self._load_embedding(seq_length, pooling)
            return
        try:
            self.files = find_checkpoint(path)
        except FileNotFoundError as error:
            raise UserInputError(
                f"bert_tf.pipeline: {path} holds no saved_model.pb and no "
                f"checkpoint: {error}"
            ) from None
        if self.files.vocab_file is None:
            raise UserInputError(
                f"bert_tf.pipeline: no vocab.txt or tokenizer.json in {path}"
            )
        max_positions = self.files.load_config().max_position_embeddings
        if seq_length is not None and seq_length > max_positions:
            raise UserInputError(
                f"bert_tf.pipeline: seq_length={seq_length} > the model's "
                f"max_position_embeddings ({max_positions}) in {path}"
            )
        default_length = min(384 if family == "span" else 128, max_positions)
        self.seq_length = seq_length or self.settings.get(
            "max_seq_length", default_length
        )
        self.do_lower_case = self.settings.get("do_lower_case")
        if self.do_lower_case is None:
            self.do_lower_case = self.files.do_lower_case is not False
        if family == "classifier":
            self._load_classifier(labels)
        elif family == "tagger":
            self._load_tagger(labels)
        else:
            self._load_span(span_fields)
        self._check_loaded()

    # --- loading ------------------------------------------------------------

    def _labels(self, labels):
        if labels is not None:
            return [str(label) for label in labels]
        saved = read_label_list(self.path)
        if saved is not None and not saved.is_regression:
            return saved.label_list
        id2label = read_json_or_empty(os.path.join(self.path, "config.json")).get(
            "id2label"
        )
        if id2label:
            return [id2label[str(i)] for i in range(len(id2label))]
        if saved is not None:  # regression
            return None
        raise UserInputError(
            f"bert_tf.pipeline: no label_list.json or config.json id2label in "
            f"{self.path}: is it a {self.family}? (pass labels=[...] to name them)"
        )

    def _preprocessor(self):
        from bert_tf.text.preprocessing import BertPreprocessor

        return BertPreprocessor(
            self.files.vocab_file,
            self.do_lower_case,
            self.seq_length,
            padding="longest",
            **self.files.tokenizer_options,
        )

    def _load_classifier(self, labels):
        from bert_tf.models import BertTextClassifier

        labels = self._labels(labels)
        arguments = {"labels": labels} if labels is not None else {"num_labels": 1}
        self.model = BertTextClassifier.from_checkpoint(
            self.path,
            vocab_file=self.files.vocab_file,
            do_lower_case=self.do_lower_case,
            seq_length=self.seq_length,
            **arguments,
        )
        self.text_pair = self.recorded.text_pair

    def _load_tagger(self, labels):
        from bert_tf.models import BertTokenClassifier
        from bert_tf.serving.tagger_signatures import TaggerSignatures

        labels = self._labels(labels)
        crf = {}
        if self.settings.get("use_crf"):
            constrained = self.settings.get("crf_constrained")
            crf = {"crf": True, "crf_iob2_labels": labels if constrained else None}
        self.model = BertTokenClassifier.from_checkpoint(
            self.files, num_labels=len(labels), **crf
        )
        module = TaggerSignatures(self.model, self._preprocessor(), labels)
        self._tag = tf.function(
            module.serve_text, input_signature=[tf.TensorSpec([None], tf.string)]
        )

    def _load_span(self, span_fields):
        from bert_tf.models import BertSpanLabeler
        from bert_tf.serving.span_options import SpanOptions
        from bert_tf.serving.span_signatures import SpanSignatures

        fields = {n: self.settings[n] for n in SPAN_FIELDS if n in self.settings}
        options = SpanOptions(**{**fields, **span_fields})
        self.model = BertSpanLabeler.from_checkpoint(self.files)
        module = SpanSignatures(self.model, self._preprocessor(), options)
        function, specs = module.text_endpoint()
        self._answer = tf.function(function, input_signature=specs)

    def _load_embedding(self, seq_length, pooling):
        from bert_tf.checkpoints.sentence_transformers_checkpoint import (
            sentence_transformers_dir_of,
        )
        from bert_tf.models import BertSentenceEncoder

        path = self.path
        if sentence_transformers_dir_of(path) is None:
            pooling = pooling or "mean"
        try:
            self.model = BertSentenceEncoder.from_checkpoint(
                path, pooling=pooling, max_seq_length=seq_length
            )
        except FileNotFoundError as error:
            raise UserInputError(
                f"bert_tf.pipeline: {self.path} holds no saved_model.pb and no "
                f"checkpoint: {error}"
            ) from None

    def _check_loaded(self):
        missing = self.model.checkpoint_load_report.missing_read(self.model)
        if missing:
            raise UserInputError(
                f"bert_tf.pipeline: {self.path} lacks {len(missing)} of a "
                f"{self.family} model's variables, e.g. {missing[:3]}: is it one?"
            )

    # --- calls --------------------------------------------------------------

    def classify(self, texts, text_pair=None):
        x = texts if text_pair is None else (texts, text_pair)
        return self.model.predict_labels(x, batch_size=len(texts))

    def embed(self, texts):
        return self.model.encode(texts, batch_size=len(texts))

    def tag(self, texts):
        outputs = self._tag(tf.constant(texts))
        return {name: value.numpy() for name, value in outputs.items()}

    def answer(self, questions, contexts):
        outputs = self._answer(tf.constant(questions), tf.constant(contexts))
        return {name: value.numpy() for name, value in outputs.items()}
