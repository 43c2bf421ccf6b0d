"""The suite's own summary: skips without BERT_TF_DATA are named in one line."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # runs pytest in a child process

HERE = os.path.dirname(os.path.abspath(__file__))


def _run_glue_tests(data):
    env = {k: v for k, v in os.environ.items() if k != "BERT_TF_DATA"}
    if data:
        env["BERT_TF_DATA"] = data
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
        + [os.path.join(HERE, "test_glue.py"), "-k", "not processor"],
        capture_output=True,
        text=True,
        env=env,
        cwd=os.path.dirname(HERE),
        timeout=120,
    )


def test_skips_without_the_data_folder_are_named(tmp_path):
    result = _run_glue_tests(None)
    assert result.returncode == 0, result.stdout[-2000:]
    lines = [line for line in result.stdout.splitlines() if "BERT_TF_DATA" in line]
    assert len(lines) == 1, result.stdout
    skipped = int(lines[0].split()[0])
    assert f"{skipped} skipped" in result.stdout.splitlines()[-1]
    # With the variable set, the line is not printed (the folder may be empty:
    # the tests then skip for their own files, not for the variable).
    result = _run_glue_tests(str(tmp_path))
    assert "BERT_TF_DATA is not set" not in result.stdout
