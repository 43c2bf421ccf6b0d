"""BertSentenceEncoder against sentence-transformers (PyTorch) on real data."""

import csv
import json
import os

import numpy as np
import pytest

SENTENCES = [
    "A man is playing a guitar.",
    "Someone plays music on stage while the crowd cheers loudly.",
    "Ünïcödé text, with punctuation!",
    "short",
    "The quick brown fox jumps over the lazy dog near the river bank.",
]


def stsb_dev(shared_data):
    path = os.path.join(shared_data, "glue", "STS-B", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return (
        [r[7] for r in rows],
        [r[8] for r in rows],
        np.array([float(r[9]) for r in rows]),
    )


def masked_reference(vectors, mask, mode):
    """sentence-transformers' Pooling, written out in numpy row by row."""
    rows = []
    for v, m in zip(vectors, mask, strict=True):
        real = v[m.astype(bool)]
        if mode == "cls":
            rows.append(v[0])
        elif mode == "max":
            rows.append(real.max(0))
        elif mode == "mean":
            rows.append(real.mean(0))
        else:
            rows.append(real.sum(0) / np.sqrt(len(real)))
    return np.stack(rows)


@pytest.mark.parametrize("mode", ["cls", "max", "mean", "mean_sqrt_len_tokens"])
def test_pooling_leaves_padding_out(mode):
    from bert_tf.layers.sentence_pooling import SentencePooling

    rng = np.random.default_rng(0)
    vectors = rng.normal(size=(3, 6, 4)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0, 0, 0], [1] * 6, [1, 1, 0, 0, 0, 0]], np.int32)
    # Padding holds huge values: any leak into a mode shows.
    vectors[mask == 0] = 1e4
    pooled = np.asarray(SentencePooling(mode)(vectors, mask))
    np.testing.assert_allclose(
        pooled, masked_reference(vectors, mask, mode), rtol=1e-5, atol=1e-5
    )


def test_pooling_modes_concatenate_in_the_order_given():
    from bert_tf.layers.sentence_pooling import SentencePooling

    vectors = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    mask = np.array([[1, 1, 0], [1, 1, 1]], np.int32)
    pooled = np.asarray(SentencePooling("mean+cls")(vectors, mask))
    expected = np.concatenate(
        [
            masked_reference(vectors, mask, "mean"),
            masked_reference(vectors, mask, "cls"),
        ],
        -1,
    )
    np.testing.assert_allclose(pooled, expected, rtol=1e-6)
    with pytest.raises(ValueError, match="median"):
        SentencePooling("median")


@pytest.mark.slow
def test_reads_the_shipped_model_as_sentence_transformers_does(minilm_dir):
    from sentence_transformers import SentenceTransformer

    import bert_tf

    model = bert_tf.BertSentenceEncoder.from_checkpoint(minilm_dir)
    assert model.pooling == ("mean",) and model.normalize and model.dense is None
    assert model.preprocessor.seq_length == 256
    ours = model.encode(SENTENCES, batch_size=2)
    reference = SentenceTransformer(minilm_dir, device="cpu").encode(SENTENCES)
    np.testing.assert_allclose(ours, reference, atol=2e-5)
    # One string in, one vector out; the order of a batch does not matter.
    np.testing.assert_allclose(model.encode(SENTENCES[3]), ours[3], atol=1e-6)
    np.testing.assert_allclose(model.encode(SENTENCES[::-1])[::-1], ours, atol=1e-6)


