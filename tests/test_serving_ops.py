"""Every export family runs on stock TF Serving: its ops are core TensorFlow
plus tensorflow-text's three classic ops (docs/guides/serving.md).

The cases come from the serving registry's listing: a family registered
without a tiny-model case below fails `test_every_registered_family_has_a_case`.
Each case is exported once (tiny random models, the real uncased vocabulary)
in float32 and, for one case per Keras model class (BFLOAT16_CASES),
bfloat16; one fresh process that imports
TensorFlow but not tensorflow-text reads every saved_model.pb (its graph and
function library) and names the ops core TensorFlow does not register.
"""

import os

import keras
import numpy as np
import pytest
from serving_ops import STOCK_TF_TEXT_OPS
from serving_ops import ops_outside_core_by_dir
from tiny_models import tiny_bert_config

from bert_tf import serving

SEQ_LENGTH = 48
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _config():
    config = tiny_bert_config(30522, max_position_embeddings=SEQ_LENGTH, dropout=0.0)
    # One transformer block: a second one repeats the same op types, and the
    # check reads op types only (each export traces the encoder per endpoint).
    config.num_hidden_layers = 1
    return config


def _classifier(num_labels):
    from bert_tf.models import BertClassifier

    return BertClassifier(_config(), num_labels=num_labels)


def _span_labeler(vocab):
    from bert_tf.models import BertSpanLabeler

    return BertSpanLabeler(_config())


def _encoder(vocab):
    from bert_tf.models import BertEncoder

    return BertEncoder(_config())


def _tagger(crf, iob2):
    from bert_tf.models import BertTokenClassifier

    return BertTokenClassifier(
        _config(), len(TAGS), crf=crf, crf_iob2_labels=TAGS if iob2 else None
    )


def _embedding(pooling, dense_units=None, normalize=False):
    def build(vocab):
        from bert_tf.models import BertSentenceEncoder
        from bert_tf.text.preprocessing import BertPreprocessor

        return BertSentenceEncoder(
            _config(),
            preprocessor=BertPreprocessor(vocab, True, SEQ_LENGTH),
            pooling=pooling,
            dense_units=dense_units,
            normalize=normalize,
        )

    return build


def _reranker(vocab):
    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.text.preprocessing import BertPreprocessor

    return BertReranker(_config(), preprocessor=BertPreprocessor(vocab, True, 32))


def _sparse_encoder(vocab):
    # Sum pooling, log1p_relu, max_active_dims and a static query route
    # (the inference-free Router): every op the family's graphs can hold.
    from bert_tf.models import BertSparseEncoder
    from bert_tf.text.preprocessing import BertPreprocessor

    return BertSparseEncoder(
        _config(),
        preprocessor=BertPreprocessor(vocab, True, SEQ_LENGTH, padding="longest"),
        pooling_strategy="sum",
        activation_function="log1p_relu",
        prompts={"document": "passage: "},
        max_active_dims=16,
        routes={"query": "static"},
        static_max_length=8,
    )


def _multi_vector_encoder(vocab):
    # A Dense, the skiplist on both tasks, [MASK] expansion, prompts,
    # MeanMaxSim and truncate_dim together.
    from bert_tf.models import BertMultiVectorEncoder
    from bert_tf.text.preprocessing import BertPreprocessor

    return BertMultiVectorEncoder(
        _config(),
        preprocessor=BertPreprocessor(vocab, True, SEQ_LENGTH, padding="longest"),
        dense_units=16,
        skiplist_words=[".", ","],
        skiplist_tasks=["query", "document"],
        query_length=12,
        document_length=24,
        query_expansion={"strategy": "fixed", "length": 10},
        prompts={"query": "query: ", "document": "passage: "},
        similarity_fn_name="meanmaxsim",
        truncate_dim=8,
    )


def _corpus_index(two_stage):
    def build(vocab):
        from bert_tf.retrieval.corpus_index import CorpusIndex
        from bert_tf.retrieval.vector_store import StoredPassage

        encoder = _embedding("mean", normalize=True)(vocab)
        texts = ["the cat sat", "a dog ran", "birds fly south", "fish swim"]
        passages = [
            StoredPassage(f"p{i}", f"d{i // 2}", str(i)) for i in range(len(texts))
        ]
        vectors = np.random.default_rng(0).normal(size=(4, encoder.embedding_dim))
        return CorpusIndex(
            encoder,
            passages,
            vectors,
            metric="COSINE",
            reranker=_reranker(vocab) if two_stage else None,
            passage_texts=texts if two_stage else None,
            rerank_top_k=3,
        )

    return build


