"""The reranker's LiteRT file against sentence-transformers' CrossEncoder on SQuAD.

A real one-label cross-encoder (`cross_encoder_fixtures`), exported by
export_litert (`--model_type=reranker`), scored on SQuAD v1.1 dev questions
with their own paragraph and other paragraphs; the reference is
`CrossEncoder.predict` / `CrossEncoder.rank` on the same pairs.
"""

import json
import os

import numpy as np
import pytest
from cross_encoder_fixtures import cross_encoder_dir  # noqa: F401  (fixture)
from tokenizer_torture import documented_difference

from bert_tf.errors import UserInputError

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert ([litert]) is missing")

NUM_QUERIES = 60
# The float32 file's scores against CrossEncoder.predict's (sigmoid scores).
FLOAT32_TOLERANCE = 1e-4


def squad_candidates(shared_data, num_queries=NUM_QUERIES):
    """(question, [passages]) per query: the question's own paragraph, the
    next two paragraphs of its article and a paragraph of another article.

    Queries whose texts hold a character the LiteRT tokenizer is documented
    to split differently (docs/guides/litert.md, "Tokenizer differences"; SQuAD's `½`
    is one) are left out: the file's float32 scores then differ only by
    the arithmetic."""
    with open(os.path.join(shared_data, "squad/dev-v1.1.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]
    queries = []
    for index, article in enumerate(articles):
        paragraphs = article["paragraphs"]
        other = articles[(index + 7) % len(articles)]["paragraphs"][0]["context"]
        for position, paragraph in enumerate(paragraphs[: len(paragraphs) - 2]):
            neighbours = [paragraphs[position + k]["context"] for k in (1, 2)]
            question = paragraph["qas"][0]["question"]
            texts = [question, paragraph["context"], *neighbours, other]
            if any(documented_difference(c, True) for t in texts for c in t):
                continue
            queries.append((question, texts[1:]))
            if len(queries) == num_queries:
                return queries
    raise AssertionError("SQuAD dev has fewer queries than asked for")


def custom_ops(path):
    """The custom op names a .tflite file needs kernels for."""
    from tensorflow.lite.tools import flatbuffer_utils

    with open(path, "rb") as f:
        model = flatbuffer_utils.read_model_from_bytearray(bytearray(f.read()))
    names = set()
    for code in model.operatorCodes:
        if code.customCode:
            name = code.customCode
            names.add(name.decode() if isinstance(name, bytes) else name)
    return names


def export_litert_cli(directory, path, *flags, check=True):
    """export_litert.py --model_type=reranker of the cross-encoder `directory` to
    `path`."""
    from cli_script import REPO
    from cli_script import run_script

    return run_script(
        os.path.join(REPO, "export_litert.py"),
        "--model_type=reranker",
        f"--init_checkpoint={directory}",
        f"--output_file={path}",
        *flags,
        check=check,
        timeout=600,
    )


@pytest.fixture(scope="module")
def reference(cross_encoder_dir, shared_data):  # noqa: F811
    """CrossEncoder.predict's scores of every (query, candidate) pair."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    queries = squad_candidates(shared_data)
    pairs = [(q, p) for q, passages in queries for p in passages]
    model = sentence_transformers.CrossEncoder(cross_encoder_dir)
    scores = model.predict(pairs, batch_size=32)
    assert scores.std() > 0.1  # a head that ranks, not constant scores
    return queries, pairs, np.asarray(scores, np.float32), model


def export_file(directory, path, quantization):
    """The cross-encoder `directory` as export_litert.py's task writes it."""
    from bert_tf.options.litert_export_options import LiteRTExportOptions
    from bert_tf.tasks import litert_export

    return litert_export.run(
        LiteRTExportOptions(
            model_type="reranker",
            init_checkpoint=directory,
            output_file=str(path),
            quantization=quantization,
        )
    )


@pytest.fixture(scope="module")
def float32_file(cross_encoder_dir, tmp_path_factory):  # noqa: F811
    path = tmp_path_factory.mktemp("rerank") / "reranker.tflite"
    return export_file(cross_encoder_dir, path, "none")


@pytest.mark.slow
def test_float32_scores_equal_cross_encoder_predict(float32_file, reference):
    from bert_tf.serving.litert_exporter import TFTEXT_KERNELS
    from bert_tf.serving.litert_model import LiteRTModel

    queries, pairs, expected, cross_encoder = reference
    model = LiteRTModel(float32_file)
    assert model.metadata["model"] == "reranker"
    # The directory's own length and casing, and what the scores are.
    assert model.metadata["seq_length"] == cross_encoder.max_seq_length == 512
    assert model.metadata["do_lower_case"] is True
    assert model.metadata["activation"] == "sigmoid"
    assert model.input_names == ["query", "passage"]
    assert custom_ops(float32_file) <= set(TFTEXT_KERNELS)

    scores = model.score_pairs([q for q, _ in pairs], [p for _, p in pairs])
    assert scores.dtype == np.float32 and scores.shape == (len(pairs),)
    print(f"float32: max |d| {np.abs(scores - expected).max():.2e}")
    np.testing.assert_allclose(scores, expected, atol=FLOAT32_TOLERANCE, rtol=0)
    # serving_default itself: sigmoid of its logits.
    out = model(query=[q for q, _ in pairs[:8]], passage=[p for _, p in pairs[:8]])
    np.testing.assert_allclose(out["scores"], expected[:8], atol=FLOAT32_TOLERANCE)
    np.testing.assert_allclose(
        out["scores"], 1 / (1 + np.exp(-out["logits"].astype(np.float64))), atol=1e-6
    )
    # rank: CrossEncoder.rank's order and scores.
    query, passages = queries[0]
    ours = model.rank(query, passages)
    theirs = cross_encoder.rank(query, passages)
    assert [r["corpus_id"] for r in ours] == [r["corpus_id"] for r in theirs]
    np.testing.assert_allclose(
        [r["score"] for r in ours], [r["score"] for r in theirs], atol=1e-4
    )
    assert [r["corpus_id"] for r in model.rank(query, passages, top_k=2)] == [
        r["corpus_id"] for r in theirs[:2]
    ]
    assert model.score_pairs([], []).shape == (0,)
    # Issue 61.13: a 20,000-character passage (or query) is cut by word
    # pieces to the 512 positions, as CrossEncoder.predict cuts it.
    long = (" ".join(p for _, passages in queries for p in passages) * 8)[:20000]
    long_pairs = [(query, long), (long, passages[0])]
    expected_long = cross_encoder.predict(long_pairs)
    np.testing.assert_allclose(
        model.score_pairs([query, long], [long, passages[0]]),
        expected_long,
        atol=FLOAT32_TOLERANCE,
    )
    # Another family's methods name the file's.
    with pytest.raises(ValueError, match="is a reranker export, not an embedding"):
        model.encode(["a"])
    with pytest.raises(ValueError, match="queries and passages must be as long"):
        model.score_pairs(["a"], [])
    with pytest.raises(ValueError, match="top_k"):
        model.rank(query, passages, top_k=0)


@pytest.mark.slow
def test_float16_file_keeps_the_scores(cross_encoder_dir, reference, float32_file):  # noqa: F811
    from bert_tf.serving.litert_model import LiteRTModel

    path = os.path.join(os.path.dirname(float32_file), "reranker-float16.tflite")
    model = LiteRTModel(export_file(cross_encoder_dir, path, "float16"))
    assert model.metadata["quantization"] == "float16"
    # float16 weights: about half the float32 file (measured 47.6 of 93.0 MB).
    assert os.path.getsize(path) < 0.55 * os.path.getsize(float32_file)
    _, pairs, expected, _ = reference
    scores = model.score_pairs([q for q, _ in pairs], [p for _, p in pairs])
    # float16 weights (relative error ~5e-4) under the fixture's large random
    # head: measured within 7.3e-4 of CrossEncoder's scores.
    np.testing.assert_allclose(scores, expected, atol=2e-3, rtol=0)


# The dynamic_int8 file against CrossEncoder.predict, measured 2026-11-28 on
# the 60 queries x 4 candidates: the same best candidate for 57 of 60
# queries, mean Spearman of the 4 candidates' scores 0.937, max |score
# difference| 0.091 (the fixture's random head, normal(0, 2) over 384
# dims, magnifies the int8 error of the pooled vector). The bounds leave a
# margin for the int8 kernels of other CPUs.
INT8_MIN_TOP1 = 0.9
INT8_MIN_SPEARMAN = 0.88
INT8_MAX_DELTA = 0.15


@pytest.mark.slow
def test_cli_int8_file_ranks_as_cross_encoder(cross_encoder_dir, reference, tmp_path):  # noqa: F811
    """export_litert.py --model_type=reranker (dynamic_int8, the default) end
    to end; its order of each query's candidates is CrossEncoder's nearly."""
    from scipy.stats import spearmanr

    from bert_tf.serving.litert_exporter import TFTEXT_KERNELS
    from bert_tf.serving.litert_model import LiteRTModel

    path = str(tmp_path / "reranker-int8.tflite")
    export_litert_cli(cross_encoder_dir, path)
    model = LiteRTModel(path)
    assert model.metadata["quantization"] == "dynamic_int8"
    assert custom_ops(path) <= set(TFTEXT_KERNELS)
    queries, pairs, expected, _ = reference
    scores = model.score_pairs([q for q, _ in pairs], [p for _, p in pairs])
    per_query = len(queries[0][1])
    ours = scores.reshape(-1, per_query)
    theirs = expected.reshape(-1, per_query)
    top1 = np.mean(ours.argmax(1) == theirs.argmax(1))
    spearman = np.mean(
        [spearmanr(a, b).statistic for a, b in zip(ours, theirs, strict=True)]
    )
    delta = np.abs(scores - expected).max()
    print(f"int8: top-1 {top1:.3f}, mean Spearman {spearman:.4f}, max |d| {delta:.4f}")
    assert top1 >= INT8_MIN_TOP1
    assert spearman >= INT8_MIN_SPEARMAN
    assert delta <= INT8_MAX_DELTA


def test_mediapipe_target_refuses_a_reranker(cross_encoder_dir, tmp_path):  # noqa: F811
    from bert_tf.options.litert_export_options import LiteRTExportOptions

    with pytest.raises(UserInputError, match="got --model_type=reranker: MediaPipe"):
        LiteRTExportOptions(
            model_type="reranker",
            init_checkpoint=cross_encoder_dir,
            output_file=str(tmp_path / "reranker.tflite"),
            target="mediapipe",
        )


@pytest.mark.slow
def test_cli_mediapipe_target_is_one_line_and_exit_2(cross_encoder_dir, tmp_path):  # noqa: F811
    path = tmp_path / "reranker.tflite"
    result = export_litert_cli(
        cross_encoder_dir, path, "--target=mediapipe", check=False
    )
    assert result.returncode == 2, result.stderr[-3000:]
    (line,) = result.stderr.strip().splitlines()
    assert "--target=mediapipe" in line and "--model_type=reranker" in line, line
    assert not os.path.exists(path)


@pytest.mark.slow
def test_another_familys_file_is_named(shared_data, tmp_path):
    from tiny_models import tiny_bert_config

    import bert_tf
    from bert_tf.serving.litert_exporter import export_litert
    from bert_tf.serving.litert_model import LiteRTModel

    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    classifier = bert_tf.BertClassifier(tiny_bert_config(30522), num_labels=2)
    path = str(tmp_path / "classifier.tflite")
    export_litert(classifier, path, vocab, True, 16, quantization="none")
    model = LiteRTModel(path)
    with pytest.raises(ValueError, match="is a classifier export, not a reranker"):
        model.score_pairs(["who?"], ["Ann."])
    with pytest.raises(ValueError, match="not a reranker"):
        model.rank("who?", ["Ann."])
