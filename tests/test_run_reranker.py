"""run_reranker.py end to end on SQuAD-as-BEIR: MiniLM as the first stage, a
tiny cross-encoder trained on its hard negatives."""

import json
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
from bert_tf.retrieval.rerank_verdict import VERDICT_FILE

SCRIPT = os.path.join(REPO, "run_reranker.py")
RETRIEVAL = os.path.join(REPO, "run_retrieval.py")
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


def _train_and_evaluate(output_dir, small_beir, tiny_bert_dir, minilm_dir, *flags):
    """run_reranker --do_train --do_eval of the tiny random BERT on the first
    stage's top 5 of 10: (output_dir, the run's stderr)."""
    result = run_script(
        SCRIPT,
        "--do_train",
        "--do_eval",
        f"--data_dir={small_beir}",
        f"--retrieval_checkpoint={minilm_dir}",
        f"--init_checkpoint={tiny_bert_dir}",
        "--max_seq_length=128",
        "--hard_negatives=3",
        "--rerank_loss=listwise",
        "--rerank_top_k=5",
        "--eval_top_k=10",
        "--train_batch_size=4",
        f"--output_dir={output_dir}",
        *flags,
        timeout=900,
    )
    return str(output_dir), result.stderr


@pytest.fixture(scope="module")
def trained(small_beir, tiny_bert_dir, tmp_path_factory, minilm_dir):
    """1 epoch (85 steps) at lr 1e-3: enough for the tiny BERT to re-order
    MiniLM's top 5 better (mrr@10 0.634 -> 0.737)."""
    return _train_and_evaluate(
        tmp_path_factory.mktemp("reranker") / "out",
        small_beir,
        tiny_bert_dir,
        minilm_dir,
        "--learning_rate=1e-3",
        "--num_train_epochs=1",
    )


@pytest.fixture(scope="module")
def losing(small_beir, tiny_bert_dir, tmp_path_factory, minilm_dir):
    """A deliberately bad cross-encoder: 4 steps at lr 1e-5 leave the tiny
    BERT's random head, whose order of MiniLM's top 5 is worse than MiniLM's."""
    return _train_and_evaluate(
        tmp_path_factory.mktemp("losing") / "out",
        small_beir,
        tiny_bert_dir,
        minilm_dir,
        "--learning_rate=1e-5",
        "--num_train_epochs=0.05",
    )


@pytest.mark.slow
def test_train_and_two_stage_eval(trained, small_beir, minilm_dir):
    from bert_tf.models.bert_reranker import BertReranker

    output_dir, _ = trained
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
    query_ids = list(qrels)
    passages, scores = _first_stage_scores(small_beir, minilm_dir, query_ids)
    first = {
        q: dict(_documents_by_best_passage(passages, scores[i])[:10])
        for i, q in enumerate(query_ids)
    }
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


def _first_stage_scores(data_dir, minilm_dir, query_ids):
    """(passages, inner products [queries, passages]): MiniLM's exact
    first stage over every passage of the corpus, by numpy."""
    from bert_tf.retrieval.dual_encoder import DualEncoder

    queries = beir.read_queries(data_dir)
    towers = DualEncoder.from_checkpoint(minilm_dir)
    passages = _passages(data_dir, towers)
    vectors = towers.encode_documents([p.text for p in passages])
    return passages, towers.encode_queries([queries[q].text for q in query_ids]) @ (
        vectors.T
    )


def _documents_by_best_passage(passages, scores):
    """[(doc id, score)] best first: each document scored by its best passage."""
    best = {}
    for passage, score in zip(passages, scores, strict=True):
        best[passage.doc_id] = max(best.get(passage.doc_id, -np.inf), float(score))
    return sorted(best.items(), key=lambda x: -x[1])


# --- the guard: a losing run's verdict, kept by every later consumer --------


