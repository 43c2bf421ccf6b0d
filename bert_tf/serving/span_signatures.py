"""`SpanSignatures`: the SavedModel signatures of a `BertSpanLabeler`."""

import dataclasses

import tensorflow as tf

from bert_tf.serving.document_answers import DocumentAnswers
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.serving.span_options import SpanOptions


class SpanSignatures(SignatureModule):
    """`serving_default`: answers over whole documents (`question`, `context`;
    see `DocumentAnswers`); `serve_tokenized`: the model's `start_logits`,
    `end_logits` [B, L] for windows the client packed itself.

    Args:
        model: a `BertSpanLabeler`.
        preprocessor: its `BertPreprocessor` (`seq_length` = window length).
        span_options: a `SpanOptions`; or give its fields as keyword
            arguments instead.

    Example:
    >>> SpanSignatures(model, preprocessor, SpanOptions(doc_stride=64))
    """

    family = "span"

    def __init__(self, model, preprocessor, span_options=None, **fields):
        super().__init__(model, preprocessor)
        if span_options is not None and fields:
            raise TypeError(f"give span_options or its fields, not both: {fields}")
        self.options = span_options or SpanOptions(**fields)
        self.answers = DocumentAnswers(model, preprocessor, self.options)

    def text_endpoint(self):
        specs = [tf.TensorSpec([None], tf.string, n) for n in ("question", "context")]
        return self.answers.__call__, specs

    def tokenize_for_warmup(self, inputs):
        return self.answers.windows(inputs["question"], inputs["context"])[0]

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        outputs = self.model(
            model_inputs(input_ids, input_mask, segment_ids), training=False
        )
        return {name: tf.cast(outputs[name], tf.float32) for name in outputs}

    def metadata(self):
        options = dataclasses.asdict(self.options)
        options["version_2_with_negative"] = bool(options["version_2_with_negative"])
        return {**super().metadata(), **options}
