"""LiteRT (TFLite) models that take raw text: one `.tflite` file, tokenizer inside.

`export_litert` writes a file with two signatures:

* `serving_default` takes strings, tokenized in the graph by
  `LiteRTPreprocessor` (tensorflow-text's fast BERT tokenizer, whose LiteRT
  kernels `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS` registers);
* `serve_tokenized` takes int32 `input_ids`, `input_mask`, `segment_ids`;
* embedding files (without a default prompt) also have `tokenize`: `text`
  in, `serve_tokenized`'s inputs out (what `LiteRTModel.encode` sorts by).

==================  ======================  ====================================
model               serving_default inputs  outputs
==================  ======================  ====================================
`BertClassifier`    `text_a` (+ `text_b`)   `probabilities` [B, C], `label_ids`
                                            [B] int32, `labels` [B] string;
                                            regression: `predictions` [B]
`BertEncoder`       `text_a` (+ `text_b`)   `pooled_output` [B, H],
                                            `sequence_output` [B, L, H]
`BertTokenClassi-   `text`                  `logits` [B, L, T], `tag_ids`,
fier` (tagger)                              `tags` (at word starts, "" elsewhere),
                                            `token_start`, `token_end` [B, L];
                                            CRF taggers: Viterbi tags over the
                                            words (`CRF.decode_in_place`)
`BertSentence-      `text`                  `embeddings` [B, D] (the cosine of
Encoder`                                    two texts: their unit vectors' dot)
`BertSpanLabeler`   `question`, `context`   `start_logits`, `end_logits` [B, L],
                                            `token_start`, `token_end` [B, L]
                                            (byte offsets in the context, -1
                                            outside it): one window per row
`BertReranker`      `query`, `passage`      `scores` [B] (the activation of the
                                            logit, as `CrossEncoder.predict`),
                                            `logits` [B]: one pair per row
`BertSparse-        `text` (+ `document`)   `token_ids`, `weights` [B, k] (top
Encoder`                                    `top_k`), `num_nonzero` [B]
==================  ======================  ====================================

The SavedModel export's outputs, minus what needs string or ragged ops LiteRT
lacks: the tagger's entities and the span model's whole-document answer
search are computed from these outputs outside the file (the tagger's
entities by `bert_tf.serving.litert_model.LiteRTModel.entities`).
Each request is padded to its longest row (never past `seq_length`).

Quantization: "dynamic_int8" (default; int8 weights, int8 matrix products
with activations quantized on the fly: the fastest on CPUs), "float16"
(float16 weights, float32 compute) or "none". The file's metadata entry
`bert_tf_export` holds the labels and how the model was exported (JSON).
"""

import inspect
import json
import os
import tempfile

import tensorflow as tf
from absl import logging

from bert_tf.serving.families import FAMILIES
from bert_tf.serving.families import QUANTIZATIONS
from bert_tf.serving.litert_preprocessor import LiteRTPreprocessor
from bert_tf.serving.registry import resolve
from bert_tf.serving.span_options import SpanOptions
from bert_tf.text.input_schema import ENCODER_INPUT_NAMES

METADATA_NAME = "bert_tf_export"
# The custom ops `LiteRTPreprocessor` converts to, whose kernels
# tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS registers.
TFTEXT_KERNELS = (
    "FastBertNormalize",
    "FastWordpieceTokenizeWithOffsets",
    "RaggedTensorToTensor",
)
# Where tensorflow-text's fast BERT tokenizer does not give the original
# FullTokenizer's ids (measured by tests/test_litert.py on the GLUE, SQuAD
# and WNUT sentences and the Unicode torture strings). The export logs them.
TOKENIZER_DIFFERENCES = (
    "Characters outside the Unicode 'Cc'/'Cf' sets that the original drops or "
    "splits on differently: see docs/guides/litert.md (rare symbols and "
    "unassigned code points).",
)


