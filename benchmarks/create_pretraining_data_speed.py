"""create_pretraining_data.py speed and memory on the issue's workload.

Builds the original's measurement corpus from $BERT_TF_DATA/squad/dev-v1.1.json (SQuAD v1.1
dev contexts split after . ! ? + whitespace, one sentence per line, a blank
line after each paragraph: 10,598 sentences, 1.6 MB) and a corpus 4x larger
(the same paragraphs repeated, as different documents), then runs the real
command line (create_pretraining_data.py, uncased vocab, seq 128, 20
predictions, dupe_factor 5, seed 12345) as a subprocess for each
configuration and prints:

* wall time of the whole command (Python start-up and imports included);
* max RSS: the largest single process (os.wait4 rusage of the command, which
  covers its worker processes too), and the peak total memory of the command
  and its workers together (sum of their PSS, which counts pages shared after
  fork once; sampled from /proc every 10 ms, Linux only);
* the statistics measured from the original (instances, % of tokens predicted, 80/10/10,
  random next, < 64 tokens, mean length), read back without TensorFlow.

    BERT_TF_DATA=/path/to/shared/data python benchmarks/create_pretraining_data_speed.py
    python benchmarks/create_pretraining_data_speed.py --repeats 3 --workers 1 2 4
    python benchmarks/create_pretraining_data_speed.py --repo /tmp/old_checkout

The original (TF 2.21 compat.v1, 2 cores) took 21.2 s wall and 708 MB RSS on
the 1x corpus; issue target: <= 5 s with 2 cores, and an RSS that does not grow
with the corpus. Timings depend on machine load: run it more than once.
"""

import argparse
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

from cpu_flags import cpu_description  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

SEQ = 128
MAX_PRED = 20
ORIGINAL = {
    "instances": 22936,
    "predicted": 14.91,
    "mask": 80.0,
    "kept": 10.0,
    "random": 10.0,
    "random_next": 62.6,
    "short": 11.9,
    "mean_tokens": 106.5,
}


def write_squad_corpus(squad_json, path, repeats=1):
    """Writes the SQuAD sentence corpus `repeats` times; returns the sentence count."""
    with open(squad_json, encoding="utf-8") as f:
        data = json.load(f)["data"]
    count = 0
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(repeats):
            for article in data:
                for paragraph in article["paragraphs"]:
                    for sentence in re.split(
                        r"(?<=[.!?])\s+", paragraph["context"].strip()
                    ):
                        if sentence.strip():
                            out.write(sentence.strip() + "\n")
                            count += 1
                    out.write("\n")
    return count


def _descendants_rss_kb(root_pid):
    """Memory (kB) of `root_pid` and all its descendants (see _memory_kb)."""
    children = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(name))
    total = 0
    stack = [root_pid]
    while stack:
        pid = stack.pop()
        stack.extend(children.get(pid, ()))
        total += _memory_kb(pid)
    return total


def _memory_kb(pid):
    # Pss (proportional set size) counts a page shared by n processes (forked
    # workers share the parent's modules) as 1/n in each, so the sum over the
    # processes is their real total; VmRSS would count shared pages n times.
    for path, field in (
        (f"/proc/{pid}/smaps_rollup", "Pss:"),
        (f"/proc/{pid}/status", "VmRSS:"),
    ):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(field):
                        return int(line.split()[1])
        except OSError:
            continue
    return 0


def run_command(command, env):
    """Runs `command`; returns (wall s, max single-process RSS MiB, peak
    total PSS MiB or None, stderr)."""
    stderr_file = tempfile.TemporaryFile(mode="w+")
    start = time.perf_counter()
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=stderr_file
    )
    peak = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            try:
                peak[0] = max(peak[0], _descendants_rss_kb(process.pid))
            except OSError:
                pass
            done.wait(0.01)

    sampler = None
    if os.path.isdir("/proc"):
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    if sampler:
        sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr_file.seek(0)
    stderr = stderr_file.read()
    if process.returncode:
        raise RuntimeError(f"{command} failed:\n{stderr[-3000:]}")
    # ru_maxrss is in KiB on Linux (bytes on macOS).
    max_rss = usage.ru_maxrss / (1 << 20 if sys.platform == "darwin" else 1 << 10)
    return wall, max_rss, (peak[0] / 1024 if sampler else None), stderr


def read_tfrecords(path):
    """Yields the records of a TFRecord file (framing checked, CRCs not)."""
    with open(path, "rb") as f:
        data = f.read()
    offset = 0
    while offset < len(data):
        (length,) = struct.unpack_from("<Q", data, offset)
        yield data[offset + 12 : offset + 12 + length]
        offset += 16 + length


