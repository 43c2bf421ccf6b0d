"""run_retrieval --retrieval_mode=splade and hybrid with SPLADE, Milvus Lite for real.

One index of a tiny SQuAD corpus (MiniLM dense vectors + SPLADE vectors of a
SparseEncoder sentence-transformers builds from MiniLM), shared by the
tests: the stored sparse vectors against `BertSparseEncoder` and
sentence-transformers, the splade ranking against numpy over
sentence-transformers' vectors, SPLADE + dense fusion against the fusion
computed by hand, and bert-tf-search against the evaluation.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")

from beir_fixtures import read_run_scores  # noqa: E402
from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from beir_fixtures import squad_subset  # noqa: E402
from cli_script import REPO  # noqa: E402
from cli_script import script_env  # noqa: E402
from fusion_checks import assert_rrf  # noqa: E402
from fusion_checks import assert_weighted  # noqa: E402

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.errors import UserInputError  # noqa: E402
from bert_tf.options import RetrievalOptions  # noqa: E402
from bert_tf.options import RunOptions  # noqa: E402

NUM_DOCS = 12
TOP_K = 12


@pytest.fixture(scope="module")
def splade_index(squad_beir, minilm_dir, tmp_path_factory):  # noqa: F811
    """run_retrieval in process: --do_index of dense + SPLADE vectors
    (--retrieval_mode=hybrid --hybrid_sides=dense,splade) with --do_eval,
    then --retrieval_mode=splade --do_eval on the same collection."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers_models import save_max_splade

    from bert_tf.tasks.retrieval import RetrievalTask
    from bert_tf.tasks.runner import run_task

    root = tmp_path_factory.mktemp("splade")
    data = squad_subset(squad_beir, root / "data", NUM_DOCS, max_test_pairs=16)
    splade_dir = save_max_splade(minilm_dir, root / "splade")
    out = root / "hybrid"
    out.mkdir()

    def run(output_dir, do_index, **kwargs):
        task = RetrievalTask(
            RunOptions(
                output_dir=str(output_dir),
                init_checkpoint=minilm_dir,
                do_lower_case=None,
                max_seq_length=None,
                do_predict=do_index,
                do_eval=True,
            ),
            RetrievalOptions(
                data_dir=data,
                splade_checkpoint=splade_dir,
                eval_top_k=TOP_K,
                milvus_uri=str(out / "index.db"),
                **kwargs,
            ),
        )
        return run_task(task), task

    hybrid, task = run(out, True, retrieval_mode="hybrid", hybrid_sides="dense,splade")
    splade, _ = run(root / "splade_eval", False, retrieval_mode="splade")
    return {
        "data": data,
        "splade_dir": splade_dir,
        "minilm_dir": minilm_dir,
        "out": out,
        "splade_out": root / "splade_eval",
        "metrics": {"hybrid": hybrid, "splade": splade},
        # The models the run loaded (the towers, the BertSparseEncoder).
        "towers": task.towers,
        "splade": task.splade,
    }


@pytest.fixture(scope="module")
def st_splade(splade_index):
    st = pytest.importorskip("sentence_transformers", reason="test extra")
    return st.SparseEncoder(splade_index["splade_dir"], device="cpu")


def _passages(index):
    """The passages run_retrieval cut (MiniLM's tokenizer, 254 / 127)."""
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(index["minilm_dir"], "vocab.txt"), True)
    corpus = beir.read_corpus(index["data"])
    return beir.split_passages(
        corpus, lambda w: len(tokenizer.tokenize(w)) or 1, 254, 127
    )


def _store(index):
    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.retrieval.search_index import DEFAULT_COLLECTION

    return MilvusStore.existing(str(index["out"] / "index.db"), DEFAULT_COLLECTION)


def _st_dense(st_model, texts, task):
    encode = st_model.encode_query if task == "query" else st_model.encode_document
    return np.asarray(encode(texts, convert_to_tensor=True).to_dense().numpy())


