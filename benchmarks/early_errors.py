"""How fast each installed command names a mistake that needs no model.

Every check that needs only the flags, the file system or a run's record
runs before TensorFlow is imported (target: one line on stderr, exit 2,
within 3 s). This script times the installed commands (`bert-tf-*`, from
`pip install -e .`) on each case of `CASES` and prints the seconds beside
the CPU flags; tests/test_cli.py runs the same cases and checks that each is
one line naming the flag, exit 2, with TensorFlow never imported.

    python benchmarks/early_errors.py
"""

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

# (tool, flags, the flag the one-line error names). "{out}" is a scratch
# folder holding v.txt (two lines) and beir/corpus.jsonl (one document).
CASES = [
    ("run_classifier", ["--do_train", "--task_name=MRPC"], "--output_dir"),
    (
        "run_classifier",
        ["--do_train", "--output_dir={out}", "--task_name=FOO", "--data_dir={out}"],
        "--task_name",
    ),
    ("run_squad", ["--do_train", "--output_dir={out}"], "--vocab_file"),
    (
        "run_squad",
        ["--do_train", "--output_dir={out}", "--vocab_file={out}/v.txt"],
        "--train_file",
    ),
    ("run_ner", ["--do_train", "--output_dir={out}"], "--vocab_file"),
    (
        "run_ner",
        [
            "--do_train",
            "--output_dir={out}",
            "--init_checkpoint={out}",
            "--doc_stride=0",
        ],
        "--train_file",
    ),
    ("run_pretraining", ["--do_train", "--output_dir={out}"], "--input_file"),
    (
        "run_pretraining",
        ["--do_train", "--output_dir={out}", "--input_file=x", "--bert_config_file=x"],
        "--bert_config_file",
    ),
    ("extract_features", ["--input_file=x", "--output_file=y"], "--vocab_file"),
    (
        "run_similarity",
        [
            "--do_train",
            "--output_dir={out}/similarity",
            "--init_checkpoint={out}/does_not_exist",
            "--train_file={out}/v.txt",
        ],
        "--init_checkpoint",
    ),
    (
        "embed",
        [
            "--init_checkpoint={out}",
            "--input_file={out}/missing.txt",
            "--output_file={out}/e.npy",
        ],
        "--input_file",
    ),
    (
        "embed",
        [
            "--init_checkpoint={out}",
            "--input_file={out}/v.txt",
            "--input_format=tsv",
            "--text_column=nope",
            "--output_file={out}/e.npy",
        ],
        "--text_column",
    ),
    (
        "export_saved_model",
        [
            "--model_type=embedding",
            "--init_checkpoint={out}/does_not_exist",
            "--export_dir={out}/export",
        ],
        "--init_checkpoint",
    ),
    (
        "export_litert",
        [
            "--model_type=embedding",
            "--init_checkpoint={out}/does_not_exist",
            "--output_file={out}/e.tflite",
        ],
        "--init_checkpoint",
    ),
    (
        "run_retrieval",
        ["--data_dir={out}", "--output_dir={out}/retrieval", "--do_index"],
        "--data_dir",
    ),
    (
        "run_retrieval",
        [
            "--data_dir={out}/beir",
            "--output_dir={out}/retrieval",
            "--do_index",
            "--milvus_uri={out}/foo.txt",
        ],
        "--milvus_uri",
    ),
    ("prepare_corpus", ["--input_file={out}/v.txt"], "--output_dir"),
    (
        "prepare_corpus",
        ["--input_file={out}/none-*.jsonl", "--output_dir={out}/corpus"],
        "--input_file",
    ),
    ("build_vocab", ["--input_file={out}/v.txt"], "--output_file"),
    (
        "build_vocab",
        ["--input_file={out}/none-*.txt", "--output_file={out}/vocab.txt"],
        "--input_file",
    ),
]


# Runs recorded in the scratch folder (tool, flags), as a --do_train run
# records them in output_dir/run_settings.json; the RERUNS then change one
# setting in the same output_dir.
RECORDED = [
    (
        "run_classifier",
        [
            "--do_train",
            "--task_name=custom",
            "--data_dir={out}/classify",
            "--train_file=train.tsv",
            "--vocab_file={out}/v.txt",
            "--output_dir={out}/classifier_run",
            "--learning_rate=5e-5",
        ],
    ),
    (
        "run_similarity",
        [
            "--do_train",
            "--init_checkpoint={out}",
            "--train_file={out}/pairs.tsv",
            "--text_a_column=0",
            "--text_b_column=1",
            "--loss=mnr",
            "--output_dir={out}/similarity_run",
            "--train_batch_size=16",
        ],
    ),
    (
        "run_retrieval",
        [
            "--do_train",
            "--data_dir={out}/beir",
            "--init_checkpoint={out}",
            "--output_dir={out}/retrieval_run",
            "--num_train_epochs=1",
        ],
    ),
]


