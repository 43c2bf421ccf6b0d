"""BM25, hybrid search and quantized vectors in Milvus Lite for real (no mocked client).

BM25 is checked against bm25s (an independent implementation) on SQuAD dev
paragraphs with our tokenization; hybrid search against the fusion computed
from the two sides' own results; int8 / binary against numpy; a rerun with
documents added, changed and removed against a fresh index of the new corpus.
"""

import math
import os

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")

from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from fusion_checks import assert_rrf  # noqa: E402
from fusion_checks import assert_weighted  # noqa: E402

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.errors import UserInputError  # noqa: E402
from bert_tf.metrics.retrieval import retrieval_metrics  # noqa: E402
from bert_tf.retrieval import milvus_search  # noqa: E402
from bert_tf.retrieval import quantized_vectors  # noqa: E402
from bert_tf.retrieval.bm25 import BM25Statistics  # noqa: E402
from bert_tf.retrieval.bm25 import lexical_terms  # noqa: E402
from bert_tf.retrieval.bm25 import query_vector  # noqa: E402
from bert_tf.retrieval.document_search import retrieve_documents  # noqa: E402
from bert_tf.retrieval.milvus_store import MilvusStore  # noqa: E402
from bert_tf.retrieval.vector_store import StoredPassage  # noqa: E402

DIM = 32
NUM_DOCS = 400


def _whole_documents(corpus):
    """One passage per document (its title and text), no model needed."""
    return beir.split_passages(corpus, lambda word: 1, 10**6, 10**6)


def _bm25_store(path, collection="bm25", **kwargs):
    return MilvusStore(
        str(path), collection, DIM, "none", dense=False, lexical=True, **kwargs
    )


@pytest.fixture(scope="module")
def squad_docs(squad_beir):  # noqa: F811
    """The first NUM_DOCS SQuAD dev paragraphs and their questions."""
    corpus = dict(list(beir.read_corpus(squad_beir).items())[:NUM_DOCS])
    queries = beir.read_queries(squad_beir)
    qrels = {
        q: judged
        for q, judged in beir.read_qrels(squad_beir, "all").items()
        if set(judged) <= set(corpus)
    }
    return corpus, queries, qrels


def _index(passages, store, **kwargs):
    from bert_tf.retrieval.indexing import index_corpus

    return index_corpus(None, passages, store, **kwargs)


def test_bm25_matches_bm25s_on_squad(squad_docs, tmp_path):
    bm25s = pytest.importorskip("bm25s", reason="bm25s (test extra) is not installed")
    corpus, queries, qrels = squad_docs
    passages = _whole_documents(corpus)
    query_ids = list(qrels)
    texts = [queries[q].text for q in query_ids]
    with _bm25_store(tmp_path / "i.db") as store:
        counts = _index(passages, store)
        assert counts["embedded"] == len(passages)
        found = retrieve_documents(store, passages, 10, "bm25", query_texts=texts)
    ours = {q: dict(f) for q, f in zip(query_ids, found, strict=True)}

    reference = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    reference.index([lexical_terms(p.text) for p in passages], show_progress=False)
    docs, scores = reference.retrieve(
        [lexical_terms(t) for t in texts], k=10, show_progress=False
    )
    theirs = {
        q: {passages[i].doc_id: float(s) for i, s in zip(row, srow, strict=True)}
        for q, row, srow in zip(query_ids, docs, scores, strict=True)
    }
    names = ("recall@1", "recall@10", "mrr@10")
    ours_metrics = retrieval_metrics(qrels, ours, names)
    theirs_metrics = retrieval_metrics(qrels, theirs, names)
    assert ours_metrics["recall@10"] > 0.5  # BM25 finds SQuAD's paragraphs
    for name in names:
        assert abs(ours_metrics[name] - theirs_metrics[name]) <= 0.002, name
    # The scores themselves: each query's best document and its BM25 score.
    for q in query_ids[:50]:
        best = max(theirs[q].values())
        assert max(ours[q].values()) == pytest.approx(best, rel=1e-4)


def _same_ranking(got_ids, got_scores, want_ids, want_scores, depth):
    """Scores equal (rtol 1e-5), ids equal where scores differ; a run of
    tied scores holds the same ids, unless it reaches the cut-off."""
    np.testing.assert_allclose(got_scores, want_scores, rtol=1e-5)
    start, n = 0, len(want_ids)
    while start < n:
        end = start + 1
        while end < n and math.isclose(
            want_scores[end], want_scores[start], rel_tol=1e-5
        ):
            end += 1
        if end < n or n < depth:
            assert set(got_ids[start:end]) == set(want_ids[start:end])
        start = end


