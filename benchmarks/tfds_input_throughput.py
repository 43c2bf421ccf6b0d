"""Input throughput of run_classifier on MRPC: TFDS (--tfds_name) against the files.

Times the input path of a training run up to batched features, per stage:
reading the examples (GLUE TSV files, or the TFDS dataset glue/mrpc), WordPiece
features, writing train.tf_record, and reading it back as batches of 32 (the
eval/predict dataset of run_classifier). The TFDS dataset is first built once,
offline, by TFDS's own glue builder from the MRPC source files in
$BERT_TF_DATA/glue/MRPC (that one-off preparation is timed separately). The two
inputs take turns over --rounds rounds; the median is printed, because a shared
machine has bursts of outside load.

    BERT_TF_DATA=../shared/data python benchmarks/tfds_input_throughput.py [--rounds 3]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

SEQ_LENGTH = 128
BATCH_SIZE = 32
STAGES = ("read examples", "features", "write records", "batches")


def run_input_path(get_examples, tokenizer, label_list, record_file):
    """Seconds per stage and the number of examples."""
    from bert_tf.data_prep import glue
    from bert_tf.data_prep.classifier_records import record_dataset
    from bert_tf.data_prep.classifier_records import write_classifier_records

    seconds = {}
    began = time.perf_counter()
    examples = get_examples()
    seconds["read examples"] = time.perf_counter() - began

    began = time.perf_counter()
    features = glue.convert_examples_to_features(
        examples, label_list, SEQ_LENGTH, tokenizer
    )
    seconds["features"] = time.perf_counter() - began

    began = time.perf_counter()
    write_classifier_records(features, record_file, is_regression=False)
    seconds["write records"] = time.perf_counter() - began

    began = time.perf_counter()
    count = 0
    for batch in record_dataset(record_file, SEQ_LENGTH, False, BATCH_SIZE):
        count += int(batch["input_ids"].shape[0])
    seconds["batches"] = time.perf_counter() - began
    assert count == len(examples)
    return seconds, len(examples)


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        sys.exit("Set BERT_TF_DATA to the shared data folder (it holds glue/MRPC).")
    from absl import logging

    logging.set_verbosity(logging.WARNING)
    from bert_tf.data_prep import glue
    from bert_tf.data_prep import tfds_input
    from bert_tf.text import tokenization

    # The offline TFDS build the tests use (tests/tfds_local_files.py).
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from tfds_local_files import prepare_from_local_files

    tfds_input.import_tfds().disable_progress_bar()
    mrpc = os.path.join(data, "glue", "MRPC")
    work = tempfile.mkdtemp(prefix="tfds_input_")
    began = time.perf_counter()
    prepare_from_local_files(
        "glue/mrpc",
        os.path.join(work, "tfds"),
        {
            "mrpc_dev_ids.tsv": os.path.join(mrpc, "dev_ids.tsv"),
            "msr_paraphrase_train.txt": os.path.join(mrpc, "msr_paraphrase_train.txt"),
            "msr_paraphrase_test.txt": os.path.join(mrpc, "msr_paraphrase_test.txt"),
        },
    )
    prepare_seconds = time.perf_counter() - began

    vocab = os.path.join(data, "vocab", "bert-base-uncased", "vocab.txt")
    files = glue.get_processor("mrpc")
    label_list = files.get_labels()
    inputs = {
        "files": lambda: files.get_train_examples(mrpc),
        # A new processor each time: no builder kept from the previous round.
        "tfds": lambda: tfds_input.TfdsGlueProcessor(
            "glue/mrpc", data_dir=os.path.join(work, "tfds"), download=False
        ).get_train_examples(),
    }
    timings = {name: [] for name in inputs}
    num_examples = None
    for round_index in range(args.rounds):
        for name, get_examples in inputs.items():
            # A fresh tokenizer each time: its word cache would favour the
            # second input.
            tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=True)
            seconds, num_examples = run_input_path(
                get_examples,
                tokenizer,
                label_list,
                os.path.join(work, f"{name}.tf_record"),
            )
            timings[name].append(seconds)
            print(
                f"round {round_index + 1} {name}: "
                + ", ".join(f"{stage} {seconds[stage]:.3f}s" for stage in STAGES),
                flush=True,
            )

    print(
        f"\nMRPC train ({num_examples} examples), seq {SEQ_LENGTH}, batch {BATCH_SIZE}, "
        f"{os.cpu_count()} cores, median of {args.rounds} rounds; TFDS one-off "
        f"preparation {prepare_seconds:.1f} s"
    )
    print(f"| input | {' | '.join(STAGES)} | total s | examples/s |")
    print(f"|---|{'---|' * (len(STAGES) + 2)}")
    for name, rounds in timings.items():
        medians = {s: statistics.median(r[s] for r in rounds) for s in STAGES}
        total = statistics.median(sum(r.values()) for r in rounds)
        cells = " | ".join(f"{medians[s]:.3f}" for s in STAGES)
        print(f"| {name} | {cells} | {total:.2f} | {num_examples / total:,.0f} |")
        read = medians["read examples"]
        print(f"  {name}: reading alone {num_examples / read:,.0f} examples/s")


if __name__ == "__main__":
    main()