# Registered model class -> {case: (build(vocab) -> model, family options)}.
CASES = {
    "bert_tf.models.bert_classifier:BertClassifier": {
        "classifier": (lambda v: _classifier(3), {"label_list": ["a", "b", "c"]}),
        "pair_classifier": (lambda v: _classifier(2), {"text_pair": True}),
        "regression": (lambda v: _classifier(1), {"text_pair": True}),
    },
    "bert_tf.models.bert_reranker:BertReranker": {
        "reranker": (_reranker, {}),
    },
    "bert_tf.models.bert_span_labeler:BertSpanLabeler": {
        "span_document": (
            _span_labeler,
            {"max_query_length": 8, "doc_stride": 16},
        ),
    },
    "bert_tf.models.bert_token_classifier:BertTokenClassifier": {
        "tagger": (lambda v: _tagger(False, False), {"label_list": TAGS}),
        "tagger_crf": (lambda v: _tagger(True, False), {"label_list": TAGS}),
        "tagger_crf_iob2": (lambda v: _tagger(True, True), {"label_list": TAGS}),
    },
    "bert_tf.models.bert_encoder:BertEncoder": {
        "encoder_pair": (
            _encoder,
            {"text_pair": True},
        ),
    },
    # Two cases take every pooling mode (cls, mean, max, sqrt-len) and both
    # layers (dense, normalize): the check reads op types, and a mode alone
    # runs a subset of the ops it runs beside the others.
    "bert_tf.models.bert_sentence_encoder:BertSentenceEncoder": {
        "embedding_sqrt_len_dense_normalize": (
            _embedding("mean_sqrt_len_tokens", 16, normalize=True),
            {},
        ),
        "embedding_cls_mean_max": (_embedding("cls+mean+max"), {}),
    },
    "bert_tf.models.bert_sparse_encoder:BertSparseEncoder": {
        "sparse_encoder": (_sparse_encoder, {"top_k": 8}),
    },
    "bert_tf.models.bert_multi_vector_encoder:BertMultiVectorEncoder": {
        "multi_vector_encoder": (_multi_vector_encoder, {}),
    },
    "bert_tf.retrieval.corpus_index:CorpusIndex": {
        "retrieval": (_corpus_index(False), {}),
        "retrieval_bfloat16_corpus": (
            _corpus_index(False),
            {"corpus_dtype": "bfloat16"},
        ),
        "two_stage": (_corpus_index(True), {}),
    },
}
# The cases also exported in bfloat16. The check reads op *types*, which carry
# no dtype: bfloat16 can change the op set only where the model's own float
# computation differs (its Casts, the float32 LayerNorms of copy_in_dtype),
# i.e. per model class and head, not per signature option. The signatures
# cast the model's outputs to float32 before their post-processing
# (classifier_signatures, tagger_signatures), so one case per model class
# covers it; the sentence encoder's pooling, dense and normalize layers run
# in the model, so its two cases together take every pooling and layer; the
# tagger's case is the IOB2-constrained CRF (its transitions are weights,
# stored in bfloat16). CorpusIndex is no Keras model: its precision is
# corpus_dtype (a case of its own).
BFLOAT16_CASES = {
    "classifier",
    "reranker",
    "span_document",
    "tagger_crf_iob2",
    "encoder_pair",
    "embedding_sqrt_len_dense_normalize",
    "embedding_cls_mean_max",
    "sparse_encoder",
    "multi_vector_encoder",
}
EXPORTS = [
    (case, dtype)
    for cases in CASES.values()
    for case in cases
    for dtype in (("float32", "bfloat16") if case in BFLOAT16_CASES else ("float32",))
]


def test_every_registered_family_has_a_case():
    missing = [path for path in serving.registered() if not CASES.get(path)]
    assert not missing, (
        f"registered families without a tiny-model case in {__file__}: {missing}"
    )
    assert set(CASES) <= set(serving.registered())
    # Every Keras model class keeps a bfloat16 export.
    for path, cases in CASES.items():
        if not path.endswith(":CorpusIndex"):
            assert BFLOAT16_CASES & set(cases), path


@pytest.fixture(scope="module")
def exported(shared_data, tmp_path_factory):
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    if not os.path.exists(vocab):
        pytest.skip(f"{vocab} is missing")
    base = tmp_path_factory.mktemp("families")
    builds = {case: entry for cases in CASES.values() for case, entry in cases.items()}
    directories = {}
    for case, dtype in EXPORTS:
        keras.utils.set_random_seed(1)
        build, options = builds[case]
        directories[case, dtype] = serving.export_saved_model(
            build(vocab),
            str(base / f"{case}_{dtype}"),
            vocab,
            True,
            SEQ_LENGTH,
            dtype=dtype,
            save_keras=False,
            **options,
        )
    # The control: the fast tokenizer's ops are not in the stock image.
    directories["control", "fast_bert"] = serving.export_saved_model(
        _classifier(2),
        str(base / "control_fast_bert"),
        vocab,
        True,
        SEQ_LENGTH,
        tokenizer="fast_bert",
        save_keras=False,
    )
    return ops_outside_core_by_dir(list(directories.values())), directories


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "dtype"), EXPORTS, ids=[f"{c}-{d}" for c, d in EXPORTS]
)
def test_export_needs_only_the_classic_text_ops(exported, case, dtype):
    outside, directories = exported
    ops = outside[directories[case, dtype]]
    assert ops <= STOCK_TF_TEXT_OPS, (
        f"{case} {dtype}: {sorted(ops - STOCK_TF_TEXT_OPS)}"
    )
    # The tokenizer is in the graph: the check saw the text ops.
    assert "WordpieceTokenizeWithOffsets" in ops


@pytest.mark.slow
def test_the_check_sees_the_fast_tokenizers_ops(exported):
    outside, directories = exported
    ops = outside[directories["control", "fast_bert"]]
    assert {"FastBertNormalize", "FastWordpieceTokenizeWithOffsets"} <= ops
