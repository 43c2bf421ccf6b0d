"""Serving: one signature module per model family, and the exporters.

* `SignatureModule` (signature_module.py): the declared interface of what a
  model family serves: the raw-text endpoint (`serving_default`), the
  tokenized endpoint (`serve_tokenized`), warmup requests and metadata.
* One implementation per family: `ClassifierSignatures`,
  `EncoderSignatures`, `EmbeddingSignatures`, `RerankerSignatures`,
  `RetrievalSignatures` (a `CorpusIndex`: query in, document ids out),
  `SpanSignatures` (with `DocumentAnswers` and `SpanOptions`), `TaggerSignatures`.
* registry.py: model class -> family; a new family adds one entry with
  `register(ModelClass, SignatureModuleClass)` (or a line in its table).
* `export_saved_model` (saved_model_exporter.py): the TF Serving SavedModel.
* `load_saved_model` (saved_model_loader.py): an export loaded in Python,
  tensorflow-text's ops registered first.
* `export_litert` (litert_exporter.py): one LiteRT (.tflite) file that takes
  raw text (tokenizer inside, int8 weights by default).

`import bert_tf.serving` does not import TensorFlow; the names below are
imported on first use (`SpanOptions` never needs it).

Example:
>>> from bert_tf import serving
>>> serving.register(MyReranker, "my_package.reranker_signatures:RerankerSignatures")
>>> serving.export_saved_model(model, "/models/mrpc", "vocab.txt", True, 128)
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "ClassifierSignatures": "bert_tf.serving.classifier_signatures",
    "DocumentAnswers": "bert_tf.serving.document_answers",
    "EmbeddingSignatures": "bert_tf.serving.embedding_signatures",
    "EncoderSignatures": "bert_tf.serving.encoder_signatures",
    "RerankerSignatures": "bert_tf.serving.reranker_signatures",
    "RetrievalSignatures": "bert_tf.serving.retrieval_signatures",
    "SignatureModule": "bert_tf.serving.signature_module",
    "SpanOptions": "bert_tf.serving.span_options",
    "SpanSignatures": "bert_tf.serving.span_signatures",
    "TaggerSignatures": "bert_tf.serving.tagger_signatures",
    "TextPairSignatures": "bert_tf.serving.text_pair_signatures",
    "export_litert": "bert_tf.serving.litert_exporter",
    "export_saved_model": "bert_tf.serving.saved_model_exporter",
    "load_saved_model": "bert_tf.serving.saved_model_loader",
    "register": "bert_tf.serving.registry",
    "registered": "bert_tf.serving.registry",
    "signature_module_class": "bert_tf.serving.registry",
    "signature_module_for": "bert_tf.serving.registry",
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())


def __dir__():
    return sorted([*globals(), *__all__])
