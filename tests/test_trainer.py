"""The shared training loop: strategies, accumulation, resume after a real kill.

Each run is a separate process (tests/train_worker.py): logical CPU devices
and TF_CONFIG must be set before TensorFlow starts.
"""

import json
import os
import socket
import subprocess
import sys

import pytest
from cli_script import child_pythonpath

# Every run is a training process of its own: the full suite's tier.
pytestmark = pytest.mark.slow

WORKER = os.path.join(os.path.dirname(__file__), "train_worker.py")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker_env(**extra):
    """The test's environment, with the checkout importable (installed or not)."""
    return {**os.environ, "PYTHONPATH": child_pythonpath(REPO), **extra}


def run_worker(*args, env=None):
    result = subprocess.run(
        [sys.executable, WORKER, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        env=worker_env(**(env or {})),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def one_device(tmp_path_factory):
    return run_worker("one_device", tmp_path_factory.mktemp("one"), 6)


def assert_same_run(a, b):
    assert a["step"] == b["step"]
    assert a["losses"] == pytest.approx(b["losses"], abs=1e-5)
    assert a["weights_sum"] == pytest.approx(b["weights_sum"], rel=1e-6)


def assert_one_all_reduce_per_step(run, replicas=2):
    """Each replica's device sums the gradient once: as many elements as the
    model has parameters, in one or several packs, not twice that."""
    per_device = {}
    for device, dtype, elements in run["all_reduces"]:
        assert dtype == "float32"
        per_device[device] = per_device.get(device, 0) + elements
    assert len(per_device) == replicas, run["all_reduces"]
    # Only the (scalar) loss may be reduced besides the gradient.
    for elements in per_device.values():
        assert run["num_parameters"] <= elements <= run["num_parameters"] + 1


def test_mirrored_over_two_cpus_matches_one_device(one_device, tmp_path):
    mirrored = run_worker(
        "mirrored", tmp_path, 6, "--logical-cpus", 2, "--count-all-reduces"
    )
    assert_same_run(mirrored, one_device)
    assert_one_all_reduce_per_step(mirrored)


def test_accumulation_over_two_replicas_matches_one_device(one_device, tmp_path):
    run = run_worker(
        "mirrored",
        tmp_path,
        6,
        "--logical-cpus",
        2,
        "--accumulation",
        2,
        "--count-all-reduces",
    )
    assert_same_run(run, one_device)
    # Micro-batches are summed locally; the replicas still meet once a step.
    assert_one_all_reduce_per_step(run)


def test_gradient_accumulation_matches_the_full_batch(one_device, tmp_path):
    accumulated = run_worker("one_device", tmp_path, 6, "--accumulation", 2)
    assert_same_run(accumulated, one_device)


def test_xla_compiled_step_matches(one_device, tmp_path):
    compiled = run_worker("one_device", tmp_path, 6, "--xla")
    assert compiled["losses"] == pytest.approx(one_device["losses"], abs=1e-4)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_multi_worker_mirrored_with_two_local_workers(one_device, tmp_path):
    cluster = {"worker": [f"127.0.0.1:{free_port()}", f"127.0.0.1:{free_port()}"]}
    processes = []
    for index in range(2):
        tf_config = json.dumps(
            {"cluster": cluster, "task": {"type": "worker", "index": index}}
        )
        processes.append(
            subprocess.Popen(
                [
                    sys.executable,
                    WORKER,
                    "multi_worker_mirrored",
                    str(tmp_path),
                    "6",
                    "--count-all-reduces",
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=worker_env(TF_CONFIG=tf_config),
            )
        )
    results = []
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    for result in results:
        assert_same_run(result, one_device)
        # One device per worker process: each sends the gradient once a step.
        assert_one_all_reduce_per_step(result, replicas=1)
    # Only the chief's checkpoints land in output_dir/checkpoints.
    assert sorted(os.listdir(tmp_path / "checkpoints")) == [
        "checkpoint",
        "ckpt-6.data-00000-of-00001",
        "ckpt-6.index",
    ]


@pytest.mark.parametrize("dtype", ["mixed_float16", "mixed_bfloat16"])
def test_mixed_precision_trains_like_float32(one_device, tmp_path, dtype):
    mixed = run_worker(
        "mirrored",
        tmp_path,
        6,
        "--logical-cpus",
        2,
        "--dtype",
        dtype,
        "--count-all-reduces",
    )
    assert mixed["step"] == 6  # float16: no step skipped at this scale
    # The float32 gradient (unscaled, clipped, rescaled) is summed once.
    assert_one_all_reduce_per_step(mixed)
    tolerance = 0.02 if dtype == "mixed_float16" else 0.05  # bfloat16 has 8 bits
    assert mixed["losses"] == pytest.approx(one_device["losses"], abs=tolerance)
