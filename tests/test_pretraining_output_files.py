"""create_pretraining_data's output files: what a failed write leaves (a cut
file removed, a device or FIFO never), and its log when the tests run it
several times in one process (tests/cli_one_process.py)."""

import os
import stat

import pytest

from bert_tf.data_prep import pretraining


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def sample_text(shared_data):
    return os.path.join(shared_data, "bert_sample_text", "sample_text.txt")


@pytest.mark.parametrize("shard_size_mb", [None, 0.001])
def test_a_full_disk_leaves_no_cut_file(
    sample_text, vocab_file, full_disk, shard_size_mb
):
    """Issue 61.9: a full disk stopped the run with one line but left the
    cut file under the output's name, for a later glob to read as a smaller
    corpus. (The Beam path writes through temporary files already.)"""
    output = str(full_disk / "records.tfrecord")
    with pytest.raises(OSError) as error:
        pretraining.create_pretraining_data(
            [sample_text],
            [output],
            vocab_file,
            dupe_factor=2,
            shard_size_mb=shard_size_mb,
        )
    assert error.value.filename == output
    assert os.listdir(full_disk) == []


def test_a_device_or_fifo_output_is_never_removed(sample_text, vocab_file, tmp_path):
    """A failed write to /dev/full removed /dev/full itself when run as root
    (the cut-file cleanup of 61.9), leaving a plain file there on which the
    next run "succeeded". Only a regular file the run wrote is removed."""
    from bert_tf.data_prep.local_files import remove_partial_output

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    remove_partial_output(str(fifo))
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    regular = tmp_path / "cut.tfrecord"
    regular.write_bytes(b"x")
    remove_partial_output(str(regular))
    assert not regular.exists()
    if not os.path.exists("/dev/full"):
        return
    for _ in range(2):  # a second run fails the same way: the device is kept
        with pytest.raises(OSError, match="No space left on device"):
            pretraining.create_pretraining_data(
                [sample_text], ["/dev/full"], vocab_file, dupe_factor=1
            )
        assert stat.S_ISCHR(os.lstat("/dev/full").st_mode)


@pytest.mark.slow  # starts a process
def test_runs_in_one_process_log_as_separate_processes_do(
    sample_text, vocab_file, tmp_path
):
    """The end-to-end tests batch runs of one command in one child process
    (tests/cli_one_process.py). absl's app.run raises the log to INFO on its
    first run only, so a second run's progress log was lost; a test reading
    it would fail or, asserting an absence, pass wrongly."""
    from cli_one_process import run_in_one_process

    runs = [
        [
            f"--input_file={sample_text}",
            f"--output_file={tmp_path}/out{i}.tfrecord",
            f"--vocab_file={vocab_file}",
            "--max_seq_length=64",
            "--dupe_factor=1",
        ]
        for i in range(2)
    ]
    first, second = run_in_one_process(
        "create_pretraining_data", runs, str(tmp_path / "driver")
    )
    assert first.returncode == second.returncode == 0
    written = [
        line.split("] ", 1)[1]
        for run in (first, second)
        for line in run.stderr.splitlines()
        if "total instances" in line
    ]
    assert len(written) == 2 and written[0] == written[1], written
