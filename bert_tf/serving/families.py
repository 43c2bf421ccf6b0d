"""The model families, one entry each: what a family is called, which model
class it serves, with which signatures, and which tool trains it.

Everything reads this table: the SavedModel exporter's registry
(`bert_tf.serving.registry`), the LiteRT exporter, the --model_type choices
of export_saved_model.py and export_litert.py (`MODEL_TYPES`,
`LITERT_MODEL_TYPES`) and `bert_tf.pipeline`'s check of what a run trained
(`SCRIPT_FAMILIES`). Classes are "module:Class" paths, imported when used:
this module imports no TensorFlow, so the options and --help can read it.

A new family is one `Family` line in `FAMILIES`.
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Family:
    """One model family.

    Args:
      name: the family's name: --model_type, and the "model" entry of an
        export's metadata.
      model_class: the model class it serves ("module:Class"; subclasses
        are served as their nearest registered base).
      signatures: its SavedModel `SignatureModule` ("module:Class"; None:
        not exported).
      litert_signatures: its LiteRT module ("module:Class"; None: no LiteRT
        export).
      script: the run_* tool whose run trains it (run_settings.json's
        "script"), or None.

    Example:

    ```python
    Family("classifier", "bert_tf.models.bert_classifier:BertClassifier",
           "bert_tf.serving.classifier_signatures:ClassifierSignatures")
    ```
    """

    name: str
    model_class: str
    signatures: str | None = None
    litert_signatures: str | None = None
    script: str | None = None


_LITERT = "bert_tf.serving.litert_exporter"

# In the order export_saved_model.py --help lists them.
FAMILIES = (
    Family(
        "classifier",
        "bert_tf.models.bert_classifier:BertClassifier",
        "bert_tf.serving.classifier_signatures:ClassifierSignatures",
        f"{_LITERT}:ClassifierModule",
        "run_classifier",
    ),
    Family(
        "span",
        "bert_tf.models.bert_span_labeler:BertSpanLabeler",
        "bert_tf.serving.span_signatures:SpanSignatures",
        f"{_LITERT}:SpanModule",
        "run_squad",
    ),
    Family(
        "encoder",
        "bert_tf.models.bert_encoder:BertEncoder",
        "bert_tf.serving.encoder_signatures:EncoderSignatures",
        f"{_LITERT}:EncoderModule",
    ),
    Family(
        "tagger",
        "bert_tf.models.bert_token_classifier:BertTokenClassifier",
        "bert_tf.serving.tagger_signatures:TaggerSignatures",
        f"{_LITERT}:TaggerModule",
        "run_ner",
    ),
    Family(
        "embedding",
        "bert_tf.models.bert_sentence_encoder:BertSentenceEncoder",
        "bert_tf.serving.embedding_signatures:EmbeddingSignatures",
        f"{_LITERT}:EmbeddingModule",
        "run_similarity",
    ),
    Family(
        "reranker",
        "bert_tf.models.bert_reranker:BertReranker",
        "bert_tf.serving.reranker_signatures:RerankerSignatures",
        script="run_reranker",
    ),
    Family(
        "retrieval",
        "bert_tf.retrieval.corpus_index:CorpusIndex",
        "bert_tf.serving.retrieval_signatures:RetrievalSignatures",
    ),
    Family(
        "pretrainer",
        "bert_tf.models.bert_pretrainer:BertPretrainer",
        script="run_pretraining",
    ),
)

# export_saved_model.py --model_type.
MODEL_TYPES = tuple(f.name for f in FAMILIES if f.signatures)
# export_litert.py --model_type, in the order its --help has always listed
# them (a new family after them).
_LITERT_ORDER = ("classifier", "tagger", "span", "embedding", "encoder")
LITERT_MODEL_TYPES = tuple(
    sorted(
        (f.name for f in FAMILIES if f.litert_signatures),
        key=lambda name: (_LITERT_ORDER + (name,)).index(name),
    )
)
# The script a run_settings.json names -> the family of the model it trained.
SCRIPT_FAMILIES = {f.script: f.name for f in FAMILIES if f.script}
# How the LiteRT exporter stores the weights.
QUANTIZATIONS = ("dynamic_int8", "float16", "none")
