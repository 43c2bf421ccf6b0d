"""BEIR reading, passages and the retrieval metrics (vs pytrec_eval, trec_eval's own code)."""

import json
import os
import random
import sys

import pytest

from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.metrics.retrieval import rank_documents
from bert_tf.metrics.retrieval import retrieval_metrics
from bert_tf.text.tokenization import FullTokenizer

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import squad_to_beir  # noqa: E402


def _write_beir(root, corpus_lines, query_lines, qrels_text, split="test"):
    os.makedirs(os.path.join(root, "qrels"), exist_ok=True)
    with open(os.path.join(root, "corpus.jsonl"), "w") as f:
        f.write("\n".join(corpus_lines) + "\n")
    with open(os.path.join(root, "queries.jsonl"), "w") as f:
        f.write("\n".join(query_lines) + "\n")
    with open(os.path.join(root, "qrels", f"{split}.tsv"), "w") as f:
        f.write(qrels_text)
    return str(root)


GOOD_CORPUS = [
    json.dumps({"_id": "d1", "title": "T", "text": "alpha beta"}),
    json.dumps({"_id": 7, "text": "gamma"}),
]
GOOD_QUERIES = [json.dumps({"_id": "q1", "text": "alpha?"})]


def test_reads_the_beir_layout(tmp_path):
    data_dir = _write_beir(
        tmp_path,
        GOOD_CORPUS,
        GOOD_QUERIES,
        "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\t7\t0\n",
    )
    corpus = beir.read_corpus(data_dir)
    queries = beir.read_queries(data_dir)
    assert corpus == {
        "d1": beir.Document("d1", "T", "alpha beta"),
        "7": beir.Document("7", "", "gamma"),
    }
    assert queries == {"q1": beir.Query("q1", "alpha?")}
    assert beir.read_qrels(data_dir, "test", queries, corpus) == {
        "q1": {"d1": 2, "7": 0}
    }


@pytest.mark.parametrize(
    "corpus_lines, qrels, message",
    [
        (GOOD_CORPUS + ["{not json"], None, "corpus.jsonl:3: not a JSON object"),
        (
            GOOD_CORPUS + [json.dumps({"_id": "d1", "text": "x"})],
            None,
            "corpus.jsonl:3: duplicate _id 'd1'",
        ),
        (
            [json.dumps({"title": "x", "text": "y"})],
            None,
            "corpus.jsonl:1: no '_id' field",
        ),
        (
            [json.dumps({"_id": "x", "text": 3})],
            None,
            "corpus.jsonl:1: 'text' must be a string",
        ),
        (
            GOOD_CORPUS,
            "query-id\tcorpus-id\tscore\nq1\td1\n",
            "test.tsv:2: expected 3 tab-separated columns",
        ),
        (
            GOOD_CORPUS,
            "query-id\tcorpus-id\tscore\nq1\td1\thigh\n",
            "test.tsv:2: score 'high' is not an integer",
        ),
        (
            GOOD_CORPUS,
            "query-id\tcorpus-id\tscore\nq1\td9\t1\n",
            "test.tsv:2: corpus-id 'd9' is not in corpus",
        ),
        (
            GOOD_CORPUS,
            "query-id\tcorpus-id\tscore\nq2\td1\t1\n",
            "test.tsv:2: query-id 'q2' is not in queries",
        ),
    ],
)
def test_bad_lines_are_one_error_naming_file_and_line(
    tmp_path, corpus_lines, qrels, message
):
    data_dir = _write_beir(
        tmp_path, corpus_lines, GOOD_QUERIES, qrels or "query-id\tcorpus-id\tscore\n"
    )
    with pytest.raises(UserInputError) as error:
        corpus = beir.read_corpus(data_dir)
        beir.read_qrels(data_dir, "test", beir.read_queries(data_dir), corpus)
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_bad_utf8_names_the_line(tmp_path):
    data_dir = _write_beir(tmp_path, GOOD_CORPUS, GOOD_QUERIES, "")
    with open(os.path.join(data_dir, "queries.jsonl"), "ab") as f:
        f.write(b'{"_id": "q2", "text": "\xff"}\n')
    with pytest.raises(UserInputError, match=r"queries.jsonl:2: not UTF-8"):
        beir.read_queries(data_dir)


def test_missing_split_is_a_file_not_found(tmp_path):
    data_dir = _write_beir(tmp_path, GOOD_CORPUS, GOOD_QUERIES, "")
    with pytest.raises(FileNotFoundError):
        beir.read_qrels(data_dir, "dev")