def _in_process_bm25_is_what_milvus_returns(store, texts, depth=50):
    """`searched_for_evaluation`'s in-process BM25 copy of a Lite collection
    ranks as the collection's own `search_lexical` (an empty query too)."""
    from bert_tf.retrieval.document_search import searched_for_evaluation
    from bert_tf.retrieval.exact_lexical import ExactLexicalStore

    exact = searched_for_evaluation(store, "bm25")
    assert isinstance(exact, ExactLexicalStore) and len(exact) == len(store)
    assert searched_for_evaluation(store, "hybrid") is store
    lexical = [query_vector(t) for t in [*texts, "?!"]]
    want = store.search_lexical(lexical, depth)
    seen = []
    got = exact.search_lexical(lexical, depth, progress=seen.append)
    assert seen == [len(lexical)]
    assert want.ids[-1] == [] and got.ids[-1] == []
    assert sum(len(ids) == depth for ids in want.ids) >= len(texts) // 2
    for i in range(len(lexical)):
        _same_ranking(got.ids[i], got.scores[i], want.ids[i], want.scores[i], depth)


def test_rerun_keeps_bm25_statistics_right(squad_docs, tmp_path):
    corpus, queries, _ = squad_docs
    first = dict(list(corpus.items())[:120])
    with _bm25_store(tmp_path / "i.db") as store:
        _index(_whole_documents(first), store)
    # Rerun: 20 removed, one changed, 30 added.
    second = dict(list(corpus.items())[20:150])
    changed_id = next(iter(second))
    old = second[changed_id]
    second[changed_id] = old._replace(text=old.text + " zanzibar zanzibar")
    passages = _whole_documents(second)
    with _bm25_store(tmp_path / "i.db") as store:
        counts = _index(passages, store)
        assert counts == {
            "embedded": 31,
            "kept": 99,
            "removed": 20,
            "bm25_rewritten": 99,
            "texts_truncated": 0,
        }
        stored = store.lexical_vectors()
        stats = BM25Statistics([lexical_terms(p.text) for p in passages])
        assert store.bm25_digest == stats.digest
        assert sorted(stored) == sorted(p.id for p in passages)
        for p, expected in zip(passages, stats.passage_vectors(), strict=True):
            assert set(stored[p.id]) == set(expected)
            np.testing.assert_allclose(
                [stored[p.id][t] for t in expected], list(expected.values()), rtol=1e-6
            )
        texts = [queries[q].text for q in list(queries)[:40]] + ["zanzibar"]
        rerun = retrieve_documents(store, passages, 10, "bm25", query_texts=texts)
        _in_process_bm25_is_what_milvus_returns(store, texts[:30] + texts[-1:])
        # A third run of the same corpus rewrites nothing.
        assert _index(passages, store)["bm25_rewritten"] == 0
    with _bm25_store(tmp_path / "fresh.db") as fresh:
        _index(passages, fresh)
        expected = retrieve_documents(fresh, passages, 10, "bm25", query_texts=texts)
    for got, want in zip(rerun, expected, strict=True):
        assert [d for d, _ in got] == [d for d, _ in want]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in want], rtol=1e-5)
    assert rerun[-1][0][0] == changed_id