def _verdict_of(output_dir):
    """(the recorded verdict, what it should be by eval_results.txt)."""
    results = _results(os.path.join(output_dir, "eval_results.txt"))
    expected = {
        "keep_first_stage": results["mrr@10_reranked"] < results["mrr@10_retrieval"],
        "metric": "mrr@10",
        "retrieval": pytest.approx(results["mrr@10_retrieval"], abs=1e-9),
        "reranked": pytest.approx(results["mrr@10_reranked"], abs=1e-9),
        "eval_split": "test",
        "num_queries": results["num_queries"],
        "global_step": results["global_step"],
    }
    return json.load(open(os.path.join(output_dir, VERDICT_FILE))), expected


@pytest.mark.slow
def test_a_losing_run_records_its_verdict_and_says_so_once(losing):
    output_dir, stderr = losing
    verdict, expected = _verdict_of(output_dir)
    assert verdict == expected
    assert verdict["keep_first_stage"] is True
    bypass = [line for line in stderr.splitlines() if "first-stage order" in line]
    assert len(bypass) == 1, bypass
    path = os.path.join(output_dir, VERDICT_FILE)
    assert path in bypass[0] and "--rerank_even_if_worse" in bypass[0]


@pytest.mark.slow
def test_a_winning_run_records_a_verdict_and_no_warning(trained):
    output_dir, stderr = trained
    verdict, expected = _verdict_of(output_dir)
    assert verdict == expected
    assert verdict["keep_first_stage"] is False
    assert "first-stage order" not in stderr


@pytest.fixture(scope="module")
def consumers(losing, small_beir, minilm_dir, tmp_path_factory):
    """run_retrieval --do_index --do_eval --export_dir with the losing run as
    --rerank_checkpoint: (output_dir, SavedModel dir, stderr)."""
    pytest.importorskip(
        "pymilvus", reason="pymilvus (retrieval extra) is not installed"
    )
    root = tmp_path_factory.mktemp("consumers")
    result = run_script(
        RETRIEVAL,
        f"--data_dir={small_beir}",
        f"--init_checkpoint={minilm_dir}",
        f"--output_dir={root / 'out'}",
        "--do_index",
        "--do_eval",
        "--eval_top_k=10",
        f"--export_dir={root / 'sm'}",
        f"--rerank_checkpoint={losing[0]}",
        "--rerank_top_k=5",
        timeout=900,
    )
    return str(root / "out"), str(root / "sm" / "1"), result.stderr


@pytest.mark.slow
def test_run_retrieval_keeps_the_first_stage_after_a_losing_verdict(
    losing, consumers, small_beir, minilm_dir
):
    """The evaluation reports the first stage alone, and the SavedModel
    ranks as MiniLM's exact search (computed here with numpy), each with one
    log line saying why."""
    import tensorflow as tf

    out, saved_model, stderr = consumers
    kept = [line for line in stderr.splitlines() if "kept the retrieval order" in line]
    assert len(kept) == 2, kept  # --do_eval and --export_dir
    assert all(os.path.join(losing[0], VERDICT_FILE) in line for line in kept)
    results = _results(os.path.join(out, "eval_results.txt"))
    assert not [name for name in results if name.endswith("_reranked")]
    assert not os.path.exists(os.path.join(out, "run_reranked.tsv"))
    # The same first stage as the verdict's.
    verdict = json.load(open(os.path.join(losing[0], VERDICT_FILE)))
    assert results["mrr@10"] == pytest.approx(verdict["retrieval"], abs=1e-6)

    queries = beir.read_queries(small_beir)
    some = list(beir.read_qrels(small_beir, "test"))[:6]
    passages, scores = _first_stage_scores(small_beir, minilm_dir, some)
    found = tf.saved_model.load(saved_model).signatures["serving_default"](
        query=tf.constant([queries[q].text for q in some]), top_k=tf.constant(5)
    )
    for row in range(len(some)):
        expected = _documents_by_best_passage(passages, scores[row])[:5]
        assert list(found["ids"].numpy()[row].astype(str)) == [d for d, _ in expected]
        np.testing.assert_allclose(
            found["scores"].numpy()[row], [s for _, s in expected], atol=1e-4
        )


