"""BertMultiVectorEncoder against sentence-transformers' MultiVectorEncoder.

The models are assembled and saved by sentence-transformers itself from the
shipped MiniLM (its Dense projections start random: parity, not quality, is
what is measured), and both libraries read the same saved directory.
"""

import json
import os
import shutil

import numpy as np
import pytest

from bert_tf.errors import UserInputError
from tests.sentence_transformers_models import COLBERT_CONFIGS
from tests.sentence_transformers_models import save_colbert
from tests.test_sentence_encoder import stsb_dev

TOLERANCE = 1e-5


def _worst(ours, theirs):
    """The largest difference of two lists of token vectors (same shapes)."""
    return max(
        np.abs(a - b).max(initial=0.0) for a, b in zip(ours, theirs, strict=True)
    )


@pytest.fixture(scope="module")
def texts(shared_data):
    """Real STS-B dev sentences: 30 queries, 30 documents, and 4 documents
    longer than the document lengths (truncation)."""
    first, second, _ = stsb_dev(shared_data)
    long_documents = [" ".join(second[i : i + 6]) for i in range(40, 64, 6)]
    return first[:30], second[:30] + long_documents


@pytest.fixture(scope="module")
def saved(minilm_dir, tmp_path_factory):
    """{name: directory} of the sentence-transformers-saved models."""
    pytest.importorskip("sentence_transformers")
    root = tmp_path_factory.mktemp("multi_vector")
    # No hub: the models come from the shipped MiniLM (for this module only).
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")
        yield {
            name: save_colbert(minilm_dir, root / name, spec)
            for name, spec in COLBERT_CONFIGS.items()
        }


@pytest.fixture(scope="module")
def pairs(saved):
    """{name: (ours, sentence-transformers')} read from the same directory."""
    from sentence_transformers import MultiVectorEncoder

    from bert_tf import BertMultiVectorEncoder

    return {
        name: (
            BertMultiVectorEncoder.from_checkpoint(directory),
            MultiVectorEncoder(directory, device="cpu"),
        )
        for name, directory in saved.items()
    }


@pytest.fixture(scope="module")
def encoded(pairs, texts):
    """{(name, side): (ours, theirs)} token vectors, side "query",
    "document" or "none" (encode without a task)."""
    queries, documents = texts
    out = {}
    for name, (ours, theirs) in pairs.items():
        out[name, "query"] = (
            ours.encode_query(queries, batch_size=8),
            theirs.encode_query(queries, batch_size=8, convert_to_numpy=True),
        )
        out[name, "document"] = (
            ours.encode_document(documents, batch_size=8),
            theirs.encode_document(documents, batch_size=8, convert_to_numpy=True),
        )
        out[name, "none"] = (
            ours.encode(documents[-6:]),
            theirs.encode(documents[-6:], convert_to_numpy=True),
        )
    return out


@pytest.mark.slow
@pytest.mark.parametrize("side", ["query", "document", "none"])
@pytest.mark.parametrize("name", sorted(COLBERT_CONFIGS))
def test_token_vectors_match(encoded, name, side):
    ours, theirs = encoded[name, side]
    assert len(ours) == len(theirs)
    # The same tokens kept (skiplist, expansion, truncation): same counts.
    assert [len(v) for v in ours] == [len(v) for v in theirs]
    width = 256 if name == "plain" else 64
    assert all(v.shape[1] == width and v.dtype == np.float32 for v in ours)
    assert _worst(ours, theirs) <= TOLERANCE, _worst(ours, theirs)


