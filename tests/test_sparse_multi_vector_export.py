"""The SPLADE and ColBERT exports against sentence-transformers.

Models sentence-transformers assembles from the shipped MiniLM and saves
(`sentence_transformers_models`): an inference-free SPLADE Router (static
query weights, MLM + max pooling for documents) and the "projected" ColBERT
(Dense 384 -> 64, skiplist, fixed [MASK] expansion, prompts). Each family is
exported once by export_saved_model.py and once by export_litert.py (all
runs of a tool in one child process, bad flags included); the SavedModels
are reloaded with `tf.saved_model.load` and compared with
sentence-transformers' `encode_query` / `encode_document` / `similarity` on
STS-B dev sentences, checked for stock TF Serving's op set, and the float32
LiteRT files are compared with the Keras models.
"""

import csv
import json
import os

import numpy as np
import pytest
from cli_one_process import run_in_one_process
from serving_ops import STOCK_TF_TEXT_OPS
from serving_ops import ops_outside_core_by_dir

from tests.sentence_transformers_models import save_colbert
from tests.sentence_transformers_models import save_max_splade

TOP_K = 32
# sentence-transformers' numbers against the SavedModel's (float32 both).
ST_TOLERANCE = 1e-5
# The float32 LiteRT file against the Keras model.
LITERT_TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def st():
    return pytest.importorskip("sentence_transformers")


@pytest.fixture(scope="module")
def texts(shared_data):
    """10 STS-B dev sentences."""
    path = os.path.join(shared_data, "glue", "STS-B", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[7] for r in rows[:10]]


@pytest.fixture(scope="module")
def model_dirs(st, minilm_dir, tmp_path_factory):
    """{"splade": Router directory, "colbert": MultiVectorEncoder directory}."""
    import torch
    from sentence_transformers.sparse_encoder.modules import MLMTransformer
    from sentence_transformers.sparse_encoder.modules import Router
    from sentence_transformers.sparse_encoder.modules import SparseStaticEmbedding
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    os.environ["HF_HUB_OFFLINE"] = "1"
    root = tmp_path_factory.mktemp("sparse_multi_vector")
    # The MLM head of save_max_splade's seed, under a Router whose query
    # route is static weights with zeros (an IDF table's unseen tokens).
    save_max_splade(minilm_dir, root / "max")
    mlm = MLMTransformer(str(root / "max"))
    torch.manual_seed(1)
    weight = torch.rand(30522) * (torch.rand(30522) > 0.3)
    static = SparseStaticEmbedding(tokenizer=mlm.tokenizer, weight=weight, frozen=True)
    router = Router.for_query_document(
        query_modules=[static], document_modules=[mlm, SpladePooling("max")]
    )
    st.SparseEncoder(modules=[router], similarity_fn_name="dot").save(
        str(root / "splade")
    )
    return {
        "splade": str(root / "splade"),
        "colbert": save_colbert(minilm_dir, root / "colbert"),
    }


@pytest.fixture(scope="module")
def exports(model_dirs, tmp_path_factory):
    """The tools' runs: {name: `Run`} and where they wrote."""
    root = tmp_path_factory.mktemp("exports")
    splade, colbert = model_dirs["splade"], model_dirs["colbert"]
    saved = run_in_one_process(
        "export_saved_model",
        [
            [
                "--model_type=sparse_encoder",
                f"--init_checkpoint={splade}",
                f"--export_dir={root / 'splade'}",
                f"--top_k={TOP_K}",
            ],
            [
                "--model_type=multi_vector_encoder",
                f"--init_checkpoint={colbert}",
                f"--export_dir={root / 'colbert'}",
            ],
            [
                "--model_type=sparse_encoder",
                f"--init_checkpoint={splade}",
                f"--export_dir={root / 'zero'}",
                "--top_k=0",
            ],
            [
                "--model_type=multi_vector_encoder",
                f"--init_checkpoint={colbert}",
                f"--export_dir={root / 'colbert_top_k'}",
                "--top_k=8",
            ],
        ],
        str(root / "saved_model_runs"),
    )
    litert = run_in_one_process(
        "export_litert",
        [
            [
                "--model_type=sparse_encoder",
                f"--init_checkpoint={splade}",
                f"--output_file={root / 'splade.tflite'}",
                "--quantization=none",
                f"--top_k={TOP_K}",
            ],
            [
                "--model_type=sparse_encoder",
                f"--init_checkpoint={splade}",
                f"--output_file={root / 'zero.tflite'}",
                "--top_k=-3",
            ],
        ],
        str(root / "litert_runs"),
    )
    for run in (*saved[:2], litert[0]):
        assert run.returncode == 0, run.stderr[-4000:]
    return {
        "splade": str(root / "splade" / "1"),
        "colbert": str(root / "colbert" / "1"),
        "splade.tflite": str(root / "splade.tflite"),
        "refused": [*saved[2:], litert[1]],
        "root": root,
    }