@pytest.mark.slow
def test_search_keeps_the_first_stage_unless_told_and_a_won_verdict_reranks(
    losing, trained, consumers, small_beir, minilm_dir, tmp_path, caplog
):
    """bert-tf-search (in-process) with the losing run: MiniLM's exact top 5
    passages in their order; with --rerank_even_if_worse, the losing
    cross-encoder's order of the same 5; with the winning run (its verdict,
    or none at all), the winner's order, silently."""
    import io
    import logging
    import shutil

    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.options.search_options import SearchOptions
    from bert_tf.tasks import search

    index_dir = shutil.copytree(consumers[0], tmp_path / "index")
    queries = beir.read_queries(small_beir)
    some = list(beir.read_qrels(small_beir, "test"))[:4]
    texts = [queries[q].text for q in some]
    passages, scores = _first_stage_scores(small_beir, minilm_dir, some)

    def searched(checkpoint, **flags):
        options = SearchOptions(
            index=str(index_dir),
            top_k=5,
            retrieval_mode="dense",
            rerank_checkpoint=str(checkpoint),
            rerank_top_k=5,
            **flags,
        )
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            results = search.run(
                options, search.open_index(options), texts, io.StringIO()
            )
        # (TensorFlow's own retracing warnings left out.)
        logged = [r.getMessage() for r in caplog.records if r.name == "absl"]
        return [[h.id for h in r.hits] for r in results], results, logged

    found, results, logged = searched(losing[0])
    assert len(logged) == 1 and "bert-tf-search: kept the retrieval order" in logged[0]
    firsts = []
    for row, result in enumerate(results):
        order = np.argsort(-scores[row], kind="stable")[:5]
        firsts.append([passages[i] for i in order])
        assert found[row] == [p.id for p in firsts[-1]]
        np.testing.assert_allclose(
            [h.score for h in result.hits], scores[row][order], atol=1e-5
        )
        assert result.first_stage_scores is None

    def order_of(checkpoint):
        """Each query's 5 first-stage passages ordered by the cross-encoder's
        scores, computed here."""
        reranker = BertReranker.from_checkpoint(str(checkpoint))
        orders = []
        for text, candidates in zip(texts, firsts, strict=True):
            rescored = reranker.predict([(text, p.text) for p in candidates])
            orders.append(
                [candidates[i].id for i in np.argsort(-rescored, kind="stable")]
            )
        assert orders != [[p.id for p in c] for c in firsts]  # it re-orders some
        return orders

    found, _, logged = searched(losing[0], rerank_even_if_worse=True)
    assert found == order_of(losing[0])
    assert len(logged) == 1 and "although" in logged[0]

    winner = order_of(trained[0])
    without_verdict = shutil.copytree(trained[0], tmp_path / "no_verdict")
    os.remove(without_verdict / VERDICT_FILE)
    for checkpoint in (trained[0], without_verdict):
        found, _, logged = searched(checkpoint)
        assert found == winner
        assert logged == []


def test_a_verdict_that_is_not_one_and_an_override_without_a_reranker_are_errors(
    tmp_path,
):
    from bert_tf.errors import UserInputError
    from bert_tf.options.search_options import SearchOptions
    from bert_tf.retrieval.rerank_verdict import read_verdict
    from bert_tf.retrieval.rerank_verdict import second_stage

    assert read_verdict(str(tmp_path)) is None  # e.g. a CrossEncoder directory
    assert second_stage(str(tmp_path), False, "test") == str(tmp_path)
    assert second_stage(None, True, "test") is None
    path = tmp_path / VERDICT_FILE
    for text in ("{not json", '{"metric": "mrr@10"}', '{"keep_first_stage": "no"}'):
        path.write_text(text)
        with pytest.raises(UserInputError, match=f"{path}: not a re-ranking verdict"):
            second_stage(str(tmp_path / "model.ckpt-3"), False, "test")
    with pytest.raises(UserInputError, match="--rerank_even_if_worse: .* give one"):
        SearchOptions(index=str(tmp_path), rerank_even_if_worse=True)
