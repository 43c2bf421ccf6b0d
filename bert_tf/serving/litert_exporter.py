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

from bert_tf.serving.classifier_signatures import ClassifierSignatures
from bert_tf.serving.encoder_signatures import EncoderSignatures
from bert_tf.serving.families import FAMILIES
from bert_tf.serving.families import QUANTIZATIONS
from bert_tf.serving.litert_preprocessor import LiteRTPreprocessor
from bert_tf.serving.registry import resolve
from bert_tf.text import tokenization
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
    "splits on differently: see README.md, 'LiteRT' (rare symbols and "
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
):
    """Writes `model` as a LiteRT file at `path` that takes raw text.

    Args:
        model: a `BertClassifier`, `BertTokenClassifier`, `BertSpanLabeler`,
            `BertSentenceEncoder` or `BertEncoder`.
        path: the `.tflite` file to write (replaced atomically).
        vocab_file, do_lower_case: the tokenization the model was trained with.
        seq_length: the longest packed input (the span model's window).
        label_list: classifier: label strings in id order (default "0",
            "1", ...); tagger (required): its IOB2 tags.
        text_pair: classifier/encoder: `serving_default` takes `text_b` too.
        max_query_length: span: question word pieces kept.
        quantization: one of `QUANTIZATIONS`.
        extra_metadata: more JSON-able entries for the file's metadata.

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
    kind, module_class = litert_family(type(model))
    options = {
        "label_list": label_list,
        "text_pair": text_pair,
        "max_query_length": max_query_length,
    }
    accepted = inspect.signature(module_class).parameters
    module = module_class(
        model, preprocessor, **{k: v for k, v in options.items() if k in accepted}
    )
    config = model.config if kind == "encoder" else model.encoder.config
    if preprocessor.vocab_size > config.vocab_size:
        raise ValueError(
            f"{vocab_file} has {preprocessor.vocab_size} tokens but the model's "
            f"vocab_size is {config.vocab_size}: ids would run past the embeddings"
        )
    if seq_length > config.max_position_embeddings:
        raise ValueError(
            f"seq_length={seq_length} is longer than the model's "
            f"max_position_embeddings ({config.max_position_embeddings})"
        )
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
    """`(family name, LiteRT module class)` of `model_class`: the entry of
    its nearest base in `bert_tf.serving.families.FAMILIES`."""
    exported = {
        resolve(family.model_class): family
        for family in FAMILIES
        if family.litert_signatures
    }
    for cls in model_class.__mro__:
        if cls in exported:
            family = exported[cls]
            return family.name, resolve(family.litert_signatures)
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


class _Module(tf.Module):
    """One model's signatures; subclasses define the raw-text one."""

    def __init__(self, model, preprocessor):
        super().__init__()
        self.model = model
        self.preprocessor = preprocessor
        # The converter saves this module as a SavedModel and imports it.
        self.weights = model_weights(model)

    def metadata(self):
        return {}

    def extra_signatures(self):
        """{name: (function, input specs)} beyond the two every file has."""
        return {}

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        inputs = {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
        }
        return self._outputs(inputs)


class _TextModule(_Module):
    def __init__(self, model, preprocessor, text_pair):
        super().__init__(model, preprocessor)
        self.text_pair = bool(text_pair)

    def text_specs(self):
        names = ("text_a", "text_b") if self.text_pair else ("text_a",)
        return [tf.TensorSpec([None], tf.string, name) for name in names]

    def serve_text(self, *texts):
        return self._outputs(self.preprocessor.pack_texts(texts))

    def metadata(self):
        return {"text_pair": self.text_pair}


class ClassifierModule(_TextModule):
    def __init__(self, model, preprocessor, text_pair, label_list):
        super().__init__(model, preprocessor, text_pair)
        # The SavedModel family's outputs and labels: one class for both.
        self.signatures = ClassifierSignatures(model, None, label_list, text_pair)

    def metadata(self):
        signatures = self.signatures
        labels = None if signatures.regression else signatures.labels
        return {**super().metadata(), "labels": labels}

    def _outputs(self, inputs):
        return self.signatures.outputs(inputs)


class EncoderModule(_TextModule):
    def _outputs(self, inputs):
        return EncoderSignatures(self.model, None).outputs(inputs)