@pytest.mark.slow
def test_the_settings_show_in_the_vectors(encoded, pairs, texts):
    """What each setting does is visible (so the parity above covers it)."""
    import tensorflow as tf

    queries, documents = texts
    projected_q, _ = encoded["projected", "query"]
    # "fixed" expansion: every query is exactly 16 tokens, [MASK]s scored.
    assert {len(v) for v in projected_q} == {16}

    plain = pairs["plain"][0]
    # "min": short queries padded with [MASK] to 12 tokens (the skiplist,
    # which "plain" applies to queries too, then drops punctuation); long
    # queries keep their own tokens past 12.
    inputs, expanded = plain.task_inputs(tf.constant(["two words"]), "query")
    assert inputs["input_ids"].shape == (1, 12) and int(expanded.numpy().sum()) == 8
    assert (inputs["input_mask"].numpy() == 1).all()  # attend=True
    inputs, _ = plain.task_inputs(tf.constant(documents[-1:]), "query")
    assert inputs["input_ids"].shape == (1, 20)  # query_length, past the 12
    # Document length 48 cuts the long documents; the skiplist drops
    # punctuation from documents only ("projected").
    projected = pairs["projected"][0]
    long_texts = tf.constant(documents[-4:])
    inputs, _ = projected.task_inputs(long_texts, "document", "passage: ")
    assert inputs["input_ids"].shape[1] == 48
    projected_d, _ = encoded["projected", "document"]
    assert max(len(v) for v in projected_d) < 48
    assert projected.skiplist_ids and projected.query_expansion["length"] == 16
    assert pairs["plain"][0].similarity_fn_name == "meanmaxsim"


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COLBERT_CONFIGS))
def test_max_sim_scores_match(encoded, pairs, name):
    import torch

    ours_model, theirs_model = pairs[name]
    (ours_q, theirs_q), (ours_d, theirs_d) = (
        encoded[name, "query"],
        encoded[name, "document"],
    )
    reference = theirs_model.similarity(
        [torch.from_numpy(v) for v in theirs_q], [torch.from_numpy(v) for v in theirs_d]
    ).numpy()
    scores = ours_model.similarity(ours_q, ours_d)
    assert scores.shape == (len(ours_q), len(ours_d))
    np.testing.assert_allclose(scores, reference, atol=TOLERANCE, rtol=TOLERANCE)
    # The scorer alone, on sentence-transformers' own vectors: the same sums.
    np.testing.assert_allclose(
        ours_model.similarity(theirs_q, theirs_d), reference, atol=TOLERANCE, rtol=1e-6
    )
    pairwise = theirs_model.similarity_pairwise(
        [torch.from_numpy(v) for v in theirs_q],
        [torch.from_numpy(v) for v in theirs_d[: len(theirs_q)]],
    ).numpy()
    np.testing.assert_allclose(
        ours_model.similarity_pairwise(ours_q, ours_d[: len(ours_q)]),
        pairwise,
        atol=TOLERANCE,
        rtol=TOLERANCE,
    )


def test_in_graph_max_sim_is_the_written_out_sum():
    """`max_sim` on padded batches: per query token the best real document
    token (padding never wins, even over negative similarities), summed over
    the real query tokens; an empty document gets the sentinel."""
    from bert_tf.retrieval.max_sim import EMPTY_DOCUMENT_SCORE
    from bert_tf.retrieval.max_sim import max_sim
    from bert_tf.retrieval.max_sim import max_sim_pairwise
    from bert_tf.retrieval.max_sim import pad_token_vectors

    rng = np.random.default_rng(0)
    queries = [rng.normal(size=(n, 8)).astype(np.float32) for n in (3, 5)]
    documents = [rng.normal(size=(n, 8)).astype(np.float32) for n in (4, 1, 7)]
    documents.append(np.zeros((0, 8), np.float32))
    q, q_mask = pad_token_vectors(queries)
    d, d_mask = pad_token_vectors(documents)
    d[~d_mask] = -50.0  # padding that would win a max if it counted
    expected = np.array(
        [
            [
                (qi @ di.T).max(1).sum() if len(di) else EMPTY_DOCUMENT_SCORE
                for di in documents
            ]
            for qi in queries
        ]
    )
    np.testing.assert_allclose(
        max_sim(q, q_mask, d, d_mask).numpy(), expected, rtol=1e-5
    )
    mean = max_sim(q, q_mask, d, d_mask, length_normalize=True).numpy()
    np.testing.assert_allclose(mean, expected / np.array([[3], [5]]), rtol=1e-5)
    pairwise = max_sim_pairwise(q, q_mask, d[:2], d_mask[:2]).numpy()
    np.testing.assert_allclose(pairwise, np.diag(expected[:, :2]), rtol=1e-5)


def _edited_copy(directory, target, edit):
    """A copy of `directory` (weights linked) with `edit(target)` applied."""
    shutil.copytree(
        directory,
        target,
        copy_function=lambda s, d: (
            os.symlink(s, d) if s.endswith(".safetensors") else shutil.copy(s, d)
        ),
    )
    edit(target)
    return target


def _set_json(path, **changes):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data.update(changes)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


