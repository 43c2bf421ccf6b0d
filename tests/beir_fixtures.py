"""The BEIR data of the retrieval and re-ranking tests: SQuAD v1.1 dev as BEIR, and small cuts of it.

`squad_beir` (a session fixture) converts SQuAD v1.1 dev with
benchmarks/squad_to_beir.py once; `squad_subset` writes its first paragraphs
as a BEIR directory of their own. A test module imports the fixture and
defines its cut:

    from beir_fixtures import squad_beir  # noqa: F401  (fixture)
    from beir_fixtures import squad_subset

    @pytest.fixture(scope="module")
    def small_beir(squad_beir, tmp_path_factory):
        return squad_subset(squad_beir, tmp_path_factory.mktemp("small_beir"), 40)
"""

import json
import os
import sys

import pytest

from bert_tf.data_prep import beir

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_jsonl(path, rows):
    """`rows` (dicts) as JSON lines, UTF-8."""
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_qrels(path, pairs):
    """A BEIR qrels file judging each (query id, doc id) of `pairs` relevant (1)."""
    with open(path, "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"{q}\t{d}\t1\n" for q, d in pairs)


@pytest.fixture(scope="session")
def squad_beir(shared_data, tmp_path_factory):
    """SQuAD v1.1 dev as BEIR (2,067 paragraphs; qrels/all.tsv every question)."""
    sys.path.insert(0, os.path.join(REPO, "benchmarks"))
    import squad_to_beir

    full = tmp_path_factory.mktemp("squad_beir")
    squad_to_beir.convert(os.path.join(shared_data, "squad/dev-v1.1.json"), str(full))
    return str(full)


def squad_subset(full, directory, num_docs, max_test_pairs=None):
    """The first `num_docs` paragraphs of `full` and their questions as a BEIR
    directory: every third (question, paragraph) pair in qrels/test.tsv (at
    most `max_test_pairs`), the others in qrels/train.tsv. Returns its path."""
    corpus = list(beir.read_corpus(full).values())[:num_docs]
    doc_ids = {d.id for d in corpus}
    queries = beir.read_queries(full)
    pairs = [
        (q, d)
        for q, judged in beir.read_qrels(full, "all").items()
        for d in judged
        if d in doc_ids
    ]
    os.makedirs(os.path.join(directory, "qrels"))
    write_jsonl(
        os.path.join(directory, "corpus.jsonl"),
        [d._asdict() | {"_id": d.id} for d in corpus],
    )
    write_jsonl(
        os.path.join(directory, "queries.jsonl"),
        [{"_id": q, "text": queries[q].text} for q, _ in pairs],
    )
    write_qrels(os.path.join(directory, "qrels/test.tsv"), pairs[::3][:max_test_pairs])
    write_qrels(
        os.path.join(directory, "qrels/train.tsv"),
        [p for i, p in enumerate(pairs) if i % 3],
    )
    return str(directory)


def read_run_scores(path):
    """A TREC run file (run.tsv) as {query id: [(document id, score)]}, in
    the file's order."""
    run = {}
    for line in open(path):
        qid, _, doc_id, _, score, _ = line.split()
        run.setdefault(qid, []).append((doc_id, float(score)))
    return run