class EmbeddingModule(_Module):
    def text_specs(self):
        return [tf.TensorSpec([None], tf.string, "text")]

    def metadata(self):
        return {"embedding_dim": int(self.model.embedding_dim)}

    def __init__(self, model, preprocessor):
        super().__init__(model, preprocessor)
        self.prompt = model.resolve_prompt()
        self.prompt_ids = []
        if self.prompt:
            # LiteRT has no StringJoin: the prompt's word pieces go before the
            # text's, which equals tokenizing the joined string when the
            # prompt ends at a word boundary.
            last = self.prompt[-1]
            tokenizer = tokenization.FullTokenizer(
                preprocessor.vocab_file, preprocessor.do_lower_case
            )
            if not (last.isspace() or tokenization._is_punctuation(last)):
                raise ValueError(
                    f"the model's default prompt {self.prompt!r} does not end with a "
                    "space or punctuation: the LiteRT export cannot prepend it "
                    "(export a SavedModel)"
                )
            self.prompt_ids = tokenizer.convert_tokens_to_ids(
                tokenizer.tokenize(self.prompt)
            )

    def extra_signatures(self):
        if self.prompt_ids:
            # serve_tokenized pools every position: a prompt left out of
            # pooling needs serving_default.
            return {}
        return {"tokenize": (self.tokenize, self.text_specs())}

    def tokenize(self, text):
        """`serve_tokenized`'s inputs of `text`, padded to the longest row:
        `LiteRTModel.encode` sorts by their lengths, so that no batch pads
        past its longest sentence (sorting by characters padded STS-B's
        sentences by 36 %)."""
        ids, lengths, _, _ = self.preprocessor.tokenize(text)
        return self.preprocessor.pack([(ids, lengths)])[0]

    def serve_text(self, text):
        ids, lengths, _, _ = self.preprocessor.tokenize(text)
        if self.prompt_ids:
            prompt = tf.constant(self.prompt_ids, tf.int64)
            rows = tf.shape(ids)[0]
            ids = tf.concat([tf.tile(prompt[tf.newaxis, :], [rows, 1]), ids], axis=1)
            lengths = lengths + len(self.prompt_ids)
        inputs = self.preprocessor.pack([(ids, lengths)])[0]
        return self._outputs(inputs, self.model.prompt_length(self.prompt))

    def _outputs(self, inputs, prompt_length=0):
        # The model's Dense, Normalize and truncate_dim, as `encode`.
        return {"embeddings": self.model.embed_inputs(inputs, prompt_length)}


class TaggerModule(_Module):
    def __init__(self, model, preprocessor, label_list):
        super().__init__(model, preprocessor)
        if label_list is None or len(label_list) != model.num_labels:
            raise ValueError(
                f"a tagger export needs its {model.num_labels} IOB2 tags in label "
                f"order (label_list), got {label_list!r}"
            )
        self.labels = [str(label) for label in label_list]
        # Index num_labels is "": the tag of positions that start no word.
        self._tag_names = tf.constant([*self.labels, ""])
        self._continuation = tf.constant(preprocessor.continuation)

    def text_specs(self):
        return [tf.TensorSpec([None], tf.string, "text")]

    def metadata(self):
        crf = self.model.crf
        decoding = "argmax"
        if crf is not None:
            decoding = "viterbi_iob2" if crf.iob2_labels else "viterbi"
        return {"labels": self.labels, "decoding": decoding}

    def serve_text(self, text):
        ids, lengths, starts, ends = self.preprocessor.tokenize(text)
        inputs, token_index, _ = self.preprocessor.pack([(ids, lengths)])
        in_text = token_index >= 0
        index = tf.maximum(token_index, 0)

        def at_positions(values):
            return tf.where(
                in_text,
                tf.gather(values, index, batch_dims=1),
                tf.constant(-1, tf.int64),
            )

        word_start = in_text & ~tf.gather(self._continuation, inputs["input_ids"])
        return {
            **self._tags(inputs, word_start),
            "token_start": at_positions(starts),
            "token_end": at_positions(ends),
        }

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        inputs = {
            "input_ids": input_ids,
            "input_mask": input_mask,
            "segment_ids": segment_ids,
        }
        special = (input_ids == self.preprocessor.cls_id) | (
            input_ids == self.preprocessor.sep_id
        )
        word_start = (
            (input_mask > 0) & ~special & ~tf.gather(self._continuation, input_ids)
        )
        return self._tags(inputs, word_start)

    def _tags(self, inputs, word_start):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        if self.model.crf is not None:
            # Viterbi over the words, as run_ner.py trains the chain.
            viterbi = self.model.crf.decode_in_place(logits, word_start)
            tag_ids = tf.where(word_start, viterbi, tag_ids)
        # A gather of a string table, not a string select (no LiteRT kernel).
        none = tf.fill(tf.shape(tag_ids), len(self.labels))
        tags = tf.gather(self._tag_names, tf.where(word_start, tag_ids, none))
        return {"logits": logits, "tag_ids": tag_ids, "tags": tags}


class SpanModule(_Module):
    def __init__(self, model, preprocessor, max_query_length):
        super().__init__(model, preprocessor)
        self.max_query_length = int(max_query_length)
        if not 0 < self.max_query_length < preprocessor.seq_length - 3:
            raise ValueError(
                f"max_query_length={max_query_length} leaves no room for the "
                f"context in seq_length={preprocessor.seq_length}"
            )

    def text_specs(self):
        return [tf.TensorSpec([None], tf.string, n) for n in ("question", "context")]

    def metadata(self):
        return {"max_query_length": self.max_query_length}

    def serve_text(self, question, context):
        query_ids, query_lengths, _, _ = self.preprocessor.tokenize(question)
        ids, lengths, starts, ends = self.preprocessor.tokenize(context)
        # As run_squad.py: the question cut to max_query_length, the context
        # fills the rest of the window (this export scores its first window).
        kept_query = tf.minimum(query_lengths, self.max_query_length)
        kept_context = tf.minimum(
            lengths, self.preprocessor.seq_length - 3 - kept_query
        )
        inputs, token_index, segment = self.preprocessor.pack(
            [(query_ids, query_lengths), (ids, lengths)], [kept_query, kept_context]
        )
        in_context = (token_index >= 0) & (segment == 1)
        index = tf.maximum(token_index, 0)

        def at_positions(values):
            return tf.where(
                in_context,
                tf.gather(values, index, batch_dims=1),
                tf.constant(-1, tf.int64),
            )

        return {
            **self._outputs(inputs),
            "token_start": at_positions(starts),
            "token_end": at_positions(ends),
        }

    def _outputs(self, inputs):
        outputs = self.model(inputs, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in outputs}