@pytest.fixture(scope="module")
def loaded(exports):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    return {name: tf.saved_model.load(exports[name]) for name in ("splade", "colbert")}


def _metadata(version_dir):
    path = os.path.join(version_dir, "assets.extra", "bert_tf_export.json")
    with open(path) as f:
        return json.load(f)


def _check_top_k(outputs, dense, k, tolerance, vocabulary=None, nonzero_slack=0):
    """The top-k outputs against vocabulary-wide weights `dense` [B, V]:
    each row's non-zero weights by descending weight, k of them (or all),
    then id -1 and weight 0; each id's weight is its weight in `dense`.
    `nonzero_slack`: how far `num_nonzero` may be off (a weight within
    rounding of 0 that one side rounds to it)."""
    ids = outputs["token_ids"].numpy()
    weights = outputs["weights"].numpy()
    assert ids.shape == weights.shape == (len(dense), k)
    counts = outputs["num_nonzero"].numpy()
    np.testing.assert_allclose(counts, (dense != 0).sum(axis=1), atol=nonzero_slack)
    for row, reference in enumerate(dense):
        nonzero = np.flatnonzero(reference)
        expected = np.sort(reference[nonzero])[::-1][:k]
        n = len(expected)
        assert (ids[row, :n] >= 0).all() and (ids[row, n:] == -1).all()
        np.testing.assert_allclose(weights[row, :n], expected, atol=tolerance)
        assert (weights[row, n:] == 0).all()
        assert (np.diff(weights[row, :n]) <= 0).all()
        # Ties aside, the ids are the reference's: the weight each names.
        np.testing.assert_allclose(
            reference[ids[row, :n]], weights[row, :n], atol=tolerance
        )
        if vocabulary is not None:
            tokens = [t.decode() for t in outputs["tokens"].numpy()[row]]
            assert tokens == [vocabulary[i] for i in ids[row, :n]] + [""] * (k - n)


@pytest.mark.slow
def test_splade_saved_model_matches_sentence_transformers(
    loaded, model_dirs, exports, texts
):
    import tensorflow as tf
    from sentence_transformers import SparseEncoder

    reference = SparseEncoder(model_dirs["splade"], device="cpu")
    vocabulary = reference.tokenizer.convert_ids_to_tokens(range(30522))
    signatures = loaded["splade"].signatures
    assert set(signatures) == {
        "serving_default",
        "serve_tokenized",
        "query",
        "document",
    }
    request = tf.constant(texts)
    for name, method in (
        ("serving_default", "encode"),
        ("query", "encode_query"),
        ("document", "encode_document"),
    ):
        dense = getattr(reference, method)(texts).to_dense().numpy()
        _check_top_k(signatures[name](text=request), dense, TOP_K, 1e-5, vocabulary)
    # The query route is the static embedding: one weight per distinct token
    # (fewer than k), not the network's thousands of non-zero entries.
    query = signatures["query"](text=request)
    assert (query["num_nonzero"].numpy() < TOP_K).all()
    assert (signatures["document"](text=request)["num_nonzero"].numpy() > 1000).all()
    metadata = _metadata(exports["splade"])
    assert metadata["model"] == "sparse_encoder" and metadata["top_k"] == TOP_K
    assert metadata["routes"] == {
        "default": "splade",
        "query": "static",
        "document": "splade",
    }


