"""LiteRT files that MediaPipe Tasks runs unmodified: `TextEmbedder`, `TextClassifier`.

`export_mediapipe` (the `--target=mediapipe` of export_litert.py) writes one
`.tflite` file whose only subgraph takes MediaPipe's int32 `ids`, `mask`,
`segment_ids` [1, n] and whose metadata (`mediapipe_metadata`) carries the
BERT tokenizer with its vocabulary, so MediaPipe tokenizes in its own C++ on
Android, iOS, Web and desktop; the file has builtin ops only.

==================  =========================  ============================
model               MediaPipe task             output
==================  =========================  ============================
`BertSentence-      `TextEmbedder`             `embedding` [1, D]: pooling,
Encoder`                                       Dense and normalisation inside
                                               (the sentence vector)
`BertClassifier`    `TextClassifier`           `probabilities` [1, C], the
(one text)                                     labels file in the metadata
==================  =========================  ============================

Inputs are dynamic ([1, -1]): MediaPipe then feeds [CLS] + every word piece
+ [SEP], unpadded, and the graph keeps [CLS], the first `seq_length` - 2
pieces and [SEP], the truncation of our other exports (MediaPipe's own
truncation, for static inputs, is the same, but pads every text to the full
length).

MediaPipe's tokenizer lower-cases ASCII only and keeps accents (unlike the
uncased BERT tokenizer, which lower-cases every letter and strips accents):
the file's vocabulary adds the accented and capital spellings of our entries
(`mediapipe_vocabulary`) and the graph maps each of its lines to our id
first (a constant GATHER), so MediaPipe's word pieces and ids are BERT's;
cased models cannot be served (MediaPipe lower-cases ASCII).
"""

import json
import os

import tensorflow as tf
from absl import logging

from bert_tf.models import BertClassifier
from bert_tf.models import BertSentenceEncoder
from bert_tf.serving import mediapipe_metadata
from bert_tf.serving.litert_exporter import METADATA_NAME
from bert_tf.serving.litert_exporter import QUANTIZATIONS
from bert_tf.serving.litert_exporter import check_ops
from bert_tf.serving.litert_exporter import convert_quantized
from bert_tf.serving.litert_exporter import model_weights
from bert_tf.serving.litert_exporter import with_metadata
from bert_tf.serving.litert_exporter import write_atomically
from bert_tf.serving.mediapipe_vocabulary import mediapipe_vocabulary
from bert_tf.text import tokenization