def _add_module(directory, kind, folder, config):
    os.makedirs(os.path.join(directory, folder))
    with open(os.path.join(directory, folder, "config.json"), "w") as f:
        json.dump(config, f)
    with open(os.path.join(directory, "modules.json")) as f:
        modules = json.load(f)
    modules.append(
        {"idx": len(modules), "name": str(len(modules)), "path": folder, "type": kind}
    )
    with open(os.path.join(directory, "modules.json"), "w") as f:
        json.dump(modules, f)


_POOLING = "sentence_transformers.multi_vector_encoder.modules.token_pooling."
REFUSED = {
    "ward-pooling": (
        lambda d: _add_module(
            d, _POOLING + "HierarchicalTokenPooling", "4_Pool", {"pool_factor": 2}
        ),
        "4_Pool/config.json: HierarchicalTokenPooling that merges tokens",
    ),
    "sentence-pooling": (
        lambda d: _add_module(
            d, "sentence_transformers.models.Pooling", "4_Pooling", {}
        ),
        "modules.json: module type 'sentence_transformers.models.Pooling' is not supported",
    ),
    "processing-kwargs": (
        lambda d: _set_json(
            os.path.join(d, "sentence_bert_config.json"),
            processing_kwargs={"text": {"padding": "max_length"}},
        ),
        "sentence_bert_config.json: processing_kwargs",
    ),
    "expansion-strategy": (
        lambda d: _set_json(
            os.path.join(d, "sentence_bert_config.json"),
            query_expansion={"strategy": "random", "length": 8},
        ),
        "sentence_bert_config.json: query_expansion strategy 'random'",
    ),
    "similarity": (
        lambda d: _set_json(
            os.path.join(d, "config_sentence_transformers.json"),
            similarity_fn_name="cosine",
        ),
        "config_sentence_transformers.json: similarity_fn_name 'cosine'",
    ),
    "not-multi-vector": (
        lambda d: _set_json(
            os.path.join(d, "config_sentence_transformers.json"),
            model_type="SentenceTransformer",
        ),
        "config_sentence_transformers.json: model_type='SentenceTransformer'",
    ),
    "residual-dense": (
        lambda d: _set_json(
            os.path.join(d, "1_Dense", "config.json"), use_residual=True
        ),
        "1_Dense/config.json: use_residual=true",
    ),
}


@pytest.mark.slow
def test_the_dense_encoder_points_at_the_multi_vector_one(saved):
    from bert_tf import BertSentenceEncoder

    with pytest.raises(
        UserInputError, match="load it with bert_tf.BertMultiVectorEncoder"
    ):
        BertSentenceEncoder.from_checkpoint(saved["projected"])


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_a_config_that_changes_results_is_refused_in_one_line(saved, tmp_path, case):
    from bert_tf import BertMultiVectorEncoder

    edit, message = REFUSED[case]
    directory = _edited_copy(saved["projected"], str(tmp_path / case), edit)
    with pytest.raises(UserInputError) as error:
        BertMultiVectorEncoder.from_checkpoint(directory)
    text = str(error.value)
    assert "\n" not in text and message in text and directory in text


@pytest.mark.slow
def test_keras_round_trip_and_sentence_transformers_save(
    pairs, encoded, texts, tmp_path
):
    import keras
    from sentence_transformers import MultiVectorEncoder

    from bert_tf import BertMultiVectorEncoder

    queries, documents = texts
    model = pairs["projected"][0]
    ours_q, _ = encoded["projected", "query"]
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, BertMultiVectorEncoder)
    assert restored.get_config() == model.get_config()
    again = restored.encode_query(queries[:6])
    for a, b in zip(again, ours_q[:6], strict=True):
        np.testing.assert_array_equal(a, b)
    # save(): a directory sentence-transformers loads, with the same vectors.
    directory = model.save(str(tmp_path / "saved"))
    theirs = MultiVectorEncoder(directory, device="cpu")
    reference = theirs.encode_document(documents[-6:], convert_to_numpy=True)
    ours_d = model.encode_document(documents[-6:])
    assert [len(v) for v in ours_d] == [len(v) for v in reference]
    assert _worst(ours_d, reference) <= TOLERANCE
    reread = BertMultiVectorEncoder.from_checkpoint(directory)
    assert reread.task_arguments() == model.task_arguments()


