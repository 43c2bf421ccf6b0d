"""Similarity fine-tuning: losses and metrics against sentence-transformers and
scipy, the data reader's errors, and run_similarity.py end to end."""

import json
import os

import numpy as np
import pytest
from cli_script import REPO
from cli_script import run_script

SCRIPT = os.path.join(REPO, "run_similarity.py")
EMBED = os.path.join(REPO, "embed.py")
EXPORT_LITERT = os.path.join(REPO, "export_litert.py")


def _embeddings(rows, seed):
    rng = np.random.default_rng(seed)
    return [rng.normal(size=(6, 8)).astype(np.float32) for _ in range(rows)]


@pytest.mark.slow
@pytest.mark.parametrize(
    "name", ["cosine", "cosent", "mnr", "mnr_negatives", "mnr_symmetric"]
)
def test_losses_equal_sentence_transformers(name):
    import torch
    from sentence_transformers.sentence_transformer import losses

    from bert_tf.tasks import similarity_losses as ours

    columns = _embeddings(3 if name == "mnr_negatives" else 2, seed=len(name))
    scores = np.random.default_rng(1).uniform(size=6).astype(np.float32)
    scores[2] = scores[4]  # a tie: CoSENT must leave such pairs out
    if name == "cosine":
        reference = losses.CosineSimilarityLoss(None)
        value = ours.cosine_similarity_loss(*columns, scores)
    elif name == "cosent":
        reference = losses.CoSENTLoss(None)
        value = ours.cosent_loss(*columns, scores)
    elif name == "mnr_symmetric":
        reference = losses.MultipleNegativesSymmetricRankingLoss(None)
        value = ours.multiple_negatives_ranking_loss(*columns, symmetric=True)
    else:
        reference = losses.MultipleNegativesRankingLoss(None)
        value = ours.multiple_negatives_ranking_loss(*columns)
    expected = reference.compute_loss_from_embeddings(
        [torch.from_numpy(c) for c in columns], torch.from_numpy(scores)
    )
    np.testing.assert_allclose(float(value), float(expected), rtol=1e-5)


def test_correlations_equal_scipy():
    from scipy import stats

    from bert_tf.metrics.similarity import similarity_metrics

    rng = np.random.default_rng(3)
    gold = np.round(rng.uniform(0, 5, size=200), 1)  # many ties, as STS-B
    predicted = gold + rng.normal(scale=2.0, size=200)
    results = similarity_metrics(predicted, gold)
    assert results["eval_spearman_cosine"] == pytest.approx(
        stats.spearmanr(predicted, gold).statistic, abs=1e-12
    )
    assert results["eval_pearson_cosine"] == pytest.approx(
        stats.pearsonr(predicted, gold).statistic, abs=1e-12
    )


def test_rows_name_the_bad_line(shared_data, tmp_path):
    from bert_tf.data_prep.similarity_rows import read_similarity_rows
    from bert_tf.data_prep.table_reader import BadRowError

    stsb = os.path.join(shared_data, "glue", "STS-B", "dev.tsv")
    rows = read_similarity_rows(stsb, ["sentence1", "sentence2"], "score")
    assert len(rows) == 1500 and rows.scores.max() == 5.0
    assert rows.texts[0][0] == "A man with a hard hat is dancing."
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"a": "x", "b": "y", "s": 1}\n{"a": "x", "b": "y", "s": "high"}\n')
    with pytest.raises(BadRowError, match=r"pairs.jsonl:2: score 'high'"):
        read_similarity_rows(str(bad), ["a", "b"], "s")
    with pytest.raises(ValueError, match="no column 'text'"):
        read_similarity_rows(stsb, ["text", "sentence2"], "score")


def _subset(shared_data, tmp_path, split, rows):
    with open(os.path.join(shared_data, "glue", "STS-B", f"{split}.tsv")) as f:
        lines = f.readlines()[: rows + 1]
    path = tmp_path / f"{split}.tsv"
    path.write_text("".join(lines))
    return path


