"""Running the repository's CLI scripts in a subprocess, for the end-to-end tests."""

import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def script_env():
    """The test's environment with the checkout importable (installed or not)."""
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "TF_CPP_MIN_LOG_LEVEL": "2"}


def run_script(script, *flags, check=True, timeout=300):
    """Runs `script` with `flags`; with `check`, a non-zero exit fails the test."""
    result = subprocess.run(
        [sys.executable, script, *flags],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=script_env(),
    )
    if check:
        assert result.returncode == 0, result.stderr[-4000:]
    return result
