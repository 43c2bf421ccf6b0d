"""Running the repository's CLI scripts in a subprocess, for the end-to-end tests."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Its sitecustomize starts child processes as on a machine without the test
# extras (see there).
PLAIN_INSTALL_SITE = os.path.join(REPO, "tests", "plain_install_site")


def child_pythonpath(*first):
    """PYTHONPATH for a child process: `first`, the plain-install site, then
    the test's own PYTHONPATH."""
    paths = (*first, PLAIN_INSTALL_SITE, os.environ.get("PYTHONPATH"))
    return os.pathsep.join(p for p in paths if p)


def script_env():
    """The test's environment with the checkout importable (installed or not)."""
    return {
        **os.environ,
        "PYTHONPATH": child_pythonpath(REPO),
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }


def run_script(script, *flags, check=True, timeout=900):
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


@contextlib.contextmanager
def script_in_background(script, *flags, log_path, timeout=900):
    """Runs `script` with `flags` while the `with` body runs (2 cores: two
    runs side by side); on exit waits for it, and a non-zero exit fails the
    test with its stderr (written to `log_path`, so no pipe fills up)."""
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, script, *flags],
            stdout=subprocess.DEVNULL,
            stderr=log,
            env=script_env(),
        )
        try:
            yield process
            process.wait(timeout=timeout)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    with open(log_path) as log:
        assert process.returncode == 0, log.read()[-4000:]


def script_flag_defaults(module):
    """{flag name: default} of a CLI script (e.g. "run_squad", or a
    data-preparation tool of data_prep/), read in a fresh process."""
    folder = (
        "data_prep"
        if os.path.exists(os.path.join(REPO, "data_prep", f"{module}.py"))
        else ""
    )
    code = (
        f"import json, sys; sys.path.insert(0, {os.path.join(REPO, folder)!r}); "
        f"sys.argv=['{module}.py']; import {module}; "
        "from absl import flags; flags.FLAGS(['x']); "
        "print(json.dumps({k: flags.FLAGS[k].default for k in flags.FLAGS}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=script_env(),
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def kill_when_written(script, flags, path, timeout=600):
    """Starts `script` with `flags` and SIGKILLs it as soon as `path` exists
    (e.g. a checkpoint index): the real interruption of the resume tests."""
    process = subprocess.Popen(
        [sys.executable, script, *flags],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=script_env(),
    )
    deadline = time.time() + timeout
    while not os.path.exists(path):
        assert process.poll() is None, "the run ended before it could be killed"
        assert time.time() < deadline, f"{path} was not written in {timeout} s"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()


def hold_output_dir_lock(output_dir, seconds=600):
    """A separate process that holds `output_dir`'s writer lock (until killed,
    or `seconds`); returns it once the lock is held."""
    code = (
        "import time\n"
        "from bert_tf.training.output_dir import OutputDirLock\n"
        f"with OutputDirLock({str(output_dir)!r}):\n"
        "    print('held', flush=True)\n"
        f"    time.sleep({seconds})\n"
    )
    os.makedirs(output_dir, exist_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=script_env(),
    )
    assert process.stdout.readline().strip() == "held"
    return process
