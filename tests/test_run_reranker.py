"""run_reranker.py end to end on SQuAD-as-BEIR: MiniLM as the first stage, a
tiny cross-encoder trained on its hard negatives."""

import os

import numpy as np
import pytest
from beir_fixtures import squad_beir  # noqa: F401  (fixture)
from beir_fixtures import squad_subset
from cli_script import REPO
from cli_script import run_script

from bert_tf.data_prep import beir
from bert_tf.metrics.retrieval import DEFAULT_METRIC_NAMES
from bert_tf.metrics.retrieval import metric_names_within
from bert_tf.metrics.retrieval import retrieval_metrics

SCRIPT = os.path.join(REPO, "run_reranker.py")
NUM_DOCS = 30


@pytest.fixture(scope="module")
def small_beir(squad_beir, tmp_path_factory):  # noqa: F811
    """The first 30 paragraphs of SQuAD dev as BEIR: every third question
    (at most 40) in qrels/test.tsv, the others in qrels/train.tsv."""
    return squad_subset(
        squad_beir, tmp_path_factory.mktemp("small_beir"), NUM_DOCS, max_test_pairs=40
    )


@pytest.fixture(scope="module")
def tiny_bert_dir(shared_data, tmp_path_factory):
    """A tiny random BERT as a Hugging Face directory (no score head)."""
    import keras
    from tiny_models import tiny_bert_config

    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(4)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    model = BertReranker(
        tiny_bert_config(30522, max_position_embeddings=128, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 128, padding="longest"),
    )
    directory = model.save_cross_encoder(str(tmp_path_factory.mktemp("tiny_bert")))
    from safetensors.numpy import load_file
    from safetensors.numpy import save_file

    weights = os.path.join(directory, "model.safetensors")
    tensors = load_file(weights)
    save_file({k: v for k, v in tensors.items() if "classifier" not in k}, weights)
    return directory


def _results(path):
    lines = open(path).read().splitlines()
    return {k: float(v) for k, v in (line.split(" = ") for line in lines)}


@pytest.mark.slow
def test_train_and_two_stage_eval(small_beir, tiny_bert_dir, minilm_dir, tmp_path):
    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.retrieval.dual_encoder import DualEncoder

    output_dir = str(tmp_path / "out")
    flags = [
        f"--data_dir={small_beir}",
        f"--retrieval_checkpoint={minilm_dir}",
        f"--init_checkpoint={tiny_bert_dir}",
        "--max_seq_length=128",
        "--hard_negatives=3",
        "--rerank_loss=listwise",
        "--rerank_top_k=5",
        "--eval_top_k=10",
        "--train_batch_size=4",
        "--learning_rate=1e-3",
        "--num_train_epochs=1",
        f"--output_dir={output_dir}",
    ]
    run_script(SCRIPT, "--do_train", "--do_eval", *flags, timeout=900)
    results = _results(os.path.join(output_dir, "eval_results.txt"))
    # --eval_top_k=10: the cut-offs a top-10 run can compute, not recall@100.
    names = [n for n in DEFAULT_METRIC_NAMES if int(n.split("@")[1]) <= 10]
    assert names == list(metric_names_within(10)[0])
    assert {
        f"{n}_{stage}" for n in names for stage in ("retrieval", "reranked")
    } <= set(results)
    assert not any(name.startswith("recall@100") for name in results)

    # The first stage: MiniLM with exact search, computed here independently.
    queries = beir.read_queries(small_beir)
    qrels = beir.read_qrels(small_beir, "test")
    towers = DualEncoder.from_checkpoint(minilm_dir)
    passages = _passages(small_beir, towers)
    vectors = towers.encode_documents([p.text for p in passages])
    query_ids = list(qrels)
    scores = towers.encode_queries([queries[q].text for q in query_ids]) @ vectors.T
    first = {}
    for i, query_id in enumerate(query_ids):
        best = {}
        for j, passage in enumerate(passages):  # a document: its best passage
            best[passage.doc_id] = max(best.get(passage.doc_id, -np.inf), scores[i, j])
        ranked = sorted(best.items(), key=lambda x: -x[1])[:10]
        first[query_id] = {d: float(s) for d, s in ranked}
    expected = retrieval_metrics(qrels, first, names)
    for name in names:
        assert results[f"{name}_retrieval"] == pytest.approx(expected[name], abs=1e-6)

    # The second stage: run.tsv holds the trained cross-encoder's scores of
    # the top 5, and its metrics are those of eval_results.txt.
    reranker = BertReranker.from_checkpoint(output_dir)
    assert reranker.preprocessor.seq_length == 128
    run = {}
    for line in open(os.path.join(output_dir, "run.tsv")):
        qid, _, doc_id, rank, score, _ = line.split()
        run.setdefault(qid, {})[doc_id] = float(score)
    reranked = retrieval_metrics(qrels, run, names)
    for name in names:
        assert results[f"{name}_reranked"] == pytest.approx(reranked[name], abs=1e-6)
    query = query_ids[0]
    top = sorted(run[query].items(), key=lambda x: -x[1])[:5]
    texts = {}
    for passage in passages:
        texts.setdefault(passage.doc_id, []).append(passage.text)
    rescored = [
        max(reranker.predict([(queries[query].text, t) for t in texts[d]]))
        for d, _ in top
    ]
    np.testing.assert_allclose(rescored, [s for _, s in top], atol=1e-5)
    # Re-ranking only re-orders the first stage's top 5.
    assert {d for d, _ in top} == set(list(first[query])[:5])


def _passages(data_dir, towers):
    from bert_tf.retrieval.indexing import passages_of

    return passages_of(beir.read_corpus(data_dir), towers)