def record_statistics(paths, mask_id):
    """The statistics the original was measured with, from the written records."""
    from bert_tf.data_prep.pretraining import decode_record

    n = real_total = predicted = masked = kept = random_next = short = 0
    for path in paths:
        for record in read_tfrecords(path):
            features = decode_record(record)
            real = sum(features["input_mask"])
            num_pred = int(sum(features["masked_lm_weights"]))
            ids = features["input_ids"]
            for position, label in zip(
                features["masked_lm_positions"][:num_pred],
                features["masked_lm_ids"][:num_pred],
                strict=True,
            ):
                if ids[position] == mask_id:
                    masked += 1
                elif ids[position] == label:
                    kept += 1
            n += 1
            real_total += real
            predicted += num_pred
            random_next += features["next_sentence_labels"][0]
            short += real < 64
    return {
        "instances": n,
        "predicted": 100.0 * predicted / real_total,
        "mask": 100.0 * masked / predicted,
        "kept": 100.0 * kept / predicted,
        "random": 100.0 * (predicted - masked - kept) / predicted,
        "random_next": 100.0 * random_next / n,
        "short": 100.0 * short / n,
        "mean_tokens": real_total / n,
    }


def format_stats(stats):
    return (
        f"{stats['instances']:,} instances, {stats['predicted']:.2f}% predicted "
        f"({stats['mask']:.1f}/{stats['kept']:.1f}/{stats['random']:.1f} "
        f"mask/kept/random), random next {stats['random_next']:.1f}%, "
        f"<64 tokens {stats['short']:.1f}%, mean {stats['mean_tokens']:.1f} tokens"
    )


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data",
        default=os.environ.get("BERT_TF_DATA"),
        help="shared data folder (default: $BERT_TF_DATA)",
    )
    parser.add_argument(
        "--repo",
        default=REPO_ROOT,
        help="checkout whose create_pretraining_data.py is run (default: this one)",
    )
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--scales", type=int, nargs="+", default=[1, 4], help="corpus repeats"
    )
    parser.add_argument("--repeats", type=int, default=2, help="runs per setting")
    parser.add_argument(
        "--shard_size_mb",
        type=float,
        default=None,
        help="passed to the command line when num_workers > 1 (default: its own)",
    )
    parser.add_argument("--dupe_factor", type=int, default=5)
    parser.add_argument("--no_stats", action="store_true")
    args = parser.parse_args()
    if not args.data:
        parser.error("set BERT_TF_DATA or pass --data")
    vocab = os.path.join(args.data, "vocab", "bert-base-uncased", "vocab.txt")
    with open(vocab, encoding="utf-8") as f:
        mask_id = [line.strip() for line in f].index("[MASK]")
    script = os.path.join(args.repo, "create_pretraining_data.py")
    env = dict(os.environ, PYTHONPATH=args.repo, TF_CPP_MIN_LOG_LEVEL="2")
    print(f"script: {script}")
    print(f"cpus: {os.cpu_count()}, load average: {os.getloadavg()}")

    with tempfile.TemporaryDirectory() as tmp:
        for scale in args.scales:
            corpus = os.path.join(tmp, f"squad_x{scale}.txt")
            sentences = write_squad_corpus(
                os.path.join(args.data, "squad", "dev-v1.1.json"), corpus, scale
            )
            size_mb = os.path.getsize(corpus) / 1e6
            print(f"\ncorpus x{scale}: {sentences:,} sentences, {size_mb:.2f} MB")
            for workers in args.workers:
                output = os.path.join(tmp, f"out_x{scale}_w{workers}.tfrecord")
                command = [
                    sys.executable,
                    script,
                    f"--input_file={corpus}",
                    f"--output_file={output}",
                    f"--vocab_file={vocab}",
                    "--do_lower_case=True",
                    f"--max_seq_length={SEQ}",
                    f"--max_predictions_per_seq={MAX_PRED}",
                    "--masked_lm_prob=0.15",
                    "--random_seed=12345",
                    f"--dupe_factor={args.dupe_factor}",
                ]
                if workers > 1:
                    command.append(f"--num_workers={workers}")
                if workers > 1 and args.shard_size_mb is not None:
                    command.append(f"--shard_size_mb={args.shard_size_mb}")
                walls = []
                for repeat in range(args.repeats):
                    wall, max_rss, total_rss, stderr = run_command(command, env)
                    walls.append(wall)
                    total = f"{total_rss:.0f} MiB" if total_rss else "n/a"
                    print(
                        f"  num_workers={workers} run {repeat + 1}: wall {wall:.2f} s, "
                        f"max RSS (largest process) {max_rss:.0f} MiB, "
                        f"peak total PSS (all processes) {total}"
                    )
                shards = re.search(r"in (\d+) shards", stderr)
                print(
                    f"  num_workers={workers}: best wall {min(walls):.2f} s, median "
                    f"{statistics.median(walls):.2f} s"
                    + (f", {shards.group(1)} shards" if shards else "")
                )
                if not args.no_stats:
                    print("    " + format_stats(record_statistics([output], mask_id)))
    print("\noriginal (1x corpus): " + format_stats(ORIGINAL))


if __name__ == "__main__":
    main()
