"""The output_dir guards: one writer at a time, one run per directory, and a
fallback past an unreadable newest checkpoint."""

import json
import logging
import os
import signal
import socket
import time

import pytest
from cli_script import hold_output_dir_lock

from bert_tf.training import output_dir
from bert_tf.training.output_dir import OutputDirInUseError
from bert_tf.training.output_dir import OutputDirLock
from bert_tf.training.output_dir import RunSettings


@pytest.mark.slow
def test_a_second_writer_stops_naming_the_holder_and_a_dead_holder_is_taken_over(
    tmp_path,
):
    holder = hold_output_dir_lock(tmp_path, seconds=120)
    try:
        with pytest.raises(OutputDirInUseError) as error:
            with OutputDirLock(str(tmp_path)):
                pass
        message = str(error.value)
        assert f"pid {holder.pid}" in message
        assert socket.gethostname() in message
        assert f"output_dir={tmp_path}" in message
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    # The holder died without cleaning up: its lock is taken over at once.
    began = time.time()
    with OutputDirLock(str(tmp_path)) as lock:
        assert f"pid {os.getpid()}" in open(lock.path).read()
    assert time.time() - began < 5
    # Released on exit, leaving no run.lock behind: a second `with` in the
    # same process takes it again.
    assert not os.path.exists(lock.path)
    with OutputDirLock(str(tmp_path)):
        pass
    assert os.listdir(tmp_path) == []


def test_a_lock_file_deleted_by_the_ending_run_is_not_taken(tmp_path):
    """A writer that opened run.lock just before the holder deleted it must not
    count a flock on the deleted file as the lock (two writers otherwise)."""
    import fcntl

    with OutputDirLock(str(tmp_path)) as first:
        stale = open(first.path)  # noqa: SIM115 (the late writer's handle)
    with OutputDirLock(str(tmp_path)) as second:
        # The stale handle can be flocked (another inode), and is told apart.
        fcntl.flock(stale, fcntl.LOCK_EX | fcntl.LOCK_NB)
        assert not output_dir._same_file(stale, second.path)
        assert output_dir._same_file(second._file, second.path)
    stale.close()


def test_same_settings_resume_other_settings_stop_with_the_differences(tmp_path):
    settings = {"learning_rate": 2e-5, "seed": 1, "data": [{"size": 10}]}
    RunSettings(str(tmp_path), settings).claim()
    recorded = json.loads((tmp_path / "run_settings.json").read_text())
    assert recorded == settings
    RunSettings(str(tmp_path), settings).claim()  # a resume: no error

    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "ckpt-1.index").write_text("x")
    (tmp_path / "model.ckpt-1.index").write_text("x")
    changed = {"learning_rate": 3e-5, "seed": 1, "data": [{"size": 11}]}
    with pytest.raises(ValueError) as error:
        RunSettings(str(tmp_path), changed).claim()
    message = str(error.value)
    assert "learning_rate: 2e-05 -> 3e-05" in message
    assert "data.0.size: 10 -> 11" in message
    assert "seed" not in message.split("Differences")[1]
    assert "overwrite_output_dir to delete it" in message
    assert (tmp_path / "checkpoints" / "ckpt-1.index").exists()  # untouched

    RunSettings(str(tmp_path), changed).claim(overwrite=True)
    assert not (tmp_path / "checkpoints").exists()
    assert not (tmp_path / "model.ckpt-1.index").exists()
    assert json.loads((tmp_path / "run_settings.json").read_text()) == changed


def test_an_unreadable_newest_checkpoint_is_reported_and_the_previous_used(
    tmp_path, caplog
):
    import tensorflow as tf

    from bert_tf.training.trainer import restore_newest_readable

    variable = tf.Variable(0.0)
    checkpoint = tf.train.Checkpoint(value=variable)
    manager = tf.train.CheckpointManager(checkpoint, str(tmp_path), max_to_keep=3)
    for step in (1, 2):
        variable.assign(float(step))
        manager.save(checkpoint_number=step)
    newest = manager.latest_checkpoint
    data_file = newest + ".data-00000-of-00001"
    with open(data_file, "r+b") as f:
        f.truncate(os.path.getsize(data_file) // 2)
    variable.assign(-1.0)

    logging.getLogger("absl").setLevel(logging.INFO)
    with caplog.at_level(logging.WARNING):
        restored = restore_newest_readable(checkpoint, manager.checkpoints)
    assert restored.endswith("ckpt-1")
    assert float(variable.numpy()) == 1.0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(newest in w and "cannot be read" in w for w in warnings), warnings

    # Nothing readable at all: one error naming every file tried.
    with open(restored + ".data-00000-of-00001", "r+b") as f:
        f.truncate(1)
    with pytest.raises(ValueError, match="No readable checkpoint") as error:
        restore_newest_readable(checkpoint, manager.checkpoints)
    assert newest in str(error.value) and restored in str(error.value)


def test_a_failed_run_removes_the_output_dir_it_created_while_empty(tmp_path):
    created = tmp_path / "new" / "run"
    with pytest.raises(RuntimeError):
        with OutputDirLock(str(created)):
            os.makedirs(created / "tensorboard" / "train")
            raise RuntimeError("the run failed")
    assert not created.exists()
    # A folder that was there before, or one the run wrote a file into, stays.
    existing = tmp_path / "existing"
    existing.mkdir()
    with pytest.raises(RuntimeError):
        with OutputDirLock(str(existing)):
            raise RuntimeError("the run failed")
    assert existing.is_dir() and not os.listdir(existing)
    written = tmp_path / "written"
    with pytest.raises(RuntimeError):
        with OutputDirLock(str(written)):
            (written / "eval_results.txt").write_text("accuracy = 0.8\n")
            raise RuntimeError("the run failed")
    assert os.listdir(written) == ["eval_results.txt"]
    # A run that succeeds keeps its (empty) folder.
    kept = tmp_path / "kept"
    with OutputDirLock(str(kept)):
        pass
    assert kept.is_dir()