def export_mediapipe(
    model,
    path,
    vocab_file,
    do_lower_case,
    seq_length,
    label_list=None,
    quantization="dynamic_int8",
    strip_accents=None,
    trained_labels=None,
):
    """Writes `model` as a MediaPipe Tasks text model at `path`.

    Args:
        model: a `BertSentenceEncoder` (for `TextEmbedder`) or a one-text
            `BertClassifier` (for `TextClassifier`).
        path: the `.tflite` file to write (replaced atomically).
        vocab_file, do_lower_case: the tokenization the model was trained
            with (uncased only: MediaPipe lower-cases every text).
        seq_length: the longest input, [CLS] and [SEP] included.
        label_list: classifier: class names in id order (default "0", ...).
        trained_labels: classifier: the labels it was trained with, when
            `label_list` renames them (recorded in the metadata).
        quantization: one of `QUANTIZATIONS` ("dynamic_int8": int8 weights).
        strip_accents: whether the model's tokenizer strips accents (None:
            as `do_lower_case`, the original's rule).

    Returns: the bert_tf metadata stored in the file (a dict).

    Example:
    >>> export_mediapipe(sentence_encoder, "/tmp/minilm.tflite", "vocab.txt",
    ...                  True, 256)
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}"
        )
    if not do_lower_case:
        raise ValueError(
            "do_lower_case=False: MediaPipe's BERT tokenizer lower-cases every "
            "text, so only uncased models can be exported for it"
        )
    if isinstance(model, BertSentenceEncoder):
        prompt = model.prompts.get(model.default_prompt_name or "", "")
        if prompt:
            # MediaPipe tokenizes the text itself: the file cannot put the
            # prompt before it, and its vectors would not be encode's.
            raise ValueError(
                f"the model's default prompt {model.default_prompt_name!r} "
                f"({prompt!r}) cannot be applied by a MediaPipe TextEmbedder, "
                "which tokenizes the text it is given: --target=litert applies "
                "it (or prepend it to the texts on the device, from a model "
                "saved without a default prompt)"
            )
        kind, output_name, labels = "embedding", "embedding", None
        task, description = "TextEmbedder", "The sentence embedding of the text."
    elif isinstance(model, BertClassifier):
        if model.num_labels == 1:
            raise ValueError(
                "a regression classifier has no classes for MediaPipe's TextClassifier"
            )
        labels = [str(i) for i in range(model.num_labels)]
        # A BertTextClassifier carries its label names.
        label_list = label_list or getattr(model, "labels", None)
        if label_list is not None:
            labels = [str(label) for label in label_list]
        if len(labels) != model.num_labels:
            raise ValueError(
                f"label_list has {len(labels)} labels but the classifier has "
                f"{model.num_labels} outputs"
            )
        kind, output_name = "classifier", "probabilities"
        task, description = "TextClassifier", "Probabilities of the classes."
    else:
        raise TypeError(
            "export_mediapipe exports a BertSentenceEncoder (TextEmbedder) or a "
            f"BertClassifier (TextClassifier), got {type(model).__name__}"
        )
    encoder = model.encoder
    if seq_length > encoder.config.max_position_embeddings:
        raise ValueError(
            f"seq_length={seq_length} is longer than the model's "
            f"max_position_embeddings ({encoder.config.max_position_embeddings})"
        )
    if not 2 < seq_length:
        raise ValueError(f"seq_length={seq_length} leaves no room for a word piece")
    strip_accents = bool(do_lower_case if strip_accents is None else strip_accents)
    vocab_size = len(tokenization.load_vocab(vocab_file))
    if vocab_size > encoder.config.vocab_size:
        raise ValueError(
            f"{vocab_file} has {vocab_size} tokens but the model's vocab_size is "
            f"{encoder.config.vocab_size}: ids would run past the embeddings"
        )

    lines, remap = mediapipe_vocabulary(vocab_file, strip_accents)
    metadata = {
        "model": kind,
        "target": "mediapipe",
        "mediapipe_task": task,
        "seq_length": int(seq_length),
        "do_lower_case": True,
        "strip_accents": strip_accents,
        "quantization": quantization,
        "vocab_size": vocab_size,
        # Lines of the file's vocab.txt (ours plus other spellings).
        "mediapipe_vocab_size": len(lines),
        "labels": labels,
    }
    if trained_labels is not None and [str(x) for x in trained_labels] != labels:
        metadata["trained_labels"] = [str(x) for x in trained_labels]
    if kind == "embedding":
        metadata["embedding_dim"] = int(model.embedding_dim)
    write_mediapipe_file(
        _MediaPipeModule(model, kind, seq_length, remap),
        path,
        lines,
        metadata,
        output_name,
        description,
        labels=labels,
    )
    logging.info(
        "Exported the %s for MediaPipe's %s (%s, %.1f MB, vocabulary of %d "
        "spellings for %d entries) to %s",
        kind,
        task,
        quantization,
        os.path.getsize(path) / 1e6,
        len(lines),
        vocab_size,
        path,
    )
    return metadata


def write_mediapipe_file(
    module, path, lines, metadata, output_name, description, labels=None
):
    """Converts `module.serve` (int32 ids, mask, segment_ids [1, n] -> one
    float32 output) and writes it at `path` with MediaPipe's metadata.

    Args:
        module: a tf.Module whose `serve` reads MediaPipe's ids (lines of
            `lines`).
        path: the `.tflite` file to write (replaced atomically).
        lines: the vocabulary lines MediaPipe's tokenizer reads.
        metadata: bert_tf's metadata (a dict; its "model" names the file,
            its "quantization" is applied).
        output_name, description: the output's metadata name and text.
        labels: a classifier's class names, for `LABELS_FILE`.
    """
    blob, input_names = _convert(module, metadata["quantization"])
    files = {mediapipe_metadata.VOCAB_FILE: ("\n".join(lines) + "\n").encode()}
    if labels is not None:
        files[mediapipe_metadata.LABELS_FILE] = "\n".join(labels).encode()
    blob = with_metadata(
        blob,
        {
            METADATA_NAME: json.dumps(metadata).encode(),
            mediapipe_metadata.METADATA_FIELD_NAME: (
                mediapipe_metadata.metadata_flatbuffer(
                    input_names,
                    output_name,
                    f"bert_tf {metadata['model']}",
                    description,
                    labels=labels,
                )
            ),
        },
    )
    write_atomically(path, mediapipe_metadata.with_associated_files(blob, files))


def _convert(module, quantization):
    """The flatbuffer of `module.serve` (one subgraph, builtin ops only) and
    its input names in subgraph order (each one of `INPUT_NAMES`)."""
    from tensorflow.lite.tools import flatbuffer_utils

    specs = [
        tf.TensorSpec([1, None], tf.int32, name)
        for name in mediapipe_metadata.INPUT_NAMES
    ]
    function = tf.function(module.serve, input_signature=specs)
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        [function.get_concrete_function()], module
    )
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    blob = convert_quantized(converter, quantization)
    check_ops(blob, custom_ops=())
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(blob))
    (subgraph,) = model.subgraphs
    input_names = []
    for index in subgraph.inputs:
        name = subgraph.tensors[index].name
        name = name.decode() if isinstance(name, bytes) else name
        input_names.append(_input_name(name))
    return blob, input_names


def _input_name(tensor_name):
    """ "serving_default_segment_ids:0" -> "segment_ids"."""
    for prefix in ("serving_default_", ""):
        for name in mediapipe_metadata.INPUT_NAMES:
            if tensor_name in (prefix + name, f"{prefix}{name}:0"):
                return name
    raise RuntimeError(f"unexpected input tensor {tensor_name!r} in the LiteRT model")


class _MediaPipeModule(tf.Module):
    """The model on MediaPipe's inputs: one text, [CLS] pieces [SEP], unpadded."""

    def __init__(self, model, kind, seq_length, remap):
        super().__init__()
        # MediaPipe's ids are lines of the file's vocabulary: our id of each.
        # int16 while the ids fit (half the bytes of the largest constant
        # after the weights).
        dtype = tf.int16 if max(remap) < 2**15 else tf.int32
        self._remap = tf.constant(remap, dtype)
        # The model's call, not the model: tracking the model would track
        # its preprocessor's vocabulary table too, whose initializer would
        # become a second subgraph (MediaPipe takes one).
        self._call_model = model.__call__
        # What encode cuts its vectors to (a saved truncate_dim).
        self.truncate_dim = getattr(model, "truncate_dim", None)
        self.kind = kind
        self.seq_length = int(seq_length)
        # As litert_exporter: tf.Variables the converter folds into constants.
        self.weights = model_weights(model)

    def serve(self, ids, mask, segment_ids):
        # MediaPipe feeds every piece: keep the first seq_length - 1 positions
        # and the last ([SEP]), i.e. our truncation, [CLS] a b ... [SEP].
        ids = tf.cast(tf.gather(self._remap, ids), tf.int32)
        length = tf.shape(ids)[1]
        kept = tf.concat(
            [tf.range(tf.minimum(length, self.seq_length) - 1), [length - 1]], 0
        )
        inputs = {
            "input_ids": tf.gather(ids, kept, axis=1),
            "input_mask": tf.gather(mask, kept, axis=1),
            "segment_ids": tf.gather(segment_ids, kept, axis=1),
        }
        if self.kind == "embedding":
            vectors = tf.cast(self._call_model(inputs, training=False), tf.float32)
            if self.truncate_dim:
                vectors = vectors[:, : self.truncate_dim]
            return {"embedding": vectors}
        logits = self._call_model(inputs, training=False)
        # BertClassifier gives {"logits": ...}, BertTextClassifier the tensor.
        if isinstance(logits, dict):
            logits = logits["logits"]
        logits = tf.cast(logits, tf.float32)
        return {"probabilities": tf.nn.softmax(logits, axis=-1)}
