"""`SpanSignatures`: the SavedModel signatures of a `BertSpanLabeler`."""

import dataclasses
import functools

import tensorflow as tf

from bert_tf.serving.document_answers import DocumentAnswers
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.serving.span_options import SpanOptions

_TEXT_SPECS = [tf.TensorSpec([None], tf.string, n) for n in ("question", "context")]


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
        self.options.check_seq_length(preprocessor.seq_length)

    @functools.cached_property
    def answers(self):
        """The whole-document answer search of `serving_default`."""
        return DocumentAnswers(self.model, self.preprocessor, self.options)

    def text_endpoint(self):
        return self.answers.__call__, _TEXT_SPECS

    def tokenize_for_warmup(self, inputs):
        return self.answers.windows(inputs["question"], inputs["context"])[0]

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        return self._logits(model_inputs(input_ids, input_mask, segment_ids))

    def _logits(self, inputs):
        outputs = self.model(inputs, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in outputs}

    def litert_text_endpoint(self):
        """A LiteRT file's `serving_default` over a `LiteRTPreprocessor`:
        the logits of each row's first window (the question cut to
        max_query_length, the context filling the rest, as run_squad.py
        packs them) and each position's byte span in the context (-1
        outside it); the answer search runs outside the file."""
        max_query_length = self.options.max_query_length
        seq_length = self.preprocessor.seq_length

        def serve_text(question, context):
            query_ids, query_lengths, _, _ = self.preprocessor.tokenize(question)
            ids, lengths, starts, ends = self.preprocessor.tokenize(context)
            kept_query = tf.minimum(query_lengths, max_query_length)
            kept_context = tf.minimum(lengths, seq_length - 3 - kept_query)
            inputs, token_index, segment = self.preprocessor.pack(
                [(query_ids, query_lengths), (ids, lengths)], [kept_query, kept_context]
            )
            in_context = (token_index >= 0) & (segment == 1)
            at_positions = self.preprocessor.at_positions
            return {
                **self._logits(inputs),
                "token_start": at_positions(starts, token_index, in_context),
                "token_end": at_positions(ends, token_index, in_context),
            }

        return serve_text, _TEXT_SPECS

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata."""
        return {"max_query_length": self.options.max_query_length}

    def metadata(self):
        options = dataclasses.asdict(self.options)
        options["version_2_with_negative"] = bool(options["version_2_with_negative"])
        return {**super().metadata(), **options}