@pytest.mark.slow
def test_stsb_dev_parity_and_spearman(shared_data, minilm_dir):
    """All 3,000 STS-B dev sentences: max |Δ| ≤ 2e-5 against
    sentence-transformers' encode, and the same cosine Spearman."""
    from scipy.stats import spearmanr
    from sentence_transformers import SentenceTransformer

    import bert_tf

    first, second, scores = stsb_dev(shared_data)
    sentences = first + second
    ours = bert_tf.BertSentenceEncoder.from_checkpoint(minilm_dir).encode(sentences)
    reference = SentenceTransformer(minilm_dir, device="cpu").encode(sentences)
    assert np.abs(ours - reference).max() <= 2e-5

    def spearman(embeddings):
        a, b = embeddings[: len(first)], embeddings[len(first) :]
        return spearmanr((a * b).sum(-1), scores).statistic

    assert abs(spearman(ours) - spearman(reference)) <= 1e-4
    assert spearman(ours) > 0.8  # the model's published STS-B level


@pytest.mark.slow
def test_written_directory_loads_in_sentence_transformers(minilm_dir, tmp_path):
    """cls+mean pooling, a tanh Dense and Normalize, written by us, read by
    PyTorch's SentenceTransformer and by us again: the same embeddings."""
    from sentence_transformers import SentenceTransformer

    import bert_tf

    model = bert_tf.BertSentenceEncoder.from_checkpoint(
        os.path.join(minilm_dir, "model.safetensors"),
        pooling="cls+mean",
        dense_units=16,
        dense_activation="tanh",
        normalize=True,
        max_seq_length=64,
    )
    ours = model.encode(SENTENCES)
    directory = model.save_sentence_transformers(tmp_path / "st")
    modules = json.loads((tmp_path / "st" / "modules.json").read_text())
    assert [m["type"].rsplit(".", 1)[-1] for m in modules] == [
        "Transformer",
        "Pooling",
        "Dense",
        "Normalize",
    ]
    torch_model = SentenceTransformer(str(directory), device="cpu")
    assert torch_model.max_seq_length == 64
    np.testing.assert_allclose(torch_model.encode(SENTENCES), ours, atol=2e-5)
    again = bert_tf.BertSentenceEncoder.from_checkpoint(directory)
    assert again.pooling == ("cls", "mean") and again.dense_units == 16
    np.testing.assert_allclose(again.encode(SENTENCES), ours, atol=1e-6)


@pytest.mark.slow
def test_keras_file_is_self_contained(minilm_dir, tmp_path):
    import keras
    from tiny_models import tiny_bert_config

    import bert_tf

    preprocessor = bert_tf.BertPreprocessor(
        os.path.join(minilm_dir, "vocab.txt"), True, 32, padding="longest"
    )
    model = bert_tf.BertSentenceEncoder(
        tiny_bert_config(30522),
        preprocessor=preprocessor,
        pooling="max",
        dense_units=8,
        normalize=True,
    )
    expected = model.encode(SENTENCES)
    model.save(tmp_path / "model.keras")
    loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.get_config()["pooling"] == "max"
    np.testing.assert_allclose(loaded.encode(SENTENCES), expected, atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(expected, axis=-1), 1.0, atol=1e-5)


def _st_copy(minilm_dir, tmp_path, modules):
    directory = tmp_path / "st"
    directory.mkdir()
    for name in os.listdir(minilm_dir):
        if name != "modules.json":
            (directory / name).symlink_to(os.path.join(minilm_dir, name))
    (directory / "modules.json").write_text(json.dumps(modules))
    return directory


def test_unusable_directories_are_refused(minilm_dir, tmp_path):
    import bert_tf

    with open(os.path.join(minilm_dir, "modules.json")) as f:
        modules = json.load(f)
    modules.append(
        {
            "idx": 3,
            "name": "3",
            "path": "3_LayerNorm",
            "type": "sentence_transformers.models.LayerNorm",
        }
    )
    directory = _st_copy(minilm_dir, tmp_path, modules)
    with pytest.raises(bert_tf.UserInputError, match="modules.json.*LayerNorm"):
        bert_tf.BertSentenceEncoder.from_checkpoint(directory)
    with pytest.raises(ValueError, match="pooling="):
        bert_tf.BertSentenceEncoder.from_checkpoint(
            os.path.join(minilm_dir, "model.safetensors")
        )