@pytest.mark.slow
def test_stored_sparse_vectors_are_encode_document(splade_index, st_splade):
    passages = _passages(splade_index)
    with _store(splade_index) as store:
        assert store.dense and store.splade and not store.lexical
        stored = store.sparse_vectors()
    assert sorted(stored) == sorted(p.id for p in passages)
    expected = splade_index["splade"].encode_document([p.text for p in passages])
    for p, row in zip(passages, expected, strict=True):
        (ids,) = np.nonzero(row)
        assert sorted(stored[p.id]) == sorted(int(i) for i in ids)
        np.testing.assert_allclose(
            [stored[p.id][int(i)] for i in ids], row[ids], rtol=1e-6
        )
    # sentence-transformers' own vectors of a few passages, within 1e-5.
    theirs = _st_dense(st_splade, [p.text for p in passages[:4]], "document")
    for p, row in zip(passages[:4], theirs, strict=True):
        got = np.zeros_like(row)
        for i, w in stored[p.id].items():
            got[i] = w
        np.testing.assert_allclose(got, row, atol=1e-5)


def _documents(scores, passages, top_k):
    """{doc id: best passage score}, the `top_k` best documents."""
    best = {}
    for passage, score in zip(passages, scores, strict=True):
        if score > 0:  # a sparse search finds only passages sharing a term
            best[passage.doc_id] = max(best.get(passage.doc_id, -1.0), float(score))
    return dict(sorted(best.items(), key=lambda kv: -kv[1])[:top_k])


@pytest.mark.slow
def test_splade_ranking_is_the_exact_sparse_dot_product(splade_index, st_splade):
    passages = _passages(splade_index)
    queries = beir.read_queries(splade_index["data"])
    qrels = beir.read_qrels(splade_index["data"], "test")
    run = read_run_scores(splade_index["splade_out"] / "run.tsv")
    assert set(run) == set(qrels)
    q_vec = _st_dense(st_splade, [queries[q].text for q in qrels], "query")
    p_vec = _st_dense(st_splade, [p.text for p in passages], "document")
    for q, scores in zip(qrels, q_vec @ p_vec.T, strict=True):
        expected = _documents(scores, passages, TOP_K)
        got = run[q]
        np.testing.assert_allclose(
            [s for _, s in got], list(expected.values()), rtol=1e-4
        )
        # Documents in order where their scores are apart.
        values = list(expected.values())
        for i, (doc, _) in enumerate(got):
            neighbours = [
                d
                for d, v in expected.items()
                if abs(v - values[i]) <= 1e-4 * abs(values[i])
            ]
            assert doc in neighbours
    metrics = splade_index["metrics"]["splade"]
    assert 0 <= metrics["mrr@10"] <= 1
    results = (splade_index["splade_out"] / "eval_results.txt").read_text()
    assert f"num_queries = {len(qrels)}" in results


@pytest.mark.slow
def test_hybrid_splade_dense_is_the_fusion_by_hand(splade_index):
    from bert_tf.retrieval.splade_vectors import splade_vectors

    queries = beir.read_queries(splade_index["data"])
    texts = [queries[q].text for q in list(queries)[:10]]
    dense_queries = splade_index["towers"].encode_queries(texts)
    splade_queries = splade_vectors(splade_index["splade"], texts, "query")
    sides = ("dense", "splade")
    with _store(splade_index) as store:
        dense = store.search(dense_queries, 8)
        splade = store.search_splade(splade_queries, 8)
        rrf = store.hybrid_search(
            dense_queries,
            None,
            8,
            "rrf",
            60,
            splade_queries=splade_queries,
            sides=sides,
        )
        weighted = store.hybrid_search(
            dense_queries,
            None,
            8,
            "weighted",
            weights=(0.3, 0.7),
            splade_queries=splade_queries,
            sides=sides,
        )
        with pytest.raises(UserInputError, match="needs bm25 vectors"):
            store.hybrid_search(dense_queries, [{}] * 10, 8, sides=("dense", "bm25"))
    overlap = 0
    for i in range(len(texts)):
        both = [(side.ids[i], side.scores[i]) for side in (dense, splade)]
        overlap += len(assert_rrf(both, (rrf.ids[i], rrf.scores[i]), 8))
        assert_weighted(both, (0.3, 0.7), (weighted.ids[i], weighted.scores[i]))
    assert overlap >= len(texts)  # the sides share passages to add up
    # The run's --do_eval fused the same way: its run.tsv is RRF's order.
    assert splade_index["metrics"]["hybrid"]["recall@10"] > 0.5