def _changed(flags, old, new):
    return [new if flag == old else flag for flag in flags]


RERUNS = [
    (
        RECORDED[0][0],
        _changed(RECORDED[0][1], "--learning_rate=5e-5", "--learning_rate=3e-5"),
        "--output_dir",
    ),
    (
        RECORDED[1][0],
        _changed(RECORDED[1][1], "--train_batch_size=16", "--train_batch_size=8"),
        "--output_dir",
    ),
    (
        RECORDED[2][0],
        _changed(RECORDED[2][1], "--num_train_epochs=1", "--num_train_epochs=2"),
        "--output_dir",
    ),
]
CASES += RERUNS

# Writes the settings a --do_train run of these flags records (those the
# flags and files give; `bert_tf.options.run_identity`), in a process of
# its own: a tool's flags are defined once per process.
_RECORD = """
import json, os, sys
from absl import flags
from bert_tf.cli.{tool} import COMMAND
from bert_tf.options.checks import run_defining
from bert_tf.options.run_identity import run_settings
from bert_tf.training.output_dir import RunSettings

flags.FLAGS({argv!r})
run, options, *_ = COMMAND.options.build(flags.FLAGS)
fingerprints = getattr(options, "training_fingerprints", None)
settings = run_settings(
    {tool!r},
    run,
    run_defining(options),
    data=fingerprints(run) if fingerprints else None,
)
os.makedirs(run.output_dir)
with open(RunSettings(run.output_dir, settings).path, "w") as f:
    json.dump(settings, f, indent=2, sort_keys=True)
"""


def make_scratch(folder, record=None):
    """The files the cases name: v.txt, a custom classification task, text
    pairs, a BEIR folder, and the RECORDED runs of the tools in `record`
    (None: all)."""
    with open(os.path.join(folder, "v.txt"), "w") as f:
        f.write("[PAD]\n[UNK]\n")
    beir = os.path.join(folder, "beir")
    os.makedirs(os.path.join(beir, "qrels"), exist_ok=True)
    with open(os.path.join(beir, "corpus.jsonl"), "w") as f:
        f.write('{"_id": "d1", "title": "", "text": "a passage"}\n')
    with open(os.path.join(beir, "queries.jsonl"), "w") as f:
        f.write('{"_id": "q1", "text": "a question"}\n')
    with open(os.path.join(beir, "qrels", "train.tsv"), "w") as f:
        f.write("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    os.makedirs(os.path.join(folder, "classify"), exist_ok=True)
    with open(os.path.join(folder, "classify", "train.tsv"), "w") as f:
        f.write("text\tlabel\na good day\t1\na bad day\t0\n")
    with open(os.path.join(folder, "pairs.tsv"), "w") as f:
        f.write("a cat\ta kitten\na dog\ta puppy\n")
    for tool, flags in RECORDED:
        if record is not None and tool not in record:
            continue
        argv = [tool, *case_argv(flags, folder)]
        subprocess.run(
            [sys.executable, "-c", _RECORD.format(tool=tool, argv=argv)],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )


def case_argv(flags, folder):
    return [flag.format(out=folder) for flag in flags]


def installed_command(tool):
    command = "bert-tf-" + tool.replace("_", "-")
    beside = os.path.join(os.path.dirname(sys.executable), command)
    return beside if os.path.exists(beside) else shutil.which(command)


def main():
    print(cpu_description())
    with tempfile.TemporaryDirectory() as folder:
        make_scratch(folder)
        for tool, flags, named in CASES:
            command = installed_command(tool)
            if command is None:
                print(f"{tool}: not installed (pip install -e .)")
                continue
            times = []
            for _ in range(3):
                began = time.perf_counter()
                result = subprocess.run(
                    [command, *case_argv(flags, folder)],
                    capture_output=True,
                    text=True,
                    timeout=120,
                )
                times.append(time.perf_counter() - began)
            line = result.stderr.strip().splitlines()[-1:] or [""]
            ok = result.returncode == 2 and named in line[0]
            print(
                f"{statistics.median(times):5.2f} s  {'ok ' if ok else 'BAD'} "
                f"{tool} {named}: {line[0][:100]}"
            )


if __name__ == "__main__":
    main()