def _windows_cover_every_word(doc, passages, count, length, stride):
    """Checks passages of one document against the splitting rules."""
    words = doc.text.split()
    prefix = f"{doc.title} " if doc.title else ""
    covered = set()
    starts = []
    position = 0
    for passage in passages:
        window = passage.text[len(prefix) :].split()
        assert passage.text.startswith(prefix)
        # Locate the window in the document (windows advance monotonically).
        while words[position : position + len(window)] != window:
            position += 1
        starts.append(sum(count(w) for w in words[:position]))
        covered.update(range(position, position + len(window)))
        assert sum(count(w) for w in window) <= length or len(window) == 1
    assert covered == set(range(len(words)))
    for before, after in zip(starts, starts[1:], strict=False):
        assert 0 < after - before <= stride


def test_passages_of_real_squad_paragraphs(shared_data):
    tokenizer = FullTokenizer(
        os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt"),
        do_lower_case=True,
    )
    with open(os.path.join(shared_data, "squad/dev-v1.1.json")) as f:
        article = json.load(f)["data"][0]
    corpus = {
        str(i): beir.Document(str(i), article["title"], p["context"])
        for i, p in enumerate(article["paragraphs"][:20])
    }

    def count(word):
        return len(tokenizer.tokenize(word))

    passages = beir.split_passages(corpus, count, passage_length=64, passage_stride=32)
    by_doc = {}
    for passage in passages:
        by_doc.setdefault(passage.doc_id, []).append(passage)
    assert list(by_doc) == list(corpus)  # corpus order, every document
    assert any(len(p) > 2 for p in by_doc.values())
    for doc_id, doc_passages in by_doc.items():
        if len(doc_passages) > 1:
            assert [p.id for p in doc_passages] == [
                f"{doc_id}#{i}" for i in range(len(doc_passages))
            ]
        _windows_cover_every_word(corpus[doc_id], doc_passages, count, 64, 32)
    # A document that fits is one passage with the document's own id.
    whole = beir.split_passages(corpus, count, passage_length=512, passage_stride=256)
    assert [p.id for p in whole] == list(corpus)
    assert whole[0].text == f"{article['title']} " + " ".join(corpus["0"].text.split())


def test_passage_flags_are_checked():
    from bert_tf.cli.command import one_line

    corpus = {"d": beir.Document("d", "", "a b")}
    with pytest.raises(UserInputError, match="^passage_stride: .* passage_length") as e:
        beir.split_passages(corpus, len, 4, 5)
    # The tools name the flags.
    assert one_line(e.value).startswith("--passage_stride: must be between 1 and --")
    with pytest.raises(UserInputError, match="^passage_length"):
        beir.split_passages(corpus, len, 0, 1)


def test_fold_to_documents_keeps_each_documents_best_passage():
    ranked = [("a#1", 0.9), ("b", 0.8), ("a#0", 0.7), ("c#0", 0.6), ("c#1", 0.5)]
    doc_ids = {"a#0": "a", "a#1": "a", "b": "b", "c#0": "c", "c#1": "c"}
    assert beir.fold_to_documents(ranked, doc_ids, 10) == [
        ("a", 0.9),
        ("b", 0.8),
        ("c", 0.6),
    ]
    assert beir.fold_to_documents(ranked, doc_ids, 2) == [("a", 0.9), ("b", 0.8)]


def test_metrics_hand_checked():
    qrels = {"q1": {"d1": 2, "d2": 1, "d3": 0}, "q2": {"d9": 1}}
    run = {
        "q1": {"d3": 0.9, "d2": 0.8, "d5": 0.7, "d1": 0.1},
        "q2": {"d8": 0.5},
    }
    metrics = retrieval_metrics(
        qrels, run, ("recall@1", "recall@2", "recall@4", "mrr@10", "ndcg@10")
    )
    # q1: ranks d3 (rel 0), d2 (1), d5 (-), d1 (2); q2 finds nothing.
    assert metrics["recall@1"] == 0.0
    assert metrics["recall@2"] == pytest.approx((1 / 2) / 2)
    assert metrics["recall@4"] == pytest.approx(1 / 2)
    assert metrics["mrr@10"] == pytest.approx((1 / 2) / 2)
    dcg = 1 / 1.584962500721156 + 2 / 2.321928094887362
    idcg = 2 / 1 + 1 / 1.584962500721156
    assert metrics["ndcg@10"] == pytest.approx((dcg / idcg) / 2)


