"""The serving registry: model class -> signature module, and SpanOptions."""

import os

import pytest
from tiny_models import tiny_bert_config

import bert_tf
from bert_tf import serving
from bert_tf.errors import UserInputError
from bert_tf.serving import registry
from bert_tf.serving.multi_vector_signatures import MultiVectorSignatures
from bert_tf.serving.sparse_encoder_signatures import SparseEncoderSignatures


def test_each_model_class_gets_its_family_and_subclasses_their_base():
    expected = {
        bert_tf.BertClassifier: serving.ClassifierSignatures,
        bert_tf.BertTextClassifier: serving.ClassifierSignatures,
        bert_tf.BertSpanLabeler: serving.SpanSignatures,
        bert_tf.BertTokenClassifier: serving.TaggerSignatures,
        bert_tf.BertEncoder: serving.EncoderSignatures,
        # Its own family before its base BertClassifier's.
        bert_tf.BertReranker: serving.RerankerSignatures,
        bert_tf.BertSparseEncoder: SparseEncoderSignatures,
        bert_tf.BertMultiVectorEncoder: MultiVectorSignatures,
    }
    for model_class, module_class in expected.items():
        assert serving.signature_module_class(model_class) is module_class
        assert issubclass(module_class, serving.SignatureModule)
    with pytest.raises(TypeError, match="No serving signatures for BertPretrainer"):
        serving.signature_module_class(bert_tf.BertPretrainer)


def test_a_registered_family_serves_its_class_and_subclasses(monkeypatch):
    monkeypatch.setattr(registry, "_registry", dict(registry._registry))

    class Reranker(bert_tf.BertClassifier):
        pass

    class RerankerSignatures(serving.ClassifierSignatures):
        family = "reranker"

    class Distilled(Reranker):
        pass

    serving.register(Reranker, RerankerSignatures)
    assert serving.signature_module_class(Distilled) is RerankerSignatures
    assert serving.signature_module_class(bert_tf.BertClassifier) is (
        serving.ClassifierSignatures
    )
    # A "module:Class" entry is imported on lookup.
    serving.register(Distilled, "bert_tf.serving.encoder_signatures:EncoderSignatures")
    assert serving.signature_module_class(Distilled) is serving.EncoderSignatures


def test_signature_module_for_passes_family_options(shared_data):
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    if not os.path.exists(vocab):
        pytest.skip(f"{vocab} is missing")
    preprocessor = bert_tf.BertPreprocessor(vocab, True, 16)
    config = tiny_bert_config(30522)
    classifier = bert_tf.BertClassifier(config, num_labels=2)
    module = serving.signature_module_for(
        classifier, preprocessor, label_list=["no", "yes"], text_pair=True
    )
    assert module.metadata()["labels"] == ["no", "yes"]
    assert module.metadata()["signatures"]["serving_default"] == ["text_a", "text_b"]
    with pytest.raises(TypeError):
        serving.signature_module_for(classifier, preprocessor, doc_stride=3)
    span = serving.signature_module_for(
        bert_tf.BertSpanLabeler(config), preprocessor, max_query_length=8
    )
    assert span.metadata()["max_query_length"] == 8
    assert span.metadata()["signatures"]["serving_default"] == ["question", "context"]
    with pytest.raises(UserInputError, match="max_seq_length \\(16\\) must be greater"):
        serving.SpanSignatures(
            bert_tf.BertSpanLabeler(config), preprocessor, serving.SpanOptions()
        )


def test_span_options_check_their_values():
    assert serving.SpanOptions().nbest_columns == 20
    assert serving.SpanOptions(version_2_with_negative=True).nbest_columns == 21
    for name in ("doc_stride", "n_best_size", "max_answer_length", "max_query_length"):
        with pytest.raises(UserInputError, match=f"^{name} must be >= 1"):
            serving.SpanOptions(**{name: 0})

    class Parsed:
        max_query_length = 10
        max_answer_length = 5
        doc_stride = 7
        n_best_size = 3
        version_2_with_negative = True
        null_score_diff_threshold = -1.5
        unrelated = "ignored"

    options = serving.SpanOptions.from_attributes(Parsed())
    assert options == serving.SpanOptions(10, 5, 7, 3, True, -1.5)
    options.check_seq_length(14)
    with pytest.raises(
        UserInputError, match="max_seq_length .13. must be greater"
    ) as e:
        options.check_seq_length(13)
    # The tools name their flags.
    from bert_tf.cli.command import one_line

    assert one_line(e.value) == (
        "The --max_seq_length (13) must be greater than --max_query_length (10) + 3"
    )


def test_one_family_table_feeds_the_exporters_the_tools_and_the_pipeline():
    from bert_tf.options.litert_export_options import LiteRTExportOptions
    from bert_tf.options.option import fields_by_name
    from bert_tf.options.saved_model_export_options import SavedModelExportOptions
    from bert_tf.serving import families
    from bert_tf.serving import litert_exporter
    from bert_tf.serving.families import FAMILIES

    def choices(options_class):
        return fields_by_name(options_class)["model_type"].metadata["bert_tf.option"][
            "choices"
        ]

    with_signatures = [f for f in FAMILIES if f.signatures]
    assert choices(SavedModelExportOptions) == tuple(f.name for f in with_signatures)
    litert = {f.name for f in FAMILIES if f.litert}
    assert set(choices(LiteRTExportOptions)) == litert
    for family in with_signatures:
        model_class = registry.resolve(family.model_class)
        module_class = serving.signature_module_class(model_class)
        assert module_class is registry.resolve(family.signatures)
        assert module_class.family == family.name
        if family.litert:
            name, litert_class = litert_exporter.litert_family(model_class)
            assert name == family.name
            assert litert_class is registry.resolve(family.signatures)
    # A subclass is exported as its nearest family; a class of none is named.
    assert litert_exporter.litert_family(bert_tf.BertTextClassifier)[0] == "classifier"
    with pytest.raises(TypeError, match="got BertPretrainer"):
        litert_exporter.litert_family(bert_tf.BertPretrainer)
    assert families.SCRIPT_FAMILIES["run_ner"] == "tagger"
    assert families.SCRIPT_FAMILIES["run_pretraining"] == "pretrainer"
    # Each exported family is built by exactly one function of the table.
    for family in with_signatures:
        assert bool(family.builder) != bool(family.exporter), family.name
        assert callable(registry.resolve(family.builder or family.exporter))
    # The pipeline's tasks, MediaPipe's targets and the own-length exports
    # are read from the same entries.
    assert families.TASK_FAMILIES == {
        "text-classification": "classifier",
        "sentiment-analysis": "classifier",
        "question-answering": "span",
        "token-classification": "tagger",
        "ner": "tagger",
        "sentence-embedding": "embedding",
        "feature-extraction": "embedding",
    }
    with pytest.raises(UserInputError, match="known tasks: feature-extraction, ner"):
        bert_tf.pipeline("summarization", "/nonexistent")
    assert families.MEDIAPIPE_MODEL_TYPES == ("classifier", "embedding")
    assert families.OWN_LENGTH_MODEL_TYPES == (
        "embedding",
        "reranker",
        "retrieval",
        "sparse_encoder",
        "multi_vector_encoder",
    )
