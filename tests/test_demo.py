"""The README's main job: fine-tune the packaged MiniLM on real shipped data,
evaluate on held-out pairs next to its baselines, classify raw pairs."""

import os
import re
import subprocess
import sys

import pytest
from cli_script import child_pythonpath

from bert_tf.cli import demo

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_fine_tunes_and_classifies_raw_pairs(minilm_dir, tmp_path):
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "bert_tf.demo"],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
        env={
            **os.environ,
            "PYTHONPATH": child_pythonpath(),
            "TF_CPP_MIN_LOG_LEVEL": "2",
            "TMPDIR": str(temp_root),
        },
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Its temporary output_dir (about 350 MB) is gone.
    assert os.listdir(temp_root) == []
    out = result.stdout
    steps, accuracy, dev_pairs = re.search(
        r"Dev accuracy after (\d+) steps: ([\d.]+) \((\d+) held-out pairs\)", out
    ).groups()
    # 3 epochs of 1,000 pairs in batches of 16 (the original's int(n / batch * epochs)).
    assert (int(steps), int(dev_pairs)) == (int(1000 / 16 * 3), 250)
    # The printed baselines are the files' (dev labels counted here).
    dev = demo.read_pairs("dev.tsv")
    different = sum(label == "different" for *_, label in dev) / len(dev)
    majority = float(re.search(r"([\d.]+)  always 'different'", out).group(1))
    assert majority == pytest.approx(different, abs=5e-4)
    overlap = float(re.search(r"([\d.]+)  word overlap", out).group(1))
    # Fine-tuning beats both baselines by a clear margin.
    assert float(accuracy) >= max(overlap, majority) + 0.03
    predictions = dict(
        (pair, label)
        for label, pair in re.findall(
            r"^  (similar|different) +[\d.]+  (.+)$", out, re.MULTILINE
        )
    )
    expected = ["similar", "different", "similar", "different"]
    assert predictions == {
        f"{a} | {b}": label
        for (a, b), label in zip(demo.DEFAULT_PAIRS, expected, strict=True)
    }