def test_ties_rank_as_trec_eval_does():
    assert [d for d, _ in rank_documents({"a": 1.0, "c": 1.0, "b": 2.0})] == [
        "b",
        "c",
        "a",
    ]


def test_metrics_equal_pytrec_eval_on_random_runs():
    pytrec_eval = pytest.importorskip(
        "pytrec_eval", reason="pytrec-eval-terrier (test extra)"
    )
    rng = random.Random(0)
    docs = [f"d{i}" for i in range(300)]
    qrels, run = {}, {}
    for q in range(60):
        qid = f"q{q}"
        qrels[qid] = {
            d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 6))
        }
        # Scores with ties (rounded) so tie-breaking is exercised too.
        run[qid] = {d: round(rng.random(), 2) for d in rng.sample(docs, 150)}
        run[qid].update(
            {d: round(rng.random(), 1) for d in qrels[qid] if rng.random() < 0.7}
        )
    ours = retrieval_metrics(qrels, run)
    measures = {"recall.1,5,10,100", "ndcg_cut.10"}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    for k in (1, 5, 10, 100):
        want = sum(v[f"recall_{k}"] for v in per_query.values()) / len(qrels)
        assert ours[f"recall@{k}"] == pytest.approx(want, abs=1e-12)
    want = sum(v["ndcg_cut_10"] for v in per_query.values()) / len(qrels)
    assert ours["ndcg@10"] == pytest.approx(want, abs=1e-12)
    # MRR@10: trec_eval's recip_rank of each query's first 10 documents.
    top10 = {q: dict(rank_documents(scores)[:10]) for q, scores in run.items()}
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(top10)
    want = sum(v["recip_rank"] for v in rr.values()) / len(qrels)
    assert ours["mrr@10"] == pytest.approx(want, abs=1e-12)
    assert 0 < ours["mrr@10"] < 1 and 0 < ours["ndcg@10"] < 1


def test_squad_dev_as_beir(shared_data, tmp_path):
    counts = squad_to_beir.convert(
        os.path.join(shared_data, "squad/dev-v1.1.json"), str(tmp_path)
    )
    paragraphs, questions, train, test = counts
    assert (paragraphs, questions) == (2067, 10570)
    assert train + test == questions and train > 4000 and test > 4000
    corpus = beir.read_corpus(str(tmp_path))
    queries = beir.read_queries(str(tmp_path))
    qrels = {
        split: beir.read_qrels(str(tmp_path), split, queries, corpus)
        for split in ("all", "train", "test")
    }
    assert len(corpus) == 2067 and len(qrels["all"]) == 10570
    assert not set(qrels["train"]) & set(qrels["test"])
    train_docs = {d for judged in qrels["train"].values() for d in judged}
    test_docs = {d for judged in qrels["test"].values() for d in judged}
    assert not train_docs & test_docs  # halves split by article, so paragraphs too
    # The first question of the file is about Super Bowl 50's first paragraph.
    assert qrels["all"]["56be4db0acb8001400a502ec"] == {"Super_Bowl_50_0": 1}


def test_pairs_table_as_beir(shared_data, tmp_path):
    from bert_tf.data_prep import beir_conversion
    from bert_tf.errors import UserInputError

    # MRPC's paraphrase pairs as (query, passage): the first sentence asks for
    # the second.
    rows = []
    with open(os.path.join(shared_data, "glue/MRPC/dev.tsv"), encoding="utf-8") as f:
        for line in list(f)[1:41]:
            fields = line.rstrip("\n").split("\t")
            rows.append((fields[3], fields[4]))
    rows.append(rows[0])  # a repeated pair is one judgement
    table = tmp_path / "pairs.tsv"
    table.write_text("sentence1\tsentence2\n" + "".join(f"{q}\t{p}\n" for q, p in rows))
    out = tmp_path / "beir"
    counts = beir_conversion.pairs_to_beir(
        str(table), str(out), query_column="sentence1", passage_column="sentence2"
    )
    distinct = len({q for q, _ in rows})
    assert counts["pairs"] == 41 and counts["queries"] == distinct
    assert counts["train"] + counts["test"] == len(set(rows))
    corpus = beir.read_corpus(str(out))
    queries = beir.read_queries(str(out))
    qrels = beir.read_qrels(str(out), "all", queries, corpus)
    texts = {
        (queries[q].text, corpus[d].text) for q, judged in qrels.items() for d in judged
    }
    assert texts == set(rows)
    assert not set(beir.read_qrels(str(out), "train")) & set(
        beir.read_qrels(str(out), "test")
    )
    with pytest.raises(UserInputError, match="query_column='question' is not in"):
        beir_conversion.pairs_to_beir(str(table), str(out), query_column="question")
    table.write_text("query\tpassage\nwhat\t\n")
    with pytest.raises(UserInputError, match=r"pairs.tsv:2: empty query or passage"):
        beir_conversion.pairs_to_beir(str(table), str(out))


