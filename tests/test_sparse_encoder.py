"""BertSparseEncoder against sentence-transformers' SparseEncoder (SPLADE) on
models that sentence-transformers assembles from the shipped MiniLM and
saves: max and sum pooling, prompts, the inference-free Router, and the
refused configs. MiniLM has no masked-LM head, so sentence-transformers
initialises one at random; both libraries read the saved directory."""

import csv
import json
import os
import shutil

import numpy as np
import pytest

from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    read_sentence_transformers,
)
from bert_tf.checkpoints.sparse_encoder_checkpoint import read_sparse_encoder
from bert_tf.errors import UserInputError
from tests.sentence_transformers_models import save_max_splade

# Weights are log(1 + relu(logit)): up to ~5 with max pooling, tens with sum
# over a long text, so the bound is relative past 1.
ATOL = RTOL = 1e-5


def _allclose(ours, reference):
    np.testing.assert_allclose(ours, reference, rtol=RTOL, atol=ATOL)


@pytest.fixture(scope="module")
def st():
    return pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def texts(shared_data):
    """30 STS-B dev sentences, an empty one and a text past 512 tokens (cut
    by both libraries at the model's length)."""
    path = os.path.join(shared_data, "glue", "STS-B", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    sentences = [r[7] for r in rows[:30]]
    return [*sentences, "", " ".join(r[8] for r in rows[:80])]


@pytest.fixture(scope="module")
def saved(st, minilm_dir, tmp_path_factory):
    """{name: directory} of three SparseEncoders sentence-transformers builds
    from MiniLM and saves (HF_HUB_OFFLINE): MLMTransformer + max pooling;
    Transformer(fill-mask) + sum/log1p_relu with prompts; a Router with a
    SparseStaticEmbedding query route."""
    import torch
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sparse_encoder.modules import MLMTransformer
    from sentence_transformers.sparse_encoder.modules import Router
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    os.environ["HF_HUB_OFFLINE"] = "1"
    root = tmp_path_factory.mktemp("sparse")
    save_max_splade(minilm_dir, root / "max")
    mlm = MLMTransformer(minilm_dir)
    fill_mask = Transformer(minilm_dir, transformer_task="fill-mask")
    st.SparseEncoder(
        modules=[fill_mask, SpladePooling("sum", activation_function="log1p_relu")],
        prompts={"query": "query: ", "document": "passage: "},
        similarity_fn_name="cosine",
    ).save(str(root / "sum"))
    # Weights with zeros, as an IDF table has for tokens never seen.
    weight = torch.rand(30522) * (torch.rand(30522) > 0.3)
    static = SparseStaticEmbedding(tokenizer=mlm.tokenizer, weight=weight, frozen=True)
    router = Router.for_query_document(
        query_modules=[static], document_modules=[mlm, SpladePooling("max")]
    )
    st.SparseEncoder(modules=[router], similarity_fn_name="dot").save(
        str(root / "router")
    )
    return {name: str(root / name) for name in ("max", "sum", "router")}


@pytest.fixture(scope="module")
def pair(saved):
    """(ours, sentence-transformers') of a saved model, each loaded once."""
    from sentence_transformers import SparseEncoder

    import bert_tf

    cache = {}

    def load(name):
        if name not in cache:
            cache[name] = (
                bert_tf.BertSparseEncoder.from_checkpoint(saved[name]),
                SparseEncoder(saved[name], device="cpu"),
            )
        return cache[name]

    return load


def _reference(model, method, texts, **kwargs):
    return getattr(model, method)(texts, **kwargs).to_dense().numpy()


def _check_parity(ours, theirs, texts, methods=("encode_query", "encode_document")):
    for method in methods:
        mine = getattr(ours, method)(texts, batch_size=8)
        reference = _reference(theirs, method, texts)
        assert mine.shape == reference.shape == (len(texts), 30522)
        _allclose(mine, reference)
        np.testing.assert_array_equal(mine != 0, reference != 0)
    return mine, reference


@pytest.mark.slow
def test_max_pooling_matches_sentence_transformers(pair, texts, saved):
    ours, theirs = pair("max")
    assert ours.pooling_strategy == "max" and ours.activation_function == "relu"
    # sentence-transformers 6 writes no max_seq_length: the tokenizer's 512.
    assert ours.preprocessor.seq_length == theirs.max_seq_length == 512
    documents, reference = _check_parity(ours, theirs, texts, ("encode",))
    queries = ours.encode_query(texts[:8])
    similarity = ours.similarity(queries, documents)
    expected = theirs.similarity(
        _reference(theirs, "encode_query", texts[:8]), reference
    ).numpy()
    np.testing.assert_allclose(similarity, expected, rtol=1e-5)
    # One text in, one vector out (alone, not padded: float32 noise only);
    # sparse output holds the same entries.
    _allclose(ours.encode(texts[3]), documents[3])
    sparse = ours.encode(texts[:4], convert_to_sparse_tensor=True)
    np.testing.assert_allclose(
        ours.similarity(sparse, documents[:4]),
        ours.similarity(documents[:4], documents[:4]),
        rtol=1e-6,
    )
    # The BertForMaskedLM checkpoint alone: max pooling and ReLU, as
    # sentence-transformers makes of one.
    import bert_tf

    plain = bert_tf.BertSparseEncoder.from_checkpoint(
        os.path.join(saved["max"], "model.safetensors"), max_seq_length=512
    )
    _allclose(plain.encode(texts[:4]), documents[:4])


@pytest.mark.slow
def test_sum_pooling_prompts_decode_and_max_active_dims(pair, texts):
    ours, theirs = pair("sum")
    assert (ours.pooling_strategy, ours.activation_function) == ("sum", "log1p_relu")
    assert ours.prompts == {"query": "query: ", "document": "passage: "}
    queries, reference = _check_parity(ours, theirs, texts[:12], ("encode_query",))
    documents = ours.encode_document(texts[:12])
    # The prompts change the vectors: a query is not its document.
    assert np.abs(queries - documents).max() > 0.1
    expected = theirs.similarity(
        reference, _reference(theirs, "encode_document", texts[:12])
    ).numpy()
    np.testing.assert_allclose(
        ours.similarity(queries, documents), expected, rtol=1e-5, atol=1e-6
    )
    # decode: the same tokens, largest first, as sentence-transformers'.
    import torch

    mine = ours.decode(queries[:3], top_k=8)
    theirs_decoded = theirs.decode(torch.tensor(reference[:3]), top_k=8)
    for row_ours, row_theirs in zip(mine, theirs_decoded, strict=True):
        assert [t for t, _ in row_ours] == [t for t, _ in row_theirs]
        np.testing.assert_allclose(
            [w for _, w in row_ours], [w for _, w in row_theirs], rtol=1e-5
        )
    ids, weights = ours.token_weights(queries[0])
    assert len(ids) == np.count_nonzero(queries[0]) and np.all(np.diff(weights) <= 0)
    # max_active_dims keeps each row's 16 largest, as sentence-transformers.
    top = ours.encode_query(texts[:6], max_active_dims=16)
    assert (np.count_nonzero(top, axis=1) == 16).all()
    _allclose(top, _reference(theirs, "encode_query", texts[:6], max_active_dims=16))


@pytest.mark.slow
def test_inference_free_router(pair, texts):
    ours, theirs = pair("router")
    assert ours.routes == {"default": "splade", "query": "static", "document": "splade"}
    assert ours.static_embedding is not None and not ours.static_embedding.trainable
    queries, _ = _check_parity(ours, theirs, texts, ("encode_query",))
    # A static query weighs each of its tokens once, whatever else it says.
    tokens = set(ours.preprocessor.python_tokenizer().tokenize(texts[0]))
    assert np.count_nonzero(queries[0]) <= len(tokens)
    documents, reference = _check_parity(ours, theirs, texts, ("encode_document",))
    # encode() without a task takes the default route: the documents'.
    _allclose(ours.encode(texts[:4]), documents[:4])
    expected = theirs.similarity(
        _reference(theirs, "encode_query", texts[:8]), reference
    ).numpy()
    np.testing.assert_allclose(
        ours.similarity(queries[:8], documents), expected, rtol=1e-5, atol=1e-6
    )


@pytest.mark.slow
def test_keras_file_and_written_directory_round_trip(pair, texts, tmp_path):
    import keras
    from sentence_transformers import SparseEncoder

    import bert_tf

    ours, _ = pair("router")
    queries = ours.encode_query(texts[:6])
    documents = ours.encode_document(texts[:6])
    ours.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.routes == ours.routes
    np.testing.assert_allclose(loaded.encode_query(texts[:6]), queries, atol=1e-6)
    np.testing.assert_allclose(loaded.encode_document(texts[:6]), documents, atol=1e-6)
    # The directory save() writes: sentence-transformers reads it to the
    # same vectors, and so do we.
    directory = ours.save(tmp_path / "st")
    theirs = SparseEncoder(str(directory), device="cpu")
    _allclose(_reference(theirs, "encode_query", texts[:6]), queries)
    _allclose(_reference(theirs, "encode_document", texts[:6]), documents)
    again = bert_tf.BertSparseEncoder.from_checkpoint(directory)
    np.testing.assert_allclose(again.encode_document(texts[:6]), documents, atol=1e-6)
    np.testing.assert_allclose(again.encode_query(texts[:6]), queries, atol=1e-6)


def _copy(directory, tmp_path):
    target = tmp_path / "copy"
    shutil.copytree(directory, target)
    return target


def _edit_json(path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_refused_configs_say_file_and_key(saved, tmp_path):
    """Each refusal is one line naming the file and the key."""

    def refused(edit, file, match):
        directory = _copy(saved["max"], tmp_path / str(len(os.listdir(tmp_path))))
        _edit_json(directory / file, edit)
        with pytest.raises(UserInputError, match=match) as caught:
            read_sparse_encoder(directory)
        message = str(caught.value)
        assert "\n" not in message and str(directory / file) in message

    def csr(modules):
        modules[1]["type"] = (
            "sentence_transformers.sparse_encoder.modules.SparseAutoEncoder"
        )

    refused(csr, "modules.json", "'SparseAutoEncoder' \\(CSR\\) is not supported")
    refused(
        lambda c: c.update(pooling_strategy="mean"),
        "1_SpladePooling/config.json",
        "pooling_strategy 'mean'",
    )
    refused(
        lambda c: c.update(temperature=2.0),
        "1_SpladePooling/config.json",
        "key 'temperature' is not supported",
    )
    refused(
        lambda c: c.update(transformer_task="feature-extraction"),
        "sentence_bert_config.json",
        "transformer_task 'feature-extraction'",
    )
    refused(
        lambda c: c.update(query_length=32),
        "sentence_bert_config.json",
        "key 'query_length'",
    )
    refused(
        lambda c: c.update(truncate_dim=64),
        "config_sentence_transformers.json",
        "truncate_dim",
    )


def test_a_dense_model_is_not_a_sparse_one(minilm_dir):
    with pytest.raises(UserInputError, match="modules.json: modules .*Pooling"):
        read_sparse_encoder(minilm_dir)


def test_a_sparse_model_is_not_a_sentence_encoder(saved):
    with pytest.raises(
        UserInputError,
        match="config_sentence_transformers.json: model_type 'SparseEncoder' .*: "
        "load it with bert_tf.BertSparseEncoder",
    ):
        read_sentence_transformers(saved["max"])


@pytest.mark.slow
def test_a_checkpoint_without_the_masked_lm_head_is_refused(minilm_dir):
    import bert_tf

    with pytest.raises(UserInputError, match="no masked-LM head"):
        bert_tf.BertSparseEncoder.from_checkpoint(
            os.path.join(minilm_dir, "model.safetensors")
        )
