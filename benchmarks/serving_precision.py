"""Serving precision: MRPC dev accuracy and speed of float32 vs bfloat16 exports.

Takes a fine-tuned MRPC output_dir (from benchmarks/mrpc_minilm.py, which
fine-tunes the MiniLM checkpoint), exports it with `--serving_dtype` float32,
bfloat16 (and float16 with --float16), loads each SavedModel as the model
server does and sends the real MRPC dev pairs as raw text to
`serving_default`: accuracy and F1 against the labels, agreement with the
float32 export, batch-32 throughput and batch-1 median latency.

    BERT_TF_DATA=../shared/data python benchmarks/serving_precision.py \\
        --output_dir /tmp/mrpc_out [--float16]
"""

import argparse
import csv
import os
import sys
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True)
    parser.add_argument("--float16", action="store_true")
    args = parser.parse_args()
    import numpy as np
    import tensorflow as tf

    import bert_tf
    from bert_tf.serving import export_saved_model

    with open(
        os.path.join(os.environ["BERT_TF_DATA"], "glue", "MRPC", "dev.tsv"),
        encoding="utf-8",
    ) as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    labels = np.array([int(r[0]) for r in rows])
    text_a, text_b = [r[3] for r in rows], [r[4] for r in rows]
    model = bert_tf.BertClassifier.from_checkpoint(args.output_dir, num_labels=2)
    vocab = os.path.join(args.output_dir, "vocab.txt")
    dtypes = ["float32", "bfloat16"] + (["float16"] if args.float16 else [])
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        for dtype in dtypes:
            path = export_saved_model(
                model, os.path.join(tmp, dtype), vocab, True, 128,
                text_pair=True, dtype=dtype, save_keras=False,
            )  # fmt: skip
            serve = tf.saved_model.load(path).signatures["serving_default"]
            predicted = []
            for i in range(0, len(rows), 32):
                out = serve(
                    text_a=tf.constant(text_a[i : i + 32]),
                    text_b=tf.constant(text_b[i : i + 32]),
                )
                predicted.append(out["label_ids"].numpy())
            predicted = np.concatenate(predicted)
            if reference is None:
                reference = predicted
            accuracy = (predicted == labels).mean()
            tp = ((predicted == 1) & (labels == 1)).sum()
            f1 = 2 * tp / ((predicted == 1).sum() + (labels == 1).sum())
            batch = {
                "text_a": tf.constant(text_a[:32]),
                "text_b": tf.constant(text_b[:32]),
            }
            serve(**batch)
            began = time.perf_counter()
            for _ in range(5):
                serve(**batch)
            throughput = 5 * 32 / (time.perf_counter() - began)
            latencies = []
            for i in range(40):
                one = {
                    "text_a": tf.constant(text_a[i : i + 1]),
                    "text_b": tf.constant(text_b[i : i + 1]),
                }
                began = time.perf_counter()
                serve(**one)
                latencies.append(time.perf_counter() - began)
            print(
                f"{dtype:9s} MRPC dev accuracy {100 * accuracy:.2f}  F1 {100 * f1:.2f}  "
                f"same label as float32 {100 * (predicted == reference).mean():.2f}%  "
                f"batch 32: {throughput:.1f} pairs/s  batch 1 p50: "
                f"{1000 * np.median(latencies):.1f} ms",
                flush=True,
            )  # fmt: skip


if __name__ == "__main__":
    main()