@pytest.mark.slow
def test_the_installed_converter_writes_squad_as_beir(shared_data, tmp_path):
    import subprocess
    import sys

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bert_tf.cli.beir",
            f"--squad_file={os.path.join(shared_data, 'squad/dev-v1.1.json')}",
            f"--output_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "2067 documents, 10570 queries" in result.stdout
    assert len(beir.read_corpus(str(tmp_path))) == 2067
    bad = subprocess.run(
        [sys.executable, "-m", "bert_tf.cli.beir", f"--output_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 2
    assert (
        bad.stderr.strip() == "beir: error: Give one of --squad_file or --pairs_file."
    )


def test_passage_ids_never_collide_with_document_ids():
    """Issue 50: a long `coll` cut into coll#0, coll#1 beside a document named
    coll#0 shared a passage id (one passage was lost in the index)."""
    corpus = {
        "coll": beir.Document("coll", "", "a b c d e"),
        "coll#0": beir.Document("coll#0", "", "x"),
        "coll##1": beir.Document("coll##1", "", "y"),
    }
    passages = beir.split_passages(corpus, lambda word: 1, 3, 2)
    ids = [p.id for p in passages]
    assert len(set(ids)) == len(ids) == 4
    assert ids == ["coll###0", "coll###1", "coll#0", "coll##1"]
    assert [p.doc_id for p in passages] == ["coll", "coll", "coll#0", "coll##1"]


def test_documents_cut_one_at_a_time_with_taken_ids_as_the_whole_corpus():
    """A Beam worker cuts one document at a time, given the corpus's ids that
    hold the separator: the passages are the whole corpus's."""
    corpus = {
        "coll": beir.Document("coll", "", "a b c d e"),
        "coll#0": beir.Document("coll#0", "", "x"),
        "coll##1": beir.Document("coll##1", "", "y"),
        "plain": beir.Document("plain", "t", "f g h i"),
    }
    whole = beir.split_passages(corpus, lambda word: 1, 3, 2)
    taken = [i for i in corpus if beir.PASSAGE_SEPARATOR in i]
    parts = [
        p
        for doc in corpus.values()
        for p in beir.split_passages({doc.id: doc}, lambda word: 1, 3, 2, taken)
    ]
    assert parts == whole
    alone = beir.split_passages({"coll": corpus["coll"]}, lambda word: 1, 3, 2)
    assert [p.id for p in alone] != [p.id for p in whole[:2]]  # taken matters


def test_a_fold_short_of_documents_says_why(caplog):
    """Issue 61.11: documents of 200 passages make the fold ask 100 x 200
    passages a query, beyond the 16,384 Milvus returns: the queries that come
    back with fewer documents than asked are counted in one warning, with
    the reason; an index that returns fewer passages than asked, too."""
    import logging

    from bert_tf.retrieval.document_search import documents_found
    from bert_tf.retrieval.milvus_schema import MAX_TOP_K
    from bert_tf.retrieval.vector_store import SearchResults

    passages = [
        beir.Passage(f"d{d}#{i}", f"d{d}", "t") for d in range(100) for i in range(200)
    ]
    ranked = [p.id for p in passages]  # each document's passages together

    def milvus(depth, returned=MAX_TOP_K):
        kept = ranked[: min(depth, returned)]
        return SearchResults([kept], [list(range(len(kept), 0, -1))])

    with caplog.at_level(logging.WARNING):
        (found,) = documents_found(milvus, passages, 100)
    assert len(found) == 82  # 16,384 passages hold 82 documents
    (record,) = caplog.records
    assert record.getMessage() == (
        "1 of 1 queries got fewer than 100 documents (as few as 82): the fold "
        "needs 20000 passages a query (top k x the 200 passages of the longest "
        "document), more than Milvus returns (16384)"
    )
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        (found,) = documents_found(milvus, passages, 50)  # 10,000 passages
        assert len(found) == 50 and not caplog.records
        documents_found(lambda depth: milvus(depth, 1000), passages, 50)
    (record,) = caplog.records
    assert "(as few as 5): the index returned fewer passages" in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING):  # BM25 finds what shares a word
        documents_found(lambda depth: milvus(depth, 1000), passages, 50, False)
    assert not caplog.records
