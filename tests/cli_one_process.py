"""Several runs of one CLI command in a single child process.

Each run parses its own argv with the command's real flag parser and exits
(or returns) as it would alone; its exit code, stdout and stderr (file
descriptors 1 and 2, so absl logging too) are recorded, and the flags are
reset to their defaults before the next run. TensorFlow is imported once
for all of them instead of once a run: what the end-to-end tests that run a
command many times in a row spend most of their time on.
"""

import json
import os
import subprocess
import sys
import textwrap
from typing import NamedTuple

from cli_script import script_env

# argv: tool, runs.json, results.json. Each run: {"argv", "stdin", "keep"}.
DRIVER = textwrap.dedent(
    r"""
    import importlib, json, os, shutil, sys, tempfile, traceback
    from absl import flags
    from absl import logging

    logging.use_absl_handler()  # as app.run does, once per process
    # app.run raises --verbosity's default (-1, warnings) to 0 on its first
    # run only; a rerun in the same process would log warnings only.
    flags.FLAGS.set_default("verbosity", 0)
    tool, runs_path, out_path = sys.argv[1:4]
    command = importlib.import_module(f"bert_tf.cli.{tool}").COMMAND
    results = []
    for i, run in enumerate(json.load(open(runs_path))):
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        stdin = open(run["stdin"] if run["stdin"] else os.devnull)
        sys.stdout.flush(); sys.stderr.flush()
        saved = [os.dup(0), os.dup(1), os.dup(2)]
        os.dup2(stdin.fileno(), 0); os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        sys.stdin = open(0, closefd=False)
        try:
            command.main([tool, *run["argv"]])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            sys.stdout.flush(); sys.stderr.flush()
            for fd, copy in enumerate(saved):
                os.dup2(copy, fd)
                os.close(copy)
            sys.stdin = sys.__stdin__
            stdin.close()
        flags.FLAGS.unparse_flags()
        kept = os.path.join(os.path.dirname(out_path), f"run{i}")
        os.makedirs(kept)
        for path in run["keep"]:
            if os.path.exists(path):
                shutil.copy(path, kept)
        out.seek(0); err.seek(0)
        results.append({
            "returncode": code,
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
            "kept": kept,
        })
        json.dump(results, open(out_path, "w"))
    """
)


class Run(NamedTuple):
    """One run's exit code, output, and the directory its kept files were
    copied to (as they were when the run ended)."""

    returncode: int
    stdout: str
    stderr: str
    kept: str


def run_in_one_process(tool, runs, work_dir, timeout=1800):
    """Runs `bert_tf.cli.<tool>` once per run of `runs`, in order, in one
    child process. A run is a list of flags, or a dict with "argv", optional
    "stdin" (text fed as its standard input) and "keep" (paths copied after
    the run: a later run may overwrite them). Returns a `Run` per run."""
    os.makedirs(work_dir)
    specs = []
    for i, run in enumerate(runs):
        run = {"argv": list(run)} if not isinstance(run, dict) else dict(run)
        if run.get("stdin") is not None:
            path = os.path.join(work_dir, f"stdin{i}.txt")
            with open(path, "w", encoding="utf-8") as f:
                f.write(run["stdin"])
            run["stdin"] = path
        run.setdefault("stdin", None)
        run["keep"] = [str(p) for p in run.get("keep", ())]
        specs.append(run)
    runs_path = os.path.join(work_dir, "runs.json")
    with open(runs_path, "w") as f:
        json.dump(specs, f)
    out_path = os.path.join(work_dir, "results.json")
    driver = subprocess.run(
        [sys.executable, "-c", DRIVER, tool, runs_path, out_path],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=script_env(),
        stdin=subprocess.DEVNULL,
    )
    results = json.load(open(out_path)) if os.path.exists(out_path) else []
    assert len(results) == len(specs), driver.stderr[-4000:]
    return [Run(**r) for r in results]