def export_litert(
    model,
    path,
    vocab_file,
    do_lower_case,
    seq_length,
    label_list=None,
    text_pair=False,
    max_query_length=64,
    quantization="dynamic_int8",
    extra_metadata=None,
    strip_accents=None,
    tokenize_chinese_chars=None,
    span_options=None,
    trained_labels=None,
    top_k=None,
):
    """Writes `model` as a LiteRT file at `path` that takes raw text.

    Args:
        model: a `BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`,
            `BertSentenceEncoder`, `BertEncoder` or `BertReranker`.
        path: the `.tflite` file to write (replaced atomically).
        vocab_file, do_lower_case: the tokenization the model was trained with.
        seq_length: the longest packed input (the span model's window).
        label_list: classifier: label strings in id order (default "0",
            "1", ...); tagger (required): its IOB2 tags.
        text_pair: classifier/encoder: `serving_default` takes `text_b` too.
        max_query_length: span: question word pieces kept.
        span_options: span: a `SpanOptions` (its max_query_length), instead.
        quantization: one of `QUANTIZATIONS`.
        extra_metadata: more JSON-able entries for the file's metadata.
        trained_labels: classifier: the labels it was trained with, when
            `label_list` renames them (recorded in the metadata).
        top_k: sparse encoder: vocabulary entries returned per text.

    Returns: the metadata stored in the file (a dict).

    Example:
    >>> export_litert(classifier, "/tmp/mrpc.tflite", "vocab.txt", True, 128,
    ...               label_list=["0", "1"], text_pair=True)
    """
    if quantization not in QUANTIZATIONS:
        raise ValueError(
            f"quantization must be one of {QUANTIZATIONS}, got {quantization!r}"
        )
    preprocessor = LiteRTPreprocessor(
        vocab_file,
        do_lower_case,
        seq_length,
        strip_accents=strip_accents,
        tokenize_chinese_chars=tokenize_chinese_chars,
    )
    kind, signatures_class = litert_family(type(model))
    options = {
        "label_list": label_list,
        "trained_labels": trained_labels,
        "text_pair": text_pair,
        "span_options": span_options or SpanOptions(max_query_length=max_query_length),
        "top_k": top_k,
    }
    accepted = inspect.signature(signatures_class).parameters
    module = LiteRTSignatures(
        signatures_class(
            model, preprocessor, **{k: v for k, v in options.items() if k in accepted}
        )
    )
    module.signatures.check_fits_model(vocab_file, seq_length)
    metadata = {
        "model": kind,
        "signatures": {
            "serving_default": [spec.name for spec in module.text_specs()],
            "serve_tokenized": list(ENCODER_INPUT_NAMES),
            **{
                name: [spec.name for spec in specs]
                for name, (_, specs) in module.extra_signatures().items()
            },
        },
        "seq_length": int(seq_length),
        "do_lower_case": bool(do_lower_case),
        "quantization": quantization,
        "vocab_size": preprocessor.vocab_size,
        "tokenizer": "fast_bert",
        **module.metadata(),
        **(extra_metadata or {}),
    }
    blob = convert(module, quantization)
    blob = with_metadata(blob, {METADATA_NAME: json.dumps(metadata).encode()})
    write_atomically(path, blob)
    logging.info(
        "Exported the %s LiteRT model (%s, %.1f MB) to %s",
        kind,
        quantization,
        len(blob) / 1e6,
        path,
    )
    for difference in TOKENIZER_DIFFERENCES:
        logging.info("LiteRT tokenizer vs the original FullTokenizer: %s", difference)
    return metadata


def litert_family(model_class):
    """`(family name, SignatureModule class)` of `model_class`: the entry of
    its nearest base among the LiteRT families of
    `bert_tf.serving.families.FAMILIES`."""
    exported = {
        resolve(family.model_class): family for family in FAMILIES if family.litert
    }
    for cls in model_class.__mro__:
        if cls in exported:
            family = exported[cls]
            return family.name, resolve(family.signatures)
    names = [cls.__name__ for cls in exported]
    raise TypeError(
        f"export_litert exports {', '.join(names[:-1])} or {names[-1]}, got "
        f"{model_class.__name__}"
    )


def convert(module, quantization):
    """The flatbuffer of `module`'s signatures (the two of every family and
    its `extra_signatures`)."""
    text_fn = tf.function(module.serve_text, input_signature=module.text_specs())
    token_specs = [
        tf.TensorSpec([None, None], tf.int32, name) for name in ENCODER_INPUT_NAMES
    ]
    tokens_fn = tf.function(module.serve_tokenized, input_signature=token_specs)
    functions = {
        "serving_default": text_fn.get_concrete_function(),
        "serve_tokenized": tokens_fn.get_concrete_function(),
    }
    for name, (function, specs) in module.extra_signatures().items():
        functions[name] = tf.function(
            function, input_signature=specs
        ).get_concrete_function()
    converter = tf.lite.TFLiteConverter.from_concrete_functions(
        list(functions.values()), module
    )
    # Builtins plus tensorflow-text's kernels (custom ops): no TensorFlow
    # (Flex) ops, so the file runs with ai-edge-litert alone.
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    blob = convert_quantized(converter, quantization)
    # With several functions the converter names each signature after its
    # graph; give them the SavedModel's names.
    renames = {fn.graph.name: name for name, fn in functions.items()}
    blob = _edit_model(blob, signature_names=renames)
    check_ops(blob)
    return blob


