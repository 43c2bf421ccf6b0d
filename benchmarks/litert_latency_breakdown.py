"""Where LiteRT's batch-1 time goes: tokenizer vs encoder, padding, threads, XNNPACK.

Exports the MiniLM pair classifier of benchmarks/litert_latency.py (or
`--shape base`) as LiteRT dynamic_int8 and float32, then times batch-1 calls
on the first 60 MRPC dev pairs (p50 ms, median of `--rounds`), each
interpreter configuration taking turns:

* `serving_default` on raw text (tokenizer in the graph),
* `serve_tokenized` on the original's ids at each pair's own length (what
  `serving_default` pads to: the model without the tokenizer),
* `serve_tokenized` padded to 128 and to 64 (pairs that fit),

for interpreters with 2 and 1 threads, without the default XNNPACK delegate
(`OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES`), and with
`experimental_default_delegate_latest_features`. Run it under the benchmark
lock; the Python runtime has no per-op profiler (LiteRT's `benchmark_model`
binary has one), so the split is by signature and shape.

    BERT_TF_DATA=../shared/data flock /tmp/bench.lock \\
        python benchmarks/litert_latency_breakdown.py [--shape minilm|base]
"""

import argparse
import os
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SEQ = 128
PAIRS = 60


def p50(call, items, count=40):
    """Median ms of `count` calls cycling over `items` (3 warm-up calls)."""
    for item in items[:3]:
        call(item)
    times = []
    for index in range(count):
        began = time.perf_counter()
        call(items[index % len(items)])
        times.append(1000 * (time.perf_counter() - began))
    return sorted(times)[len(times) // 2]


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", choices=("minilm", "base"), default="minilm")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        raise SystemExit("Set BERT_TF_DATA to the shared data folder (glue/MRPC).")

    import numpy as np
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps
    from ai_edge_litert.interpreter import OpResolverType
    from litert_latency import classifier
    from serving_throughput import read_tsv

    from bert_tf.data_prep import glue
    from bert_tf.serving import export_litert
    from bert_tf.text import tokenization

    rows = [
        (r[3], r[4]) for r in read_tsv(os.path.join(data, "glue", "MRPC", "dev.tsv"))
    ][:PAIRS]
    model, vocab, weights = classifier(args.shape, data)
    tmp = tempfile.mkdtemp(prefix="litert_breakdown_")
    paths = {}
    for quantization in ("dynamic_int8", "none"):
        paths[quantization] = os.path.join(tmp, f"{quantization}.tflite")
        export_litert(model, paths[quantization], vocab, True, SEQ, text_pair=True,
                      quantization=quantization)  # fmt: skip

    tokenizer = tokenization.FullTokenizer(vocab, True)
    ids = []
    for index, (a, b) in enumerate(rows):
        example = glue.InputExample(f"dev-{index}", a, b, "0")
        feature = glue.convert_single_example(index, example, ["0"], SEQ, tokenizer)
        length = sum(feature.input_mask)
        ids.append(
            {
                name: np.array([getattr(feature, name)[:length]], np.int32)
                for name in ("input_ids", "input_mask", "segment_ids")
            }
        )

    def padded(width):
        return [
            {k: np.pad(v, ((0, 0), (0, width - v.shape[1]))) for k, v in f.items()}
            for f in ids
            if f["input_ids"].shape[1] <= width
        ]

    texts = [
        {
            "text_a": np.array([a.encode()], object),
            "text_b": np.array([b.encode()], object),
        }
        for a, b in rows
    ]
    inputs = {
        "raw text": texts,
        "ids, own length": ids,
        "ids, padded 128": padded(128),
        "ids, padded 64": padded(64),
    }
    configurations = {}
    for quantization in paths:
        for label, threads, resolver, latest in (
            ("2 threads", 2, OpResolverType.AUTO, False),
            ("1 thread", 1, OpResolverType.AUTO, False),
            ("2 threads, no XNNPACK", 2,
             OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES, False),
            ("2 threads, XNNPACK latest", 2, OpResolverType.AUTO, True),
        ):  # fmt: skip
            interpreter = InterpreterWithCustomOps(
                custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
                model_path=paths[quantization],
                num_threads=threads,
                experimental_op_resolver_type=resolver,
                experimental_default_delegate_latest_features=latest,
            )
            configurations[f"{quantization}, {label}"] = (
                interpreter.get_signature_runner("serving_default"),
                interpreter.get_signature_runner("serve_tokenized"),
            )
    print(
        f"\n{args.shape} shape ({weights} weights), first {PAIRS} MRPC dev pairs "
        f"(mean {np.mean([f['input_ids'].shape[1] for f in ids]):.1f} word pieces), "
        f"batch 1, {os.cpu_count()} cores shared with other jobs, "
        f"{time.strftime('%Y-%m-%d %H:%M')}, rounds={args.rounds}",
        flush=True,
    )
    results = {name: [] for name in configurations}
    for _ in range(args.rounds):
        for name, (text_runner, ids_runner) in configurations.items():
            row = []
            for label, items in inputs.items():
                runner = text_runner if label == "raw text" else ids_runner
                row.append(p50(lambda x, runner=runner: runner(**x), items))
            results[name].append(row)
    print(f"\n{'p50 ms':38s}" + "".join(f"{name:>18s}" for name in inputs))
    for name, values in results.items():
        medians = np.median(np.array(values), axis=0)
        print(f"{name:38s}" + "".join(f"{value:18.1f}" for value in medians))


if __name__ == "__main__":
    main()
