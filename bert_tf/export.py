"""SavedModels for TF Serving: raw text in, predictions out.

`export_saved_model` writes `export_dir/<version>/` with two signatures:

* `serving_default` takes strings and tokenizes them in the graph
  (`BertPreprocessor`: tensorflow-text ops that stock TF Serving ships);
* `serve_tokenized` takes int32 `input_ids`, `input_mask`, `segment_ids`
  [batch, length] (length up to the model's max_position_embeddings) for
  clients that tokenize themselves.

Outputs per model:

==================  ===========================  =================================
model               serving_default inputs       outputs (both signatures)
==================  ===========================  =================================
`BertClassifier`    `text_a` (+ `text_b`)        `probabilities` [B, C], `label_ids`
                                                 [B] int32, `labels` [B] string;
                                                 regression (1 label): `predictions`
`BertSpanLabeler`   `question`, `context`        `start_logits`, `end_logits` [B, L];
                                                 raw text only: `answer_text`,
                                                 `answer_start`, `answer_end`,
                                                 `answer_score`, `token_start`,
                                                 `token_end`
`BertEncoder`       `text_a` (+ `text_b`)        `pooled_output` [B, H],
                                                 `sequence_output` [B, L, H]
`BertTokenClassi-   `text`                       `logits`, `tag_ids`, `tags` [B, L];
fier` (tagger)                                   raw text only: `token_start`,
                                                 `token_end`, `entity_type`,
                                                 `entity_text`, `entity_start`,
                                                 `entity_end`, `entity_score`,
                                                 `num_entities` (see
                                                 `bert_tf.tagger_serving`)
==================  ===========================  =================================

Span answers: the question is cut to `max_query_length` tokens and the context
fills the rest of one `seq_length` window (as the original's first window;
longer contexts are cut — send a context per window to cover them). The best
span maximises `start_logit + end_logit` over context tokens with
`start <= end < start + max_answer_length`. `answer_start`/`answer_end` are
the byte offsets (end exclusive) of that span in the UTF-8 context, and
`answer_text` is those bytes; `token_start`/`token_end` [B, L] give every
position's byte span in the context (-1 outside the context), so a client can
run its own search over the logits. Offsets are word- or punctuation-level:
a word whose normalisation changes its length in bytes (accents with
lower-casing) maps back as a whole. They index the context after invalid UTF-8
bytes and NUL characters are dropped (the text itself for ordinary input).

The version directory is written under a temporary name and renamed, so a
model server that polls `export_dir` never sees half a model. It also holds
`assets.extra/tf_serving_warmup_requests` (one request per signature, replayed
by the server before it serves), `assets.extra/bert_tf_export.json` (what was
exported, with labels and signature names) and `model.keras` (the Keras model,
for `keras.saving.load_model` after `import bert_tf`).
"""

import json
import os
import time
import uuid

import keras
import tensorflow as tf
from absl import logging

from bert_tf.models import BertClassifier
from bert_tf.models import BertEncoder
from bert_tf.models import BertSpanLabeler
from bert_tf.models import BertTokenClassifier
from bert_tf.models.bert_encoder import ENCODER_INPUT_NAMES
from bert_tf.preprocessing import BertPreprocessor
from bert_tf.preprocessing import repair_utf8
from bert_tf.preprocessing import take_prefix
from bert_tf.tagger_serving import TaggerSignatures

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
METADATA_FILE = os.path.join("assets.extra", "bert_tf_export.json")
KERAS_FILE = "model.keras"
WARMUP_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "BERT reads raw text inside the SavedModel.",
)