def convert_quantized(converter, quantization):
    """`converter.convert()` with the weights of `quantization`."""
    if quantization != "none":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if quantization == "float16":
        converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def write_atomically(path, blob):
    """Writes `blob` to `path` through a temporary file beside it (a reader
    never sees half a file)."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=directory, suffix=".tmp", delete=False) as f:
        f.write(blob)
    # NamedTemporaryFile makes its file 0600; the file gets the mode every
    # other output has (0666 less the umask, 0644 by default).
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(f.name, 0o666 & ~umask)
    os.replace(f.name, path)


def check_ops(blob, custom_ops=TFTEXT_KERNELS):
    """Raises if `blob` would not run with LiteRT's builtins and
    `custom_ops`: ops converted as unknown custom ops (no kernel at run
    time), or weights left as variables (uninitialized at run time)."""
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    op = schema.BuiltinOperator
    variable_ops = {
        op.VAR_HANDLE: "VAR_HANDLE",
        op.READ_VARIABLE: "READ_VARIABLE",
        op.ASSIGN_VARIABLE: "ASSIGN_VARIABLE",
    }
    model = flatbuffer_utils.read_model_from_bytearray(bytearray(blob))
    variables, unknown = set(), set()
    for code in model.operatorCodes:
        # Codes past 127 live in builtinCode only.
        builtin = max(code.builtinCode, code.deprecatedBuiltinCode)
        if builtin in variable_ops:
            variables.add(variable_ops[builtin])
        elif code.customCode:
            name = code.customCode
            name = name.decode() if isinstance(name, bytes) else name
            if name not in custom_ops:
                unknown.add(name)
    if variables:
        raise RuntimeError(
            f"the LiteRT model still reads its weights from variables "
            f"({', '.join(sorted(variables))}): they would be uninitialized at run time"
        )
    if unknown:
        raise RuntimeError(
            f"the LiteRT model needs ops that neither LiteRT nor tensorflow-text "
            f"provides: {', '.join(sorted(unknown))}"
        )


def with_metadata(blob, entries):
    """`blob` (a .tflite flatbuffer) with `entries` {name: bytes} added to
    its metadata (readable by `bert_tf.serving.litert_model.read_metadata`)."""
    return _edit_model(blob, metadata=entries)


def _edit_model(blob, signature_names=None, metadata=None):
    from tensorflow.lite.python import schema_py_generated as schema
    from tensorflow.lite.tools import flatbuffer_utils

    model = flatbuffer_utils.read_model_from_bytearray(bytearray(blob))
    for signature in model.signatureDefs or []:
        key = signature.signatureKey
        key = key.decode() if isinstance(key, bytes) else key
        if signature_names and key in signature_names:
            signature.signatureKey = signature_names[key]
    for name, data in (metadata or {}).items():
        buffer = schema.BufferT()
        buffer.data = list(data)
        model.buffers.append(buffer)
        entry = schema.MetadataT()
        entry.name = name
        entry.buffer = len(model.buffers) - 1
        model.metadata = [*(model.metadata or []), entry]
    return flatbuffer_utils.convert_object_to_bytearray(model)


def model_weights(model):
    """The tf.Variables under `model`'s Keras variables: tracked by a
    tf.Module, they are SavedModel variables, which the LiteRT converter
    folds into constants (Keras 3 variables save as user objects, which
    its importer leaves as uninitialized resource variables: NaN outputs)."""
    return [weight.value for weight in model.weights]


class LiteRTSignatures(tf.Module):
    """A family's `SignatureModule` as the tf.Module the converter reads:
    `serve_text` is the family's `litert_text_endpoint` (over a
    `LiteRTPreprocessor`), `serve_tokenized` its own.

    Args:
        signatures: the family's `SignatureModule`, built over the model and
            a `LiteRTPreprocessor`.

    Example:
    >>> LiteRTSignatures(TaggerSignatures(model, LiteRTPreprocessor(vocab), tags))
    """

    def __init__(self, signatures):
        super().__init__()
        self.signatures = signatures
        # Tracked, so the converter's SavedModel holds the tokenizer and the
        # weights (`model_weights`).
        self.preprocessor = signatures.preprocessor
        self.weights = model_weights(signatures.model)
        self._serve_text, specs = signatures.litert_text_endpoint()
        self._text_specs = tuple(specs)

    def text_specs(self):
        return list(self._text_specs)

    def metadata(self):
        return self.signatures.litert_metadata()

    def extra_signatures(self):
        """{name: (function, input specs)} beyond the two every file has:
        the family's `litert_extra_signatures`, if it has any."""
        extra = getattr(self.signatures, "litert_extra_signatures", None)
        return extra() if extra is not None else {}

    def serve_text(self, *texts):
        return self._serve_text(*texts)

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        # A family whose SavedModel outputs need string ops has its own.
        serve = getattr(
            self.signatures, "litert_serve_tokenized", self.signatures.serve_tokenized
        )
        return serve(input_ids, input_mask, segment_ids)