@pytest.mark.slow
def test_run_similarity_trains_evaluates_saves_and_exports(
    shared_data, minilm_dir, tmp_path
):
    """MiniLM, 64 STS-B pairs, 4 CoSENT steps: the eval file's Spearman is
    the one PyTorch computes from the saved sentence-transformers directory,
    and the SavedModel (fresh process, no bert_tf) serves those embeddings."""
    from scipy import stats
    from sentence_transformers import SentenceTransformer
    from serving_process import call_in_fresh_process

    train = _subset(shared_data, tmp_path, "train", 64)
    dev = _subset(shared_data, tmp_path, "dev", 40)
    output = tmp_path / "out"
    result = run_script(
        SCRIPT,
        f"--init_checkpoint={minilm_dir}",
        f"--train_file={train}",
        f"--dev_file={dev}",
        "--loss=cosent",
        "--do_train",
        "--do_eval",
        "--train_batch_size=16",
        "--num_train_epochs=1",
        "--max_seq_length=48",
        f"--output_dir={output}",
        f"--export_dir={tmp_path / 'serving'}",
        timeout=600,
    )
    results = dict(
        line.split(" = ")
        for line in (output / "eval_results.txt").read_text().splitlines()
    )
    assert int(results["global_step"]) == 4
    # Mean pooling does not read the pooler: it is not trained, and Keras has
    # no missing gradient to warn about.
    assert "Gradients do not exist" not in result.stderr
    st_dir = output / "sentence_transformers"
    torch_model = SentenceTransformer(str(st_dir), device="cpu")
    fields = [line.split("\t") for line in dev.read_text().splitlines()[1:]]
    first, second = [f[7] for f in fields], [f[8] for f in fields]
    gold = [float(f[9]) for f in fields]
    a, b = torch_model.encode(first), torch_model.encode(second)
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    assert float(results["eval_spearman_cosine"]) == pytest.approx(
        stats.spearmanr(cosine, gold).statistic, abs=1e-4
    )
    # Training moved the weights: the original model's embeddings differ.
    original = SentenceTransformer(minilm_dir, device="cpu").encode(first[:4])
    assert np.abs(original - a[:4]).max() > 1e-3
    metadata = json.loads(
        (
            tmp_path / "serving" / "1" / "assets.extra" / "bert_tf_export.json"
        ).read_text()
    )
    assert metadata["model"] == "embedding" and metadata["normalize"] is True
    served = call_in_fresh_process(
        tmp_path,
        [
            {
                "dir": str(tmp_path / "serving" / "1"),
                "signature": "serving_default",
                "inputs": {"text": first[:5]},
            },
            {
                "dir": str(tmp_path / "serving" / "1"),
                "signature": "similarity",
                "inputs": {"text_a": first[:5], "text_b": second[:5]},
            },
        ],
    )
    np.testing.assert_allclose(served[0]["embeddings"], a[:5], atol=2e-5)
    np.testing.assert_allclose(served[1]["cosine"], cosine[:5], atol=2e-5)
    # The installed tools read the run's output_dir as the pipeline does: its
    # pooling, normalization, length and casing, no flags needed.
    texts = tmp_path / "texts.txt"
    texts.write_text("".join(f"{text}\n" for text in first[:5]))
    run_script(
        EMBED,
        f"--init_checkpoint={output}",
        f"--input_file={texts}",
        f"--output_file={tmp_path / 'embedded.npy'}",
    )
    np.testing.assert_allclose(np.load(tmp_path / "embedded.npy"), a[:5], atol=2e-5)
    run_script(
        EXPORT_LITERT,
        "--model_type=embedding",
        f"--init_checkpoint={output}",
        f"--output_file={tmp_path / 'embedding.tflite'}",
        "--quantization=none",
    )
    from bert_tf.serving.litert_model import LiteRTModel

    litert = LiteRTModel(str(tmp_path / "embedding.tflite"))
    assert litert.metadata["seq_length"] == 48
    np.testing.assert_allclose(litert.encode(first[:5]), a[:5], atol=1e-4)