def export_saved_model(
    model,
    export_dir,
    vocab_file,
    do_lower_case,
    seq_length,
    label_list=None,
    text_pair=False,
    max_query_length=64,
    max_answer_length=30,
    tokenizer="bert",
    version=None,
    save_keras=True,
):
    """Exports `model` for TF Serving; returns the version directory.

    Args:
        model: a `BertClassifier`, `BertSpanLabeler`, `BertTokenClassifier`
            or `BertEncoder`.
        export_dir: the model's base directory (TF Serving's `model_base_path`).
        vocab_file, do_lower_case: the tokenization the model was trained with.
        seq_length: packed length of the raw-text signature.
        label_list: classifier: the label strings, in label-id order
            (default "0", "1", ...); tagger (required): its IOB2 tags.
        text_pair: classifier/encoder: whether `serving_default` takes
            `text_b` too.
        max_query_length, max_answer_length: span model only (the
            original's run_squad flags).
        tokenizer: "bert" (TF Serving >= 2.3) or "fast_bert" (>= 2.12).
        version: integer version; default: the current Unix time, or one
            more than the highest existing version if that is larger.
        save_keras: also write `model.keras` into the version directory.
    """
    preprocessor = BertPreprocessor(
        vocab_file, do_lower_case, seq_length, tokenizer=tokenizer, name="preprocessor"
    )
    if isinstance(model, BertTokenClassifier):
        module = TaggerSignatures(model, preprocessor, label_list)
        kind = "tagger"
    elif isinstance(model, BertClassifier):
        module = _ClassifierModule(model, preprocessor, label_list, text_pair)
        kind = "classifier"
    elif isinstance(model, BertSpanLabeler):
        module = _SpanModule(model, preprocessor, max_query_length, max_answer_length)
        kind = "span"
    elif isinstance(model, BertEncoder):
        module = _EncoderModule(model, preprocessor, text_pair)
        kind = "encoder"
    else:
        raise TypeError(
            "export_saved_model exports BertClassifier, BertSpanLabeler, "
            f"BertTokenClassifier or BertEncoder, got {type(model).__name__}"
        )
    config = model.config if kind == "encoder" else model.encoder.config
    if preprocessor.vocab_size > config.vocab_size:
        raise ValueError(
            f"{vocab_file} has {preprocessor.vocab_size} tokens but the model's "
            f"vocab_size is {config.vocab_size}: ids would run past the embeddings"
        )

    archive = keras.export.ExportArchive()
    archive.track(model)
    archive.track(preprocessor)
    serve_text, raw_inputs = module.text_endpoint()
    archive.add_endpoint("serving_default", serve_text, raw_inputs)
    token_inputs = [
        tf.TensorSpec([None, None], tf.int32, name) for name in ENCODER_INPUT_NAMES
    ]
    archive.add_endpoint("serve_tokenized", module.serve_tokenized, token_inputs)

    tf.io.gfile.makedirs(export_dir)
    version = _next_version(export_dir, version)
    final_dir = os.path.join(export_dir, str(version))
    temp_dir = os.path.join(export_dir, f".tmp-{version}-{uuid.uuid4().hex}")
    try:
        archive.write_out(temp_dir, verbose=False)
        warmup_inputs = {
            name: tf.constant(list(WARMUP_TEXTS)) for name in _names(raw_inputs)
        }
        tokenized = module.tokenize_for_warmup(warmup_inputs)
        write_warmup_requests(
            os.path.join(temp_dir, WARMUP_FILE),
            [("serving_default", warmup_inputs), ("serve_tokenized", tokenized)],
        )
        metadata = {
            "model": kind,
            "signatures": {
                "serving_default": _names(raw_inputs),
                "serve_tokenized": list(ENCODER_INPUT_NAMES),
            },
            "seq_length": seq_length,
            "do_lower_case": bool(do_lower_case),
            "tokenizer": tokenizer,
            "vocab_size": preprocessor.vocab_size,
        }
        if kind in ("classifier", "tagger"):
            metadata["labels"] = module.labels
        if kind == "span":
            metadata["max_query_length"] = max_query_length
            metadata["max_answer_length"] = max_answer_length
        with tf.io.gfile.GFile(os.path.join(temp_dir, METADATA_FILE), "w") as f:
            json.dump(metadata, f, indent=2)
        if save_keras:
            model.save(os.path.join(temp_dir, KERAS_FILE))
        tf.io.gfile.rename(temp_dir, final_dir)
    finally:
        if tf.io.gfile.exists(temp_dir):
            tf.io.gfile.rmtree(temp_dir)
    logging.info("Exported the %s SavedModel to %s", kind, final_dir)
    return final_dir