@pytest.mark.slow
def test_bert_tf_search_prints_the_splade_top_hits(splade_index):
    queries = beir.read_queries(splade_index["data"])
    qrels = beir.read_qrels(splade_index["data"], "test")
    some = list(qrels)[:3]
    # Milvus Lite serves a file to one process: this one's server (started
    # by the in-process runs) lets it go.
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(str(splade_index["out"] / "index.db"))
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "search.py"),
            f"--index={splade_index['out']}",
            "--retrieval_mode=splade",
            "--top_k=3",
            "--output_format=jsonl",
            *[queries[q].text for q in some],
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env=script_env(),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    run = read_run_scores(splade_index["splade_out"] / "run.tsv")
    for q, line in zip(some, lines, strict=True):
        # Passages here, documents in run.tsv: a document's best passage.
        docs = []
        for hit in line["hits"]:
            if hit["doc_id"] not in docs:
                docs.append(hit["doc_id"])
        assert docs == [d for d, _ in run[q]][: len(docs)]
        assert line["hits"][0]["score"] == pytest.approx(run[q][0][1], rel=1e-4)


def test_an_empty_splade_vector_is_stored_and_scores_nothing(tmp_path):
    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.retrieval.vector_store import StoredPassage

    rows = [StoredPassage(i, i, "h") for i in ("empty", "one", "two")]
    vectors = [{}, {3: 1.5}, {3: 0.5, 7: 2.0}]
    with MilvusStore(
        str(tmp_path / "i.db"),
        "c",
        4,
        "m",
        dense=False,
        splade=True,
        splade_fingerprint="s",
    ) as store:
        store.upsert(rows, None, splade=vectors)
        assert store.sparse_vectors() == dict(
            zip(("empty", "one", "two"), vectors, strict=True)
        )
        found = store.search_splade([{3: 2.0}, {7: 1.0}, {}], 5)
        with pytest.raises(UserInputError, match="holds no BM25 vectors"):
            store.search_lexical([{}], 5)
    assert found.ids == [["one", "two"], ["two"], []]
    np.testing.assert_allclose(found.scores[0], [3.0, 1.0])


def test_splade_flags_are_one_line(tmp_path, minilm_dir):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d", "text": "a"}\n')

    def options(**kwargs):
        return RetrievalOptions(data_dir=str(tmp_path), **kwargs)

    with pytest.raises(UserInputError, match="splade: needs --splade_checkpoint"):
        options(retrieval_mode="splade")
    with pytest.raises(UserInputError, match="dense,splade: needs --splade_check"):
        options(retrieval_mode="hybrid", hybrid_sides="dense,splade")
    with pytest.raises(UserInputError, match="not a SparseEncoder .* dense model"):
        options(retrieval_mode="splade", splade_checkpoint=minilm_dir)
    with pytest.raises(UserInputError, match="--splade_checkpoint: used by"):
        options(splade_checkpoint=minilm_dir)
    with pytest.raises(UserInputError, match="--hybrid_sides=dense: two or three"):
        options(retrieval_mode="hybrid", hybrid_sides="dense")
    with pytest.raises(UserInputError, match="--hybrid_sides=dense,colbert"):
        options(retrieval_mode="hybrid", hybrid_sides="dense,colbert")
    with pytest.raises(UserInputError, match="--hybrid_sides=.*: fuses hybrid"):
        options(hybrid_sides="dense,splade")
    with pytest.raises(UserInputError, match="--splade_weight=0.2: splade is not in"):
        options(retrieval_mode="hybrid", fusion="weighted", splade_weight=0.2)
    with pytest.raises(UserInputError, match="--vector_type=int8: --retrieval_mode"):
        options(vector_type="int8", retrieval_mode="bm25")
    with pytest.raises(UserInputError, match="not a MultiVectorEncoder"):
        options(rerank_multi_vector=minilm_dir)
    hybrid = options(retrieval_mode="hybrid", hybrid_sides="bm25,dense")
    assert hybrid.sides == ("dense", "bm25")  # HYBRID_SIDES order
    assert hybrid.weights() == (0.5, 0.5)
    # The command line: one line, exit 2, before TensorFlow loads.
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "run_retrieval.py"),
            f"--data_dir={tmp_path}",
            f"--output_dir={tmp_path / 'out'}",
            "--do_eval",
            "--retrieval_mode=splade",
            f"--splade_checkpoint={minilm_dir}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=script_env(),
    )
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if "splade" in line]
    assert len(errors) == 1 and "not a SparseEncoder" in errors[0], result.stderr
