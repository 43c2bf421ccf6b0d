"""create_pretraining_data.py --runner: the sharded mode as a Beam pipeline.

Real Beam (DirectRunner, two worker processes) on the original's
sample_text.txt: the records, as a multiset of serialized tf.train.Examples,
equal those of the one-machine sharded run (``write_sharded``, whose records
test_pretraining_data checks against the original algorithm) for the same
flags and seed, at one Beam worker and at two.
"""

import collections
import glob
import os
import subprocess
import sys

import pytest

pytest.importorskip("apache_beam", reason="apache-beam ([beam] extra) is not installed")

import tensorflow as tf  # noqa: E402
from cli_script import script_env  # noqa: E402

from bert_tf.data_prep import pretraining  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWO_WORKERS = "--direct_num_workers=2 --direct_running_mode=multi_processing"
# sample_text.txt is 4.3 KB: shards of ~1 KB give several per file.
SHARD_SIZE_MB = 0.001


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def inputs(shared_data, tmp_path_factory):
    """sample_text.txt, an empty file (no shard: the indices after it must
    not move), and sample_text.txt again (its shards get other seeds)."""
    sample = os.path.join(shared_data, "bert_sample_text", "sample_text.txt")
    empty = tmp_path_factory.mktemp("inputs") / "empty.txt"
    empty.write_text("\n\n")
    return [sample, str(empty), sample]


def _records(paths):
    return collections.Counter(
        record.numpy() for record in tf.data.TFRecordDataset(sorted(paths))
    )


def _one_machine(inputs, vocab_file, tmp_path, **kwargs):
    output = str(tmp_path / "one_machine.tfrecord")
    options = pretraining.GenerationOptions(**kwargs)
    stats = pretraining.write_sharded(
        inputs, [output], vocab_file, True, options, 2, SHARD_SIZE_MB
    )
    return stats, _records([output])


def _run_cli(*flags):
    return subprocess.run(
        [sys.executable, os.path.join(REPO_ROOT, "create_pretraining_data.py"), *flags],
        env=script_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.slow
def test_cli_two_workers_equal_one_machine(inputs, vocab_file, tmp_path):
    output = tmp_path / "beam" / "records"
    result = _run_cli(
        f"--input_file={','.join(inputs)}",
        f"--output_file={output}",
        f"--vocab_file={vocab_file}",
        "--dupe_factor=2",
        "--random_seed=7",
        f"--shard_size_mb={SHARD_SIZE_MB}",
        "--runner=DirectRunner",
        f"--beam_options={TWO_WORKERS}",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    stats, expected = _one_machine(
        inputs, vocab_file, tmp_path, dupe_factor=2, random_seed=7
    )
    assert stats.num_shards == 4  # two per copy of sample_text
    shards = glob.glob(f"{output}-*-of-*")
    assert shards
    assert _records(shards) == expected
    assert f"in {stats.num_shards} shards; wrote {stats.num_records} total" in (
        result.stderr
    )


@pytest.mark.slow
def test_one_worker_equals_one_machine(inputs, vocab_file, tmp_path):
    from bert_tf.beam import pretraining_data

    options = pretraining.GenerationOptions(dupe_factor=1, random_seed=3)
    output = str(tmp_path / "beam1" / "records")
    # An earlier run's five shards (issue 61.9: a glob of the prefix read
    # both runs) are deleted; a file that only looks alike is kept.
    os.makedirs(os.path.dirname(output))
    stale = [f"{output}-{i:05d}-of-00005" for i in range(5)]
    alike = f"{output}-00000-of-00003.txt"
    for path in [*stale, alike]:
        with open(path, "wb") as f:
            f.write(b"not a record")
    stats = pretraining_data.run_pipeline(
        inputs,
        output,
        vocab_file,
        True,
        options,
        runner="DirectRunner",
        beam_options="--direct_num_workers=1",
        shard_size_mb=SHARD_SIZE_MB,
        num_output_shards=3,
    )
    one_stats, expected = _one_machine(
        inputs, vocab_file, tmp_path, dupe_factor=1, random_seed=3
    )
    assert len(glob.glob(f"{output}-*-of-00003")) == 3
    assert not [path for path in stale if os.path.exists(path)]
    assert os.path.exists(alike)
    assert _records(glob.glob(f"{output}-*-of-*[0-9]")) == expected
    assert (stats.shards, stats.documents, stats.records) == (
        one_stats.num_shards,
        one_stats.num_documents,
        one_stats.num_records,
    )


@pytest.mark.slow  # starts processes
def test_cli_rejects_one_machine_flags_with_runner(inputs, vocab_file, tmp_path):
    common = [
        f"--input_file={inputs[0]}",
        f"--vocab_file={vocab_file}",
        "--runner=DirectRunner",
    ]
    workers = _run_cli(*common, f"--output_file={tmp_path / 'a'}", "--num_workers=2")
    assert workers.returncode == 2
    assert "--beam_options" in workers.stderr.strip().splitlines()[-1]
    two = _run_cli(*common, f"--output_file={tmp_path / 'a'},{tmp_path / 'b'}")
    assert two.returncode == 2
    assert "--output_file=" in two.stderr.strip().splitlines()[-1]
    bad = _run_cli(*common[:2], f"--output_file={tmp_path / 'a'}", "--runner=Direct")
    assert bad.returncode == 2
    assert "--runner='Direct'" in bad.stderr.strip().splitlines()[-1]
    assert not os.listdir(tmp_path)
