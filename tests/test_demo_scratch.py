"""The demo's temporary output_dir leaves nothing behind (errors, Ctrl-C, SIGTERM)."""

import os
import signal
import subprocess
import sys
import tempfile

import pytest

from bert_tf.cli import demo

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def temp_root(tmp_path, monkeypatch):
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def fake_run(written, error=None):
    def fine_tune_and_classify(minilm, output_dir, sentences, kept=True):
        written.append((output_dir, kept))
        with open(os.path.join(output_dir, "model.ckpt.data"), "wb") as f:
            f.write(b"\0" * 1_000_000)
        os.makedirs(os.path.join(output_dir, "eval"))
        if error:
            raise error
        return 0

    return fine_tune_and_classify


def test_a_demo_run_leaves_the_temp_dir_empty(temp_root, monkeypatch):
    written = []
    monkeypatch.setattr(demo, "minilm_directory", lambda: "minilm")
    monkeypatch.setattr(demo, "fine_tune_and_classify", fake_run(written))
    assert demo.main([]) == 0
    assert written and written[0][0].startswith(str(temp_root))
    assert written[0][1] is False
    assert os.listdir(temp_root) == []


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_demo_run_leaves_the_temp_dir_empty(
    temp_root, monkeypatch, error
):
    written = []
    monkeypatch.setattr(demo, "minilm_directory", lambda: "minilm")
    monkeypatch.setattr(demo, "fine_tune_and_classify", fake_run(written, error))
    with pytest.raises(type(error)):
        demo.main([])
    assert written
    assert os.listdir(temp_root) == []


def test_output_dir_is_kept(tmp_path, temp_root, monkeypatch):
    written = []
    monkeypatch.setattr(demo, "minilm_directory", lambda: "minilm")
    monkeypatch.setattr(demo, "fine_tune_and_classify", fake_run(written))
    kept = tmp_path / "kept"
    assert demo.main([f"--output_dir={kept}"]) == 0
    assert written == [(str(kept), True)]
    assert os.path.exists(kept / "model.ckpt.data")
    assert os.listdir(temp_root) == []


def test_an_unknown_option_is_named(capsys):
    assert demo.main(["--epochs=3"]) == 2
    assert "--epochs=3" in capsys.readouterr().err


SIGNALLED = """
import os, signal, sys, time
# As from a terminal: Python raises KeyboardInterrupt on SIGINT. (A pytest-xdist
# worker ignores SIGINT and its children inherit that. Resetting it here, not in
# a preexec_fn, keeps subprocess from running Python between fork and exec,
# where a worker's gRPC threads once made the child abort.)
signal.signal(signal.SIGINT, signal.default_int_handler)
from bert_tf.demo import scratch_directory
with scratch_directory() as path:
    open(os.path.join(path, "weights"), "wb").write(b"x" * 1000)
    print(path, flush=True)
    os.kill(os.getpid(), getattr(signal, sys.argv[1]))
    time.sleep(30)
"""


@pytest.mark.parametrize(
    "signal_name, returncode",
    [("SIGINT", -signal.SIGINT), ("SIGTERM", 128 + signal.SIGTERM)],
)
@pytest.mark.slow  # starts a process
def test_a_signalled_process_leaves_the_temp_dir_empty(
    tmp_path, signal_name, returncode
):
    result = subprocess.run(
        [sys.executable, "-c", SIGNALLED, signal_name],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert result.returncode == returncode, result.stderr
    assert result.stdout.strip().startswith(str(tmp_path))
    assert os.listdir(tmp_path) == []


def test_pairs_are_parsed_and_a_lone_sentence_is_refused(
    temp_root, monkeypatch, capsys
):
    seen = []
    monkeypatch.setattr(demo, "minilm_directory", lambda: "minilm")
    monkeypatch.setattr(
        demo,
        "fine_tune_and_classify",
        lambda minilm, output_dir, pairs, kept=True: seen.append(pairs) or 0,
    )
    assert demo.main(["A dog runs. ||| A puppy is running.", "Rain.|||Sun."]) == 0
    assert seen == [[("A dog runs.", "A puppy is running."), ("Rain.", "Sun.")]]
    assert demo.main([]) == 0
    assert seen[-1] == list(demo.DEFAULT_PAIRS)
    assert demo.main(["A dog runs."]) == 2
    assert "'first sentence ||| second sentence'" in capsys.readouterr().err
