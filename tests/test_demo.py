"""The README's main job: fine-tune the packaged MiniLM, evaluate, classify."""

import os
import subprocess
import sys

import pytest

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_fine_tunes_and_classifies_raw_sentences(minilm_dir, tmp_path):
    temp_root = tmp_path / "tmp"
    temp_root.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "bert_tf.demo"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": str(temp_root)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # Its temporary output_dir (about 350 MB) is gone.
    assert os.listdir(temp_root) == []
    out = result.stdout
    accuracy = float(out.split("Dev accuracy after ")[1].split(": ")[1].split()[0])
    assert accuracy >= 0.9
    predictions = {
        line.split(maxsplit=2)[2]: line.split()[0]
        for line in out.splitlines()
        if line.startswith("  ") and line.split()[0] in ("positive", "negative")
    }
    assert predictions == {
        "The battery died after two days and support never answered.": "negative",
        "I love this kettle, it is quick and looks great.": "positive",
        "Cheap plastic, the lid cracked the first time I used it.": "negative",
        "Setup took five minutes and it has worked flawlessly since.": "positive",
        "Not what I hoped for: it rattles and the screen flickers.": "negative",
    }