@pytest.mark.slow
def test_colbert_saved_model_matches_sentence_transformers(loaded, model_dirs, texts):
    import tensorflow as tf
    from sentence_transformers import MultiVectorEncoder

    reference = MultiVectorEncoder(model_dirs["colbert"], device="cpu")
    signatures = loaded["colbert"].signatures
    assert set(signatures) == {
        "serving_default",
        "serve_tokenized",
        "query",
        "document",
        "score",
    }
    request = tf.constant(texts)
    encoded = {}
    for name, method in (
        ("serving_default", "encode"),
        ("query", "encode_query"),
        ("document", "encode_document"),
    ):
        outputs = signatures[name](text=request)
        vectors, mask = outputs["token_vectors"].numpy(), outputs["mask"].numpy()
        assert vectors.shape[-1] == 64 and mask.shape == vectors.shape[:2]
        expected = getattr(reference, method)(texts)
        for row, theirs in enumerate(expected):
            np.testing.assert_allclose(
                vectors[row][mask[row] == 1], np.asarray(theirs), atol=ST_TOLERANCE
            )
        encoded[name] = expected
    # The fixed [MASK] expansion: every query is 16 tokens, all scored.
    query = signatures["query"](text=request)
    assert query["mask"].shape[1] == 16 and (query["mask"].numpy() == 1).all()
    documents = texts[::-1]
    scores = signatures["score"](query=request, document=tf.constant(documents))
    expected = np.diag(
        np.asarray(
            reference.similarity(encoded["query"], reference.encode_document(documents))
        )
    )
    np.testing.assert_allclose(scores["scores"], expected, rtol=ST_TOLERANCE)


@pytest.mark.slow
def test_both_exports_need_only_the_classic_text_ops(exports):
    outside = ops_outside_core_by_dir([exports["splade"], exports["colbert"]])
    for directory, ops in outside.items():
        assert ops <= STOCK_TF_TEXT_OPS, (directory, sorted(ops - STOCK_TF_TEXT_OPS))
        assert "WordpieceTokenizeWithOffsets" in ops


@pytest.mark.slow
def test_splade_litert_file_matches_the_keras_model(exports, model_dirs, texts):
    pytest.importorskip("ai_edge_litert", reason="ai-edge-litert ([litert]) is missing")
    import tensorflow as tf

    import bert_tf
    from bert_tf.serving.litert_model import LiteRTModel

    sparse = bert_tf.BertSparseEncoder.from_checkpoint(model_dirs["splade"])
    splade = LiteRTModel(exports["splade.tflite"])
    assert splade.metadata["model"] == "sparse_encoder"
    # The static query route is the SavedModel's: LiteRT runs the network;
    # documents encode as serving_default does (one function in the file).
    assert set(splade.signature_names()) == {"serving_default", "serve_tokenized"}
    assert splade.metadata["aliases"] == {"document": "serving_default"}
    for method in ("encode", "encode_document"):
        outputs = splade.run_signature("serving_default", text=np.array(texts, object))
        _check_top_k(
            {k: tf.constant(v) for k, v in outputs.items()},
            getattr(sparse, method)(texts),
            TOP_K,
            LITERT_TOLERANCE,
            nonzero_slack=3,
        )


@pytest.mark.slow
def test_bad_flags_exit_2_naming_the_flag(exports):
    zero, colbert_top_k, litert_negative = exports["refused"]
    for run, flag in (
        (zero, "--top_k=0"),
        (colbert_top_k, "--top_k"),
        (litert_negative, "--top_k=-3"),
    ):
        assert run.returncode == 2, run.stderr[-2000:]
        assert flag in run.stderr, run.stderr[-2000:]
    assert "for --model_type=sparse_encoder" in colbert_top_k.stderr
    assert not os.path.exists(exports["root"] / "zero")
