"""--rerank_multi_vector: ColBERT's MaxSim over the first stage's candidates.

One BM25 index of a tiny SQuAD corpus (Milvus Lite, for real), a
MultiVectorEncoder sentence-transformers builds from MiniLM, and
sentence-transformers' own `similarity` as the reference order, in
run_retrieval --do_eval and in bert-tf-search.
"""

import json
import os

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")

from beir_fixtures import read_run_scores  # noqa: E402
from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from beir_fixtures import squad_subset  # noqa: E402
from cli_one_process import run_in_one_process  # noqa: E402

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.options import RetrievalOptions  # noqa: E402
from bert_tf.options import RunOptions  # noqa: E402

NUM_DOCS = 12
RERANK_TOP_K = 5


@pytest.fixture(scope="module")
def reranked_run(squad_beir, minilm_dir, tmp_path_factory):  # noqa: F811
    """run_retrieval --retrieval_mode=bm25 --do_index --do_eval
    --rerank_multi_vector, in process."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers_models import save_colbert

    from bert_tf.tasks import retrieval

    root = tmp_path_factory.mktemp("colbert")
    data = squad_subset(squad_beir, root / "data", NUM_DOCS, max_test_pairs=12)
    colbert_dir = save_colbert(minilm_dir, root / "colbert")
    out = root / "out"
    metrics = retrieval.run(
        RunOptions(
            output_dir=str(out),
            init_checkpoint=minilm_dir,
            do_lower_case=None,
            max_seq_length=None,
            do_predict=True,
            do_eval=True,
        ),
        RetrievalOptions(
            data_dir=data,
            retrieval_mode="bm25",
            eval_top_k=10,
            rerank_multi_vector=str(colbert_dir),
            rerank_top_k=RERANK_TOP_K,
        ),
    )
    st = pytest.importorskip("sentence_transformers", reason="test extra")
    model = st.MultiVectorEncoder(str(colbert_dir), device="cpu")
    return {
        "data": data,
        "out": out,
        "colbert_dir": str(colbert_dir),
        "minilm_dir": minilm_dir,
        "metrics": metrics,
        "st": model,
    }


def _passages(data, minilm_dir):
    """The passages run_retrieval cut (MiniLM's tokenizer, 254 / 127)."""
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)
    return beir.split_passages(
        beir.read_corpus(data), lambda w: len(tokenizer.tokenize(w)) or 1, 254, 127
    )


def _st_scores(model, query, texts):
    """sentence-transformers' MaxSim of `query` with each text."""
    q = model.encode_query([query])
    d = model.encode_document(list(texts))
    return np.asarray(model.similarity(q, d))[0]


@pytest.mark.slow
def test_maxsim_order_is_sentence_transformers_similarity(reranked_run):
    data = reranked_run["data"]
    queries = beir.read_queries(data)
    qrels = beir.read_qrels(data, "test")
    passages = _passages(data, reranked_run["minilm_dir"])
    first = read_run_scores(reranked_run["out"] / "run.tsv")
    second = read_run_scores(reranked_run["out"] / "run_reranked.tsv")
    assert set(second) == set(qrels)
    assert "mrr@10_reranked" in reranked_run["metrics"]
    for q in qrels:
        candidates = [d for d, _ in first[q][:RERANK_TOP_K]]
        # A document scores as its best passage.
        of = [p for p in passages if p.doc_id in candidates]
        per_passage = _st_scores(
            reranked_run["st"], queries[q].text, [p.text for p in of]
        )
        best = {}
        for p, score in zip(of, per_passage, strict=True):
            best[p.doc_id] = max(best.get(p.doc_id, -np.inf), float(score))
        scores = np.asarray([best[d] for d in candidates])
        order = [candidates[i] for i in np.argsort(-scores, kind="stable")]
        got = second[q]
        assert [d for d, _ in got[: len(order)]] == order
        np.testing.assert_allclose(
            [s for _, s in got[: len(order)]], sorted(scores, reverse=True), rtol=1e-4
        )
        # The documents after the candidates keep the first stage's order.
        assert [d for d, _ in got[len(order) :]] == [
            d for d, _ in first[q][RERANK_TOP_K:]
        ]


@pytest.mark.slow
def test_bert_tf_search_reranks_by_maxsim(reranked_run, tmp_path):
    from milvus_lite.server_manager import server_manager_instance

    # Milvus Lite serves a file to one process: this one's lets it go.
    server_manager_instance.release_server(str(reranked_run["out"] / "index.db"))
    data = reranked_run["data"]
    text_of = {p.id: p.text for p in _passages(data, reranked_run["minilm_dir"])}
    queries = beir.read_queries(data)
    texts = [queries[q].text for q in list(beir.read_qrels(data, "test"))[:3]]
    common = [f"--index={reranked_run['out']}", "--output_format=jsonl"]
    plain, reranked = run_in_one_process(
        "search",
        [
            [*common, f"--top_k={RERANK_TOP_K}", *texts],
            [
                *common,
                "--top_k=3",
                f"--rerank_top_k={RERANK_TOP_K}",
                f"--rerank_multi_vector={reranked_run['colbert_dir']}",
                *texts,
            ],
        ],
        str(tmp_path / "runs"),
    )
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert reranked.returncode == 0, reranked.stderr[-3000:]
    for first, second in zip(
        plain.stdout.splitlines(), reranked.stdout.splitlines(), strict=True
    ):
        first, second = json.loads(first), json.loads(second)
        candidates = first["hits"]
        scores = _st_scores(
            reranked_run["st"], first["query"], [text_of[h["id"]] for h in candidates]
        )
        order = np.argsort(-scores, kind="stable")[:3]
        assert [h["id"] for h in second["hits"]] == [candidates[i]["id"] for i in order]
        np.testing.assert_allclose(
            [h["score"] for h in second["hits"]], scores[order], rtol=1e-4
        )
        assert [h["first_stage_score"] for h in second["hits"]] == pytest.approx(
            [candidates[i]["score"] for i in order]
        )