def test_a_rewrite_killed_midway_is_redone(squad_docs, tmp_path):
    corpus, _, _ = squad_docs
    with _bm25_store(tmp_path / "i.db") as store:
        _index(_whole_documents(dict(list(corpus.items())[:60])), store)
    passages = _whole_documents(dict(list(corpus.items())[:80]))
    with _bm25_store(tmp_path / "i.db") as store:
        write = store.update_sparse

        def killed(ids, sparse):  # the run dies after writing half the rewrite
            write(ids[: len(ids) // 2], sparse[: len(ids) // 2])
            raise KeyboardInterrupt

        store.update_sparse = killed
        with pytest.raises(KeyboardInterrupt):
            _index(passages, store)
    with _bm25_store(tmp_path / "i.db") as store:
        counts = _index(passages, store)
        assert counts["embedded"] == 0 and counts["bm25_rewritten"] == 80
        stats = BM25Statistics([lexical_terms(p.text) for p in passages])
        stored = store.lexical_vectors()
        for p, expected in zip(passages, stats.passage_vectors(), strict=True):
            np.testing.assert_allclose(
                [stored[p.id].get(t, 0.0) for t in expected],
                list(expected.values()),
                rtol=1e-6,
            )
            assert set(stored[p.id]) == set(expected)


def _dense_rows(n, seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def test_hybrid_search_fuses_the_two_sides(squad_docs, tmp_path, monkeypatch):
    corpus, queries, _ = squad_docs
    passages = _whole_documents(dict(list(corpus.items())[:200]))
    rows = [StoredPassage(p.id, p.doc_id, "") for p in passages]
    vectors = _dense_rows(len(rows))
    stats = BM25Statistics([lexical_terms(p.text) for p in passages])
    texts = [queries[q].text for q in list(queries)[:30]]
    lexical = [query_vector(t) for t in texts]
    row_of = {p.id: i for i, p in enumerate(passages)}
    with MilvusStore(str(tmp_path / "i.db"), "hybrid", DIM, "m", lexical=True) as store:
        store.upsert(rows, vectors, sparse=stats.passage_vectors())
        sparse = store.search_lexical(lexical, 10)
        # Dense queries near BM25's third passage, so the two sides overlap.
        noise = _dense_rows(len(texts), seed=1)
        query_vectors = (
            np.stack([vectors[row_of[ids[2]]] for ids in sparse.ids]) + 0.3 * noise
        )
        dense = store.search(query_vectors, 10)
        rrf = store.hybrid_search(query_vectors, lexical, 10, "rrf", rrf_k=60)
        weighted = store.hybrid_search(
            query_vectors, lexical, 10, "weighted", weights=(0.3, 0.7)
        )
        # Deep searches are cut into requests of at most _HITS_PER_REQUEST
        # hits (Milvus's gRPC answers stop at 256 MB): the same results.
        monkeypatch.setattr(milvus_search, "_HITS_PER_REQUEST", 25)
        sizes = []
        for name in ("search", "hybrid_search"):
            method = getattr(store._client, name)

            def counted(*args, _method=method, _name=name, **kwargs):
                if _name == "search":
                    sizes.append(len(kwargs["data"]))
                else:
                    sizes.append(len(args[1][0].data))  # the dense request's
                return _method(*args, **kwargs)

            monkeypatch.setattr(store._client, name, counted)
        again = (
            (store.search(query_vectors, 10), dense),
            (store.search_lexical(lexical, 10), sparse),
            (store.hybrid_search(query_vectors, lexical, 10, "rrf", rrf_k=60), rrf),
        )
        for batched, whole in again:
            # Inner products summed per batch: float32 rounding apart.
            assert batched.ids == whole.ids
            np.testing.assert_allclose(batched.scores, whole.scores, rtol=1e-5)
        assert sizes and max(sizes) == 2 and sum(sizes) == 3 * len(texts)
    overlap = 0
    for i in range(len(texts)):
        sides = [(side.ids[i], side.scores[i]) for side in (dense, sparse)]
        shared = assert_rrf(sides, (rrf.ids[i], rrf.scores[i]), 10)
        overlap += len(shared)
        assert_weighted(sides, (0.3, 0.7), (weighted.ids[i], weighted.scores[i]))
    assert overlap >= len(texts)  # fusion had shared passages to add up


def test_int8_and_binary_rank_as_numpy_and_rescore_with_floats(tmp_path):
    rows = [StoredPassage(f"p{i}", f"d{i}", "") for i in range(300)]
    vectors = _dense_rows(300)
    queries = _dense_rows(12, seed=2)
    scale = quantized_vectors.fit_int8_scale(vectors)
    codes = quantized_vectors.int8_codes(vectors, scale)
    assert codes.dtype == np.int8 and np.abs(codes).max() == 127
    np.testing.assert_allclose(codes * scale, vectors, atol=scale.max() / 2 + 1e-7)
    q8 = quantized_vectors.int8_queries(queries, scale).astype(np.float32)
    int8_reference = q8 @ codes.T.astype(np.float32)
    bits = quantized_vectors.binary_signs(vectors)
    hamming = (quantized_vectors.binary_signs(queries)[:, None, :] != bits).sum(-1)

    for vector_type, reference in (("int8", int8_reference), ("binary", -hamming)):
        path = str(tmp_path / f"{vector_type}.db")
        with MilvusStore(path, "c", DIM, "m", vector_type=vector_type) as store:
            if vector_type == "int8":
                store.set_int8_scale(scale)
            store.upsert(rows, vectors)
            found = store.search(queries, 10)
            # What bert-tf-search shows without a recorded rescore_k: the
            # same top 10, scored (and ordered) by the float32 vectors.
            shown = store.search(queries, 10, rescore_k=10)
        for i in range(len(queries)):
            assert set(shown.ids[i]) == set(found.ids[i])
            rows_shown = [int(pid[1:]) for pid in shown.ids[i]]
            exact = vectors[rows_shown] @ queries[i]
            np.testing.assert_allclose(shown.scores[i], exact, rtol=1e-5)
            assert shown.scores[i] == sorted(shown.scores[i], reverse=True)
        # Reopened: the scale comes from the collection; rescoring by floats.
        with MilvusStore(
            path, "c", DIM, "m", vector_type=vector_type, rescore_k=40
        ) as store:
            if vector_type == "int8":
                np.testing.assert_array_equal(store.int8_scale, scale)
            rescored = store.search(queries, 10)
            stored, kept = store.vectors()
        order = [int(p.id[1:]) for p in stored]
        np.testing.assert_allclose(kept, vectors[order], rtol=1e-6)  # float copies
        for i in range(len(queries)):
            # Milvus's order is numpy's (ties aside): compare the scores.
            expected = np.sort(reference[i])[::-1][:10]
            np.testing.assert_allclose(found.scores[i], expected, rtol=1e-5)
            got = [reference[i][int(pid[1:])] for pid in found.ids[i]]
            np.testing.assert_allclose(got, expected, rtol=1e-5)
            # Rescored: the float inner products of a 40-deep shortlist by
            # the codes (ties at the 40th may be cut either way), best first.
            rows_found = [int(pid[1:]) for pid in rescored.ids[i]]
            exact = vectors @ queries[i]
            np.testing.assert_allclose(rescored.scores[i], exact[rows_found], rtol=1e-5)
            assert rescored.scores[i] == sorted(rescored.scores[i], reverse=True)
            cut = np.sort(reference[i])[::-1][39]
            assert all(reference[i][r] >= cut for r in rows_found)
            inside = np.flatnonzero(reference[i] > cut)
            better = inside[exact[inside] > min(rescored.scores[i]) + 1e-6]
            assert set(better) <= set(rows_found)


def api_rrf_top(run, top_n=5):
    """The documents the second stage re-scores: the first stage's best
    `top_n` in trec_eval's order."""
    from bert_tf.metrics.retrieval import rank_documents

    return [d for d, _ in rank_documents(run)[:top_n]]


def test_collection_of_another_kind_and_lite_bm25_function_are_one_line(tmp_path):
    path = str(tmp_path / "i.db")
    with MilvusStore(path, "c", DIM, "m", vector_type="int8"):
        pass
    with pytest.raises(UserInputError, match="holds int8 dense vectors, this run"):
        MilvusStore(path, "c", DIM, "m")
    with pytest.raises(UserInputError, match="Milvus Lite has no BM25 function"):
        MilvusStore(path, "d", DIM, "m", bm25_function=True)
    with pytest.raises(UserInputError, match="int8 collection needs its scale"):
        with MilvusStore(path, "c", DIM, "m", vector_type="int8") as store:
            store.upsert([StoredPassage("p", "d", "")], _dense_rows(1))


@pytest.mark.slow
def test_cli_modes_end_to_end(squad_beir, shared_data, tmp_path):  # noqa: F811
    """run_retrieval.py --retrieval_mode=hybrid / bm25 and --vector_type=int8
    through the CLI, checked against the Python API on the same collections."""

    import keras
    from beir_fixtures import squad_subset
    from cli_one_process import run_in_one_process
    from test_run_retrieval import _read_results
    from test_run_retrieval import _read_run
    from test_run_retrieval import _tiny_st_dir
    from tiny_models import tiny_bert_config

    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.text.preprocessing import BertPreprocessor

    data = squad_subset(squad_beir, tmp_path / "data", 40)
    encoder = _tiny_st_dir(shared_data, tmp_path / "tiny", 1)
    # The second stage of the last hybrid run: a tiny random cross-encoder.
    keras.utils.set_random_seed(6)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    rerank_dir = BertReranker(
        tiny_bert_config(30522, max_position_embeddings=128, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 128, padding="longest"),
    ).save_cross_encoder(str(tmp_path / "cross_encoder"))
    out = tmp_path / "out"
    common = [
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--init_checkpoint={encoder}",
    ]
    # The CLI runs one after another in one process (TensorFlow imported
    # once); each run's results are copied as it left them.
    keep = [out / "run.tsv", out / "eval_results.txt", out / "run_reranked.tsv"]
    runs = [
        # First: a later run's absl log does not reach its stderr here.
        [
            "--vector_type=int8",
            "--rescore_k=30",
            "--milvus_collection=int8",
            "--do_index",
            "--do_eval",
            "--eval_top_k=10",
        ],
        ["--retrieval_mode=hybrid", "--do_index", "--do_eval", "--eval_top_k=10"],
        [
            "--retrieval_mode=hybrid",
            "--fusion=weighted",
            "--do_eval",
            "--eval_top_k=10",
        ],
        [
            "--retrieval_mode=bm25",
            "--milvus_collection=bm25",
            "--do_index",
            "--do_eval",
        ],
        # The hybrid collection answers each side alone too, with the same BM25.
        ["--retrieval_mode=bm25", "--do_eval"],
        ["--retrieval_mode=dense", "--do_index", "--do_eval"],
        # Hybrid with the cross-encoder as the second stage.
        [
            "--retrieval_mode=hybrid",
            "--do_eval",
            "--eval_top_k=10",
            f"--rerank_checkpoint={rerank_dir}",
            "--rerank_top_k=5",
        ],
        ["--retrieval_mode=bm25", "--bm25_function", "--do_eval"],
    ]
    done = run_in_one_process(
        "run_retrieval",
        [{"argv": [*common, *flags], "keep": keep} for flags in runs],
        tmp_path / "cli",
    )
    for result in done[:-1]:
        assert result.returncode == 0, result.stderr[-4000:]
    hybrid_rrf = _read_run(os.path.join(done[1].kept, "run.tsv"))
    hybrid_weighted = _read_run(os.path.join(done[2].kept, "run.tsv"))
    bm25 = _read_results(os.path.join(done[3].kept, "eval_results.txt"))
    assert bm25["recall@10"] > 0.8  # BM25 on 40 SQuAD paragraphs
    assert _read_results(os.path.join(done[4].kept, "eval_results.txt")) == bm25
    results = _read_results(os.path.join(done[6].kept, "eval_results.txt"))
    assert "mrr@10_reranked" in results and "recall@10" in results
    # --eval_top_k=10 ranks 10 documents: no recall@100 (it would equal
    # recall@10), and the log says so; the int8 run's log names its vectors.
    assert not any(name.startswith("recall@100") for name in results)
    assert "Not reported: recall@100 (eval_top_k=10" in done[0].stderr
    assert "queries (dense, int8 vectors, rescoring 30) in" in done[0].stderr
    reranked_cli = _read_run(os.path.join(done[6].kept, "run_reranked.tsv"))
    lite = done[7]
    assert lite.returncode == 2
    assert "run_retrieval: error: --bm25_function: Milvus's BM25" in lite.stderr

    # The same searches through the Python API, on the collections the CLI wrote.
    from bert_tf.retrieval.indexing import passages_of
    from bert_tf.retrieval.indexing import towers_at

    towers = towers_at(encoder)
    passages = passages_of(beir.read_corpus(data), towers)
    queries = beir.read_queries(data)
    query_ids = list(beir.read_qrels(data, "test"))
    texts = [queries[q].text for q in query_ids]
    vectors = towers.encode_queries(texts)
    uri = str(out / "index.db")
    fingerprint = towers.fingerprint()
    with MilvusStore(uri, "bert_tf", 32, fingerprint, lexical=True) as store:
        assert len(store) == len(passages)
        for fusion, cli in (("rrf", hybrid_rrf), ("weighted", hybrid_weighted)):
            found = retrieve_documents(
                store, passages, 10, "hybrid", vectors, texts, fusion
            )
            for q, docs in zip(query_ids, found, strict=True):
                assert [d for d, _, _ in cli[q]] == [d for d, _ in docs]
            if fusion == "rrf":
                api_rrf = dict(zip(query_ids, map(dict, found), strict=True))
    # The second stage: the cross-encoder's order of the hybrid top 5.
    from bert_tf.retrieval.document_search import rerank_documents

    reranked = rerank_documents(
        BertReranker.from_checkpoint(rerank_dir),
        queries,
        api_rrf,
        passages,
        5,
    )
    for q in query_ids:
        cli_top = {d: score for d, _, score in reranked_cli[q][:5]}
        assert set(cli_top) == set(api_rrf_top(api_rrf[q]))
        for d, score in cli_top.items():
            assert reranked[q][d] == pytest.approx(score, abs=1e-4)
    with MilvusStore(uri, "int8", 32, fingerprint, vector_type="int8") as store:
        assert store.int8_scale.shape == (32,)
        _, floats = store.vectors()
        assert floats.shape == (len(passages), 32)