class _TextModule:
    """serving_default over text_a (and text_b); serve_tokenized over ids.
    Subclasses turn the model's outputs into the signature's (`_outputs`)."""

    def __init__(self, model, preprocessor, text_pair):
        self.model = model
        self.preprocessor = preprocessor
        self.text_pair = text_pair

    def text_endpoint(self):
        """The raw-text function and its input specs."""
        names = ("text_a", "text_b") if self.text_pair else ("text_a",)
        specs = [tf.TensorSpec([None], tf.string, name) for name in names]
        if self.text_pair:

            def serve_text(text_a, text_b):
                return self._outputs(self.preprocessor((text_a, text_b)))

        else:

            def serve_text(text_a):
                return self._outputs(self.preprocessor(text_a))

        return serve_text, specs

    def tokenize_for_warmup(self, inputs):
        texts = tuple(inputs[name] for name in sorted(inputs))
        return self.preprocessor(texts if self.text_pair else texts[0])

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        return self._outputs(_model_inputs(input_ids, input_mask, segment_ids))


class _ClassifierModule(_TextModule):
    def __init__(self, model, preprocessor, label_list, text_pair):
        super().__init__(model, preprocessor, text_pair)
        self.regression = model.num_labels == 1
        if label_list is None:
            label_list = [str(i) for i in range(model.num_labels)]
        self.labels = [str(label) for label in label_list]
        if not self.regression and len(self.labels) != model.num_labels:
            raise ValueError(
                f"label_list has {len(self.labels)} labels but the classifier has "
                f"{model.num_labels} outputs"
            )

    def _outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if self.regression:
            return {"predictions": logits[:, 0]}
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_ids": label_ids,
            "labels": tf.gather(tf.constant(self.labels), label_ids),
        }


class _EncoderModule(_TextModule):
    def _outputs(self, inputs):
        outputs = self.model(inputs, training=False)
        return {
            "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
            "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
        }


