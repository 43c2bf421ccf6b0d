"""The model families, one entry each: what a family is called, which model
class it serves, with which signatures, and which tool trains it.

Everything reads this table: the SavedModel exporter's registry
(`bert_tf.serving.registry`), both exporters' model builders
(`bert_tf.tasks.export_models`), the LiteRT exporter, the --model_type
choices of export_saved_model.py and export_litert.py (`MODEL_TYPES`,
`LITERT_MODEL_TYPES`, `MEDIAPIPE_MODEL_TYPES`), the exports' default
lengths (`OWN_LENGTH_MODEL_TYPES`), and `bert_tf.pipeline`: which family
answers a task (`TASK_FAMILIES`) and what a run trained (`SCRIPT_FAMILIES`). Classes are "module:Class" paths, imported when used:
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
      litert: its `signatures` also serve a LiteRT file (over the LiteRT
        preprocessor: `litert_text_endpoint`, `litert_metadata`).
      mediapipe: its LiteRT file can be a MediaPipe Tasks model
        (export_litert.py --target=mediapipe).
      script: the run_* tool whose run trains it (run_settings.json's
        "script"), or None.
      builder: the function that builds it for export from a checkpoint
        ("module:function", `bert_tf.tasks.export_models`), or None.
      exporter: the function that exports it whole instead
        ("module:function" taking the export options; retrieval: two
        towers and a corpus index, not one checkpoint's model), or None.
      own_tokenizer: its checkpoint says its own tokenization and length
        (a sentence-transformers or cross-encoder directory, a dual
        encoder's towers): the export's vocab_file/do_lower_case are not
        the run's to check, and a left-out max_seq_length is the model's.
      tasks: the `bert_tf.pipeline` tasks it answers (Hugging Face's
        names, aliases after the name).

    Example:

    ```python
    Family("classifier", "bert_tf.models.bert_classifier:BertClassifier",
           "bert_tf.serving.classifier_signatures:ClassifierSignatures")
    ```
    """

    name: str
    model_class: str
    signatures: str | None = None
    litert: bool = False
    mediapipe: bool = False
    script: str | None = None
    builder: str | None = None
    exporter: str | None = None
    own_tokenizer: bool = False
    tasks: tuple = ()


_BUILD = "bert_tf.tasks.export_models"

# In the order export_saved_model.py --help lists them.
FAMILIES = (
    Family(
        "classifier",
        "bert_tf.models.bert_classifier:BertClassifier",
        "bert_tf.serving.classifier_signatures:ClassifierSignatures",
        litert=True,
        mediapipe=True,
        script="run_classifier",
        builder=f"{_BUILD}:classifier",
        tasks=("text-classification", "sentiment-analysis"),
    ),
    Family(
        "span",
        "bert_tf.models.bert_span_labeler:BertSpanLabeler",
        "bert_tf.serving.span_signatures:SpanSignatures",
        litert=True,
        script="run_squad",
        builder=f"{_BUILD}:span",
        tasks=("question-answering",),
    ),
    Family(
        "encoder",
        "bert_tf.models.bert_encoder:BertEncoder",
        "bert_tf.serving.encoder_signatures:EncoderSignatures",
        litert=True,
        builder=f"{_BUILD}:encoder",
    ),
    Family(
        "tagger",
        "bert_tf.models.bert_token_classifier:BertTokenClassifier",
        "bert_tf.serving.tagger_signatures:TaggerSignatures",
        litert=True,
        script="run_ner",
        builder=f"{_BUILD}:tagger",
        tasks=("token-classification", "ner"),
    ),
    Family(
        "embedding",
        "bert_tf.models.bert_sentence_encoder:BertSentenceEncoder",
        "bert_tf.serving.embedding_signatures:EmbeddingSignatures",
        litert=True,
        mediapipe=True,
        script="run_similarity",
        builder=f"{_BUILD}:embedding",
        own_tokenizer=True,
        tasks=("sentence-embedding", "feature-extraction"),
    ),
    Family(
        "reranker",
        "bert_tf.models.bert_reranker:BertReranker",
        "bert_tf.serving.reranker_signatures:RerankerSignatures",
        litert=True,
        script="run_reranker",
        builder=f"{_BUILD}:reranker",
        own_tokenizer=True,
    ),
    Family(
        "retrieval",
        "bert_tf.retrieval.corpus_index:CorpusIndex",
        "bert_tf.serving.retrieval_signatures:RetrievalSignatures",
        exporter="bert_tf.tasks.retrieval:export_from_checkpoint",
        own_tokenizer=True,
    ),
    Family(
        "sparse_encoder",
        "bert_tf.models.bert_sparse_encoder:BertSparseEncoder",
        "bert_tf.serving.sparse_encoder_signatures:SparseEncoderSignatures",
        litert=True,
        builder=f"{_BUILD}:sparse_encoder",
        own_tokenizer=True,
    ),
    Family(
        "multi_vector_encoder",
        "bert_tf.models.bert_multi_vector_encoder:BertMultiVectorEncoder",
        "bert_tf.serving.multi_vector_signatures:MultiVectorSignatures",
        # Not yet LiteRT: its converted file keeps only some of its text
        # signatures (the converter's names of same-shaped functions).
        builder=f"{_BUILD}:multi_vector_encoder",
        own_tokenizer=True,
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
        (f.name for f in FAMILIES if f.litert),
        key=lambda name: (_LITERT_ORDER + (name,)).index(name),
    )
)


def family_named(name):
    """The `Family` called `name` (a --model_type)."""
    for family in FAMILIES:
        if family.name == name:
            return family
    raise KeyError(f"{name}: not a model family ({', '.join(MODEL_TYPES)})")


# export_litert.py --target=mediapipe's model types.
MEDIAPIPE_MODEL_TYPES = tuple(f.name for f in FAMILIES if f.mediapipe)
# Export types whose left-out max_seq_length is the checkpoint's own.
OWN_LENGTH_MODEL_TYPES = tuple(f.name for f in FAMILIES if f.own_tokenizer)
# The script a run_settings.json names -> the family of the model it trained.
SCRIPT_FAMILIES = {f.script: f.name for f in FAMILIES if f.script}
# A bert_tf.pipeline task (or alias) -> the family that answers it.
TASK_FAMILIES = {task: f.name for f in FAMILIES for task in f.tasks}
# How the LiteRT exporter stores the weights.
QUANTIZATIONS = ("dynamic_int8", "float16", "none")
