"""Same flags, same results: the run_* tools before and after a refactoring.

Runs run_classifier (the fine-tuning guide's MRPC command at small scale: a tiny
2-layer model, 0.2 epochs), run_squad (3 SQuAD dev articles, train +
predict + eval), run_ner (WNUT-17 sentences, train + eval + predict) and
run_pretraining (records of the sample text, 12 steps) from two source
trees — the commit given with --before (unpacked with `git archive`) and
this checkout — with the same flags, then compares:

* every variable of the final `model.ckpt-<step>` and of the last training
  checkpoint (model, optimizer slots, dropout streams): max |Δ|;
* every other file the run wrote (records, eval results, predictions,
  label lists, run_settings.json), byte for byte (TensorBoard event files
  and the lock file, which hold times and pids, excepted).

    BERT_TF_DATA=/path/to/shared/data python benchmarks/refactor_parity.py \
      --before=bf6c1b1 --work_dir=/tmp/parity

Prints one line per tool and exits 1 if anything differs.
"""

import argparse
import filecmp
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIPPED = ("events.out.tfevents", "run.lock")
# The checkpoint state file lists the saves with their times: compared
# without the timestamp lines.
STATE_FILE = "checkpoint"


def unpack(commit, target):
    """The tree of `commit` in `target` (a commit from before data_prep/
    moved under bert_tf/ gets it linked in place, as the installed package
    has it, so nothing is imported from this checkout)."""
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    archive = subprocess.run(
        ["git", "-C", REPO, "archive", "--format=tar", commit],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    if not os.path.exists(os.path.join(target, "bert_tf", "data_prep")):
        os.symlink(
            os.path.join(target, "data_prep"),
            os.path.join(target, "bert_tf", "data_prep"),
        )
    return target


def tree_env(tree):
    return {
        **os.environ,
        "PYTHONPATH": tree,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "CUDA_VISIBLE_DEVICES": "",
    }


def check_imports_from(tree):
    """Both bert_tf and bert_tf.data_prep come from `tree`."""
    code = (
        "import os, bert_tf, bert_tf.data_prep as d; "
        "print(os.path.realpath(bert_tf.__file__)); print(os.path.realpath(d.__file__))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env=tree_env(tree),
        cwd=tree,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    real = os.path.realpath(tree)
    assert all(p.startswith(real + os.sep) for p in out), (tree, out)


def run_tool(tree, tool, flags, output_dir):
    if os.path.exists(output_dir):
        shutil.rmtree(output_dir)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            f"bert_tf.cli.{tool}",
            *flags,
            f"--output_dir={output_dir}",
        ],
        env=tree_env(tree),
        cwd=tree,
        capture_output=True,
        text=True,
    )
    if result.returncode:
        sys.exit(f"{tool} in {tree} failed:\n{result.stderr[-3000:]}")


def files_of(folder):
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            if not any(s in name for s in SKIPPED):
                path = os.path.join(root, name)
                found[os.path.relpath(path, folder)] = path
    return found


def checkpoint_delta(a, b):
    """(variables, max |Δ|) over two checkpoints with the same variables."""
    import numpy as np
    import tensorflow as tf

    ra, rb = tf.train.load_checkpoint(a), tf.train.load_checkpoint(b)
    names = sorted(ra.get_variable_to_shape_map())
    assert names == sorted(rb.get_variable_to_shape_map()), (a, b)
    delta = 0.0
    for name in names:
        if name == "_CHECKPOINTABLE_OBJECT_GRAPH":
            continue  # the object graph's metadata, not a value
        x, y = np.asarray(ra.get_tensor(name)), np.asarray(rb.get_tensor(name))
        if x.dtype.kind in "fiu":
            delta = max(
                delta, float(np.max(np.abs(x.astype(np.float64) - y), initial=0.0))
            )
        elif not np.array_equal(x, y):
            delta = float("inf")
    return len(names), delta


def compare(before, after):
    """(summary line, ok) of two output dirs."""
    fa, fb = files_of(before), files_of(after)
    if sorted(fa) != sorted(fb):
        return f"files differ: {sorted(set(fa) ^ set(fb))}", False
    prefixes = sorted({rel[: -len(".index")] for rel in fa if rel.endswith(".index")})
    checked, worst = 0, 0.0
    for prefix in prefixes:
        n, delta = checkpoint_delta(
            os.path.join(before, prefix), os.path.join(after, prefix)
        )
        checked += n
        worst = max(worst, delta)
    differing = [
        rel
        for rel in sorted(fa)
        if ".ckpt" not in rel and "ckpt-" not in rel and not same_file(fa[rel], fb[rel])
    ]
    same_files = len(fa) - len(differing)
    line = (
        f"{len(prefixes)} checkpoints, {checked} tensors, max |Δ| = {worst:g}; "
        f"{same_files}/{len(fa)} files byte-identical"
        + (f"; DIFFERENT: {differing}" if differing else "")
    )
    return line, worst == 0.0 and not differing