class _SpanModule:
    def __init__(self, model, preprocessor, max_query_length, max_answer_length):
        self.model = model
        self.preprocessor = preprocessor
        self.max_query_length = max_query_length
        self.max_answer_length = max_answer_length
        if max_query_length > preprocessor.seq_length - 3:
            raise ValueError(
                f"max_query_length={max_query_length} leaves no room for the context "
                f"in seq_length={preprocessor.seq_length}"
            )

    def text_endpoint(self):
        specs = [tf.TensorSpec([None], tf.string, n) for n in ("question", "context")]
        return self.serve_text, specs

    def _pack(self, question, context):
        """As the original's first window: the question cut to
        max_query_length, then as much context as fits."""
        seq_length = self.preprocessor.seq_length
        question_ids = self.preprocessor.tokenize(question)
        context_ids, starts, ends = self.preprocessor.tokenize_with_offsets(context)
        question_length = tf.minimum(question_ids.row_lengths(), self.max_query_length)
        context_length = tf.minimum(
            context_ids.row_lengths(), seq_length - 3 - question_length
        )
        inputs = self.preprocessor.pack(
            [question_ids, context_ids], lengths=[question_length, context_length]
        )
        # Byte spans per position: -1 outside the context.
        first = question_length + 2

        def at_positions(values):
            kept = take_prefix(values, context_length)
            lead = tf.RaggedTensor.from_row_lengths(
                tf.fill([tf.reduce_sum(first)], tf.constant(-1, tf.int64)), first
            )
            return tf.concat([lead, kept], axis=1).to_tensor(
                -1, shape=[None, seq_length]
            )

        return inputs, at_positions(starts), at_positions(ends)

    def tokenize_for_warmup(self, inputs):
        return self._pack(inputs["question"], inputs["context"])[0]

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        outputs = self.model(
            _model_inputs(input_ids, input_mask, segment_ids), training=False
        )
        return {name: tf.cast(outputs[name], tf.float32) for name in outputs}

    def serve_text(self, question, context):
        # Offsets index the repaired context, which the answer is cut from.
        context = repair_utf8(context)
        inputs, token_start, token_end = self._pack(question, context)
        outputs = self.model(inputs, training=False)
        start_logits = tf.cast(outputs["start_logits"], tf.float32)
        end_logits = tf.cast(outputs["end_logits"], tf.float32)
        # Best span over context positions with start <= end < start + max.
        in_context = token_start >= 0
        scores = start_logits[:, :, None] + end_logits[:, None, :]
        seq_length = self.preprocessor.seq_length
        band = tf.linalg.band_part(
            tf.ones([seq_length, seq_length], tf.bool), 0, self.max_answer_length - 1
        )
        valid = band[None] & in_context[:, :, None] & in_context[:, None, :]
        scores = tf.where(valid, scores, float("-inf"))
        flat = tf.reshape(scores, [-1, seq_length * seq_length])
        best = tf.argmax(flat, axis=-1, output_type=tf.int32)
        start = best // seq_length
        end = best % seq_length
        found = tf.reduce_any(valid, axis=[1, 2])
        answer_start = tf.where(found, tf.gather(token_start, start, batch_dims=1), 0)
        answer_end = tf.where(found, tf.gather(token_end, end, batch_dims=1), 0)
        answer_text = tf.strings.substr(
            context, answer_start, answer_end - answer_start, unit="BYTE"
        )
        return {
            "start_logits": start_logits,
            "end_logits": end_logits,
            "answer_text": answer_text,
            "answer_start": answer_start,
            "answer_end": answer_end,
            "answer_score": tf.where(
                found, tf.reduce_max(flat, axis=-1), float("-inf")
            ),
            "token_start": token_start,
            "token_end": token_end,
        }


def _model_inputs(input_ids, input_mask, segment_ids):
    return {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
    }


def _names(specs):
    return [spec.name for spec in specs]


def _next_version(export_dir, version):
    existing = [
        int(name)
        for name in tf.io.gfile.listdir(export_dir)
        if name.strip("/").isdigit()
    ]
    if version is None:
        version = max([int(time.time()), *(v + 1 for v in existing)])
    version = int(version)
    if version in existing:
        raise FileExistsError(
            f"{os.path.join(export_dir, str(version))} already exists"
        )
    return version


# --- warmup requests ---------------------------------------------------------
# TF Serving replays assets.extra/tf_serving_warmup_requests, a TFRecord file of
# tensorflow.serving.PredictionLog protos. Their field numbers
# (tensorflow_serving/apis/prediction_log.proto, predict.proto, model.proto)
# are encoded here so that exporting needs no tensorflow-serving-api package:
#   PredictionLog.predict_log = 6, PredictLog.request = 1,
#   PredictRequest.model_spec = 1, PredictRequest.inputs = 2 (map: key 1,
#   value 2, a tensorflow.TensorProto), ModelSpec.signature_name = 3.


def predict_request_log(signature_name, inputs):
    """Serialized PredictionLog holding a PredictRequest for `inputs`."""
    request = _field(1, _field(3, signature_name.encode("utf-8")))
    for name in sorted(inputs):
        tensor = tf.make_tensor_proto(inputs[name]).SerializeToString()
        request += _field(2, _field(1, name.encode("utf-8")) + _field(2, tensor))
    return _field(6, _field(1, request))


def write_warmup_requests(path, requests):
    """Writes (signature_name, inputs) pairs as a TF Serving warmup file."""
    tf.io.gfile.makedirs(os.path.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for signature_name, inputs in requests:
            values = {
                k: v.numpy() if hasattr(v, "numpy") else v for k, v in inputs.items()
            }
            writer.write(predict_request_log(signature_name, values))


def _field(number, payload):
    """A length-delimited protobuf field (wire type 2)."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)