@pytest.mark.slow
def test_keep_only_token_ids_and_unsliced_output(saved, texts, tmp_path):
    """MultiVectorMask's allowlist (documents score only those ids), read from
    an edited copy of "plain" by both libraries; `output_value=None` gives
    the unsliced vectors with the same scoring mask."""
    from sentence_transformers import MultiVectorEncoder

    from bert_tf import BertMultiVectorEncoder

    _, documents = texts
    ours = BertMultiVectorEncoder.from_checkpoint(saved["plain"])
    vocab = ours.preprocessor.python_tokenizer().vocab
    keep = sorted({vocab[w] for w in ("a", "man", "the", "is", "woman", "dog")})

    def edit(directory):
        _set_json(
            os.path.join(directory, "1_MultiVectorMask", "config.json"),  # no Dense
            keep_only_token_ids=keep,
        )

    directory = _edited_copy(saved["plain"], str(tmp_path / "keep"), edit)
    ours = BertMultiVectorEncoder.from_checkpoint(directory)
    theirs = MultiVectorEncoder(directory, device="cpu")
    sample = documents[:12]
    mine = ours.encode_document(sample)
    reference = theirs.encode_document(sample, convert_to_numpy=True)
    assert [len(v) for v in mine] == [len(v) for v in reference]
    assert sum(len(v) for v in mine) > 0
    assert _worst(mine, reference) <= TOLERANCE
    raw = ours.encode_document(sample, output_value=None)
    for row, vectors in zip(raw, mine, strict=True):
        kept = row["token_embeddings"][row["attention_mask"]]
        np.testing.assert_array_equal(kept, vectors)
        assert set(row["input_ids"][row["attention_mask"]]) <= set(keep)


@pytest.mark.slow
def test_normalize_before_dense_and_token_pooling_that_merges_nothing(
    saved, texts, tmp_path
):
    """A token Normalize before a Dense with a bias, and a saved
    HierarchicalTokenPooling with pool_factor 1 (it only normalises), read by
    both libraries."""
    from sentence_transformers import MultiVectorEncoder

    from bert_tf import BertMultiVectorEncoder

    def edit(directory):
        # A bias on the Dense, without which a normalisation before it would
        # not show after the last Normalize.
        from safetensors.numpy import load_file
        from safetensors.numpy import save_file

        weights_file = os.path.join(directory, "1_Dense", "model.safetensors")
        weights = load_file(weights_file)
        weights["linear.bias"] = (
            np.random.default_rng(0).normal(0, 0.1, size=64).astype(np.float32)
        )
        os.unlink(weights_file)  # the link to the original
        save_file(weights, weights_file)
        _set_json(os.path.join(directory, "1_Dense", "config.json"), bias=True)
        os.makedirs(os.path.join(directory, "0_Normalize"))
        shutil.copy(
            os.path.join(directory, "3_Normalize", "config.json"),
            os.path.join(directory, "0_Normalize", "config.json"),
        )
        with open(os.path.join(directory, "modules.json")) as f:
            modules = json.load(f)
        modules.insert(1, {**modules[-1], "path": "0_Normalize"})
        for i, module in enumerate(modules):
            module.update(idx=i, name=str(i))
        with open(os.path.join(directory, "modules.json"), "w") as f:
            json.dump(modules, f)
        _add_module(
            directory,
            _POOLING + "HierarchicalTokenPooling",
            "5_Pool",
            {"pool_factor": 1.0, "normalize_embeddings": True, "tasks": ["document"]},
        )

    directory = _edited_copy(saved["projected"], str(tmp_path / "edited"), edit)
    ours = BertMultiVectorEncoder.from_checkpoint(directory)
    assert ours.normalize_before_dense and ours.normalize and ours.dense_use_bias
    theirs = MultiVectorEncoder(directory, device="cpu")
    _, documents = texts
    mine = ours.encode_document(documents[:10])
    reference = theirs.encode_document(documents[:10], convert_to_numpy=True)
    assert [len(v) for v in mine] == [len(v) for v in reference]
    assert _worst(mine, reference) <= TOLERANCE
    # The normalisation before the Dense changes the vectors (it is read).
    without = BertMultiVectorEncoder.from_checkpoint(
        directory, normalize_before_dense=False
    )
    assert _worst(mine, without.encode_document(documents[:10])) > 1e-3