def same_file(a, b):
    """Byte-identical (the checkpoint state file: but for its save times)."""
    if os.path.basename(a) != STATE_FILE:
        return filecmp.cmp(a, b, shallow=False)

    def lines(path):
        with open(path) as f:
            return [line for line in f if "_timestamp" not in line]

    return lines(a) == lines(b)


def prepare_inputs(data, work):
    """A tiny model config, SQuAD and NER subsets (under `work`)."""
    os.makedirs(work, exist_ok=True)
    vocab = os.path.join(data, "vocab", "bert-base-uncased", "vocab.txt")
    with open(vocab, encoding="utf-8") as f:
        vocab_size = sum(1 for _ in f)
    config = {
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
        "type_vocab_size": 2,
        "hidden_dropout_prob": 0.1,
        "attention_probs_dropout_prob": 0.1,
    }
    config_file = os.path.join(work, "bert_config.json")
    with open(config_file, "w") as f:
        json.dump(config, f)
    with open(os.path.join(data, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        squad = json.load(f)
    squad["data"] = squad["data"][:3]
    squad_file = os.path.join(work, "squad_small.json")
    with open(squad_file, "w", encoding="utf-8") as f:
        json.dump(squad, f)
    with open(
        os.path.join(data, "ner", "wnut17", "emerging.dev.conll"), encoding="utf-8"
    ) as f:
        sentences = f.read().strip().split("\n\n")
    ner_dir = os.path.join(work, "ner")
    os.makedirs(ner_dir, exist_ok=True)
    for name, part in (
        ("train.txt", sentences[:300]),
        ("dev.txt", sentences[300:400]),
        ("test.txt", sentences[400:500]),
    ):
        with open(os.path.join(ner_dir, name), "w", encoding="utf-8") as f:
            f.write("\n\n".join(part) + "\n")
    return vocab, config_file, squad_file, ner_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default="bf6c1b1")
    parser.add_argument("--work_dir", default="/tmp/bert_tf_refactor_parity")
    parser.add_argument(
        "--tools", default="run_classifier,run_squad,run_ner,run_pretraining"
    )
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        sys.exit("set BERT_TF_DATA to the shared data directory")
    work = args.work_dir
    before_tree = unpack(args.before, os.path.join(work, "before_tree"))
    trees = {"before": before_tree, "after": REPO}
    for tree in trees.values():
        check_imports_from(tree)
    vocab, config, squad_file, ner_dir = prepare_inputs(
        data, os.path.join(work, "inputs")
    )
    model = [f"--vocab_file={vocab}", f"--bert_config_file={config}"]
    records = os.path.join(work, "inputs", "pretraining.tfrecord")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bert_tf.cli.create_pretraining_data",
            f"--input_file={os.path.join(data, 'bert_sample_text', 'sample_text.txt')}",
            f"--output_file={records}",
            f"--vocab_file={vocab}",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--dupe_factor=2",
            "--random_seed=7",
        ],
        env=tree_env(REPO),
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    runs = {
        "run_classifier": [
            "--task_name=MRPC",
            "--do_train=true",
            "--do_eval=true",
            "--do_predict=true",
            f"--data_dir={os.path.join(data, 'glue', 'MRPC')}",
            *model,
            "--max_seq_length=128",
            "--train_batch_size=32",
            "--learning_rate=2e-5",
            "--num_train_epochs=0.2",
            "--save_checkpoints_steps=10",
        ],
        "run_squad": [
            "--do_train=true",
            "--do_predict=true",
            "--do_eval=true",
            f"--train_file={squad_file}",
            f"--predict_file={squad_file}",
            "--train_answer=first",
            *model,
            "--max_seq_length=128",
            "--doc_stride=64",
            "--max_query_length=32",
            "--train_batch_size=16",
            "--learning_rate=3e-5",
            "--num_train_epochs=1",
            "--save_checkpoints_steps=10",
        ],
        "run_ner": [
            "--do_train",
            "--do_eval",
            "--do_predict",
            f"--data_dir={ner_dir}",
            *model,
            "--max_seq_length=64",
            "--train_batch_size=16",
            "--num_train_epochs=1",
            "--save_checkpoints_steps=10",
        ],
        "run_pretraining": [
            "--do_train=true",
            "--do_eval=true",
            f"--input_file={records}",
            f"--bert_config_file={config}",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--train_batch_size=8",
            "--num_train_steps=12",
            "--num_warmup_steps=2",
            "--max_eval_steps=3",
            "--save_checkpoints_steps=5",
        ],
    }
    print(
        f"before = {args.before}, after = {subprocess.run(['git', '-C', REPO, 'rev-parse', '--short', 'HEAD'], capture_output=True, text=True).stdout.strip()} (+ working tree)"
    )
    ok = True
    for tool in args.tools.split(","):
        outputs = {}
        for side, tree in trees.items():
            outputs[side] = os.path.join(work, side, tool)
            run_tool(tree, tool, runs[tool], outputs[side])
        line, same = compare(outputs["before"], outputs["after"])
        ok &= same
        print(f"{tool}: {line}", flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
