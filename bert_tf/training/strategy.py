"""Choosing a `tf.distribute` strategy from the command-line flags."""

import json
import os
import re

import tensorflow as tf
from absl import logging

from bert_tf.errors import LostWorkerError
from bert_tf.errors import UserInputError

STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


def tpu_resolver_kwargs(tpu_name=None, tpu_zone=None, gcp_project=None, master=None):
    """Arguments for `TPUClusterResolver` from the original's TPU flags.

    The original passes `tpu_name`, `zone` and `project` to the resolver when
    `--tpu_name` is set, and otherwise uses `--master` as the TPU address.
    """
    if tpu_name:
        return {"tpu": tpu_name, "zone": tpu_zone, "project": gcp_project}
    if master:
        return {"tpu": master}
    return {"tpu": ""}  # the local TPU (Cloud TPU VM)


def _tf_config():
    try:
        return json.loads(os.environ.get("TF_CONFIG", "{}"))
    except json.JSONDecodeError as e:
        raise UserInputError(f"TF_CONFIG is not valid JSON: {e}") from e


def _workers_in_tf_config():
    return len(_tf_config().get("cluster", {}).get("worker", []))


def is_chief_in_tf_config():
    """`is_chief` before a strategy exists: from TF_CONFIG's task (no
    TF_CONFIG: a single process, which is its own chief)."""
    task = _tf_config().get("task", {})
    kind, index = task.get("type"), int(task.get("index", 0))
    return kind in (None, "chief") or (kind == "worker" and index == 0)


def worker_scratch_dir(output_dir):
    """Where this process writes the files every worker makes for itself
    (training records): `output_dir` for the chief (or a single process),
    `output_dir/worker_tmp/<type>_<index>` for the other workers of a
    multi-worker run, so no two workers write one file at once."""
    if is_chief_in_tf_config():
        return output_dir
    task = _tf_config().get("task", {})
    path = os.path.join(
        output_dir, "worker_tmp", f"{task.get('type')}_{int(task.get('index', 0))}"
    )
    tf.io.gfile.makedirs(path)
    return path


def default_strategy_name(use_tpu=False, num_gpus=None):
    """The strategy a run gets when `--distribution_strategy` is not given."""
    if use_tpu:
        return "tpu"
    if _workers_in_tf_config() > 1:
        return "multi_worker_mirrored"
    gpus = len(tf.config.list_logical_devices("GPU")) if num_gpus is None else num_gpus
    return "mirrored" if gpus > 1 else "one_device"


def create_strategy(
    name=None,
    num_gpus=None,
    use_tpu=False,
    tpu_name=None,
    tpu_zone=None,
    gcp_project=None,
    master=None,
):
    """Returns the `tf.distribute.Strategy` the flags ask for.

    Args:
        name: one of `STRATEGIES`, or None to choose from the devices
            (TPU flags, TF_CONFIG workers, visible GPUs).
        num_gpus: GPUs to use with one_device/mirrored (None: all visible).
        use_tpu, tpu_name, tpu_zone, gcp_project, master: the original's
            TPU flags.
    """
    name = name or default_strategy_name(use_tpu, num_gpus)
    if name not in STRATEGIES:
        raise UserInputError(
            f"distribution_strategy={name!r} is not one of {', '.join(STRATEGIES)}",
            argument="distribution_strategy",
        )
    if name == "tpu":
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
            **tpu_resolver_kwargs(tpu_name, tpu_zone, gcp_project, master)
        )
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
        strategy = tf.distribute.TPUStrategy(resolver)
    elif name == "multi_worker_mirrored":
        _tf_config()  # TF_CONFIG that is not JSON: one line, not TensorFlow's traceback
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        gpus = [d.name for d in tf.config.list_logical_devices("GPU")]
        if num_gpus is not None:
            if num_gpus > len(gpus):
                raise UserInputError(
                    f"num_gpus={num_gpus} but only {len(gpus)} GPUs are visible",
                    argument="num_gpus",
                )
            gpus = gpus[:num_gpus]
        if name == "mirrored":
            # With no GPU, mirror over the logical CPUs (tests split the CPU).
            devices = gpus or [d.name for d in tf.config.list_logical_devices("CPU")]
            strategy = tf.distribute.MirroredStrategy(devices)
        else:
            strategy = tf.distribute.OneDeviceStrategy(gpus[0] if gpus else "/cpu:0")
    logging.info("Strategy %s with %d replicas", name, strategy.num_replicas_in_sync)
    return strategy


def is_chief(strategy):
    """Whether this process writes checkpoints, summaries and results."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not getattr(resolver, "task_type", None):
        return True
    return resolver.task_type == "chief" or (
        resolver.task_type == "worker" and resolver.task_id == 0
    )


# What a collective op or the coordination service raises on the workers that
# survive a lost peer: a SIGKILLed peer's "Connection reset by peer" is an
# UnavailableError (tests/test_worker_killed.py); a peer that stops answering
# is TensorFlow's DeadlineExceeded/Unavailable after the coordination
# service's heartbeat timeout, and ops cut short by either Cancelled/Aborted.
_LOST_PEER_ERRORS = (
    "UnavailableError",
    "DeadlineExceededError",
    "CancelledError",
    "AbortedError",
)
_PEER = re.compile(r"/job:(\w+)/replica:\d+/task:(\d+)")


def lost_worker(error, strategy, output_dir):
    """The `LostWorkerError` that TensorFlow's `error` means in a
    multi-worker run, or None (one process, or an error of another kind).

    The worker is named as TF_CONFIG names it (its index and address) when
    the error names a task other than this one.
    """
    resolver = getattr(strategy, "cluster_resolver", None)
    if not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return None
    if not isinstance(error, tf.errors.OpError):
        return None
    text = str(error)
    kind = type(error).__name__
    if kind not in _LOST_PEER_ERRORS and not (
        kind == "InternalError" and _PEER.search(text)
    ):
        return None
    own = (getattr(resolver, "task_type", None), getattr(resolver, "task_id", None))
    worker = None
    cluster = _tf_config().get("cluster", {})
    for job, index in _PEER.findall(text):
        if (job, int(index)) == own:
            continue
        addresses = cluster.get(job, [])
        address = addresses[int(index)] if int(index) < len(addresses) else None
        worker = f"{job} {index}" + (f" ({address})" if address else "")
        break
    return LostWorkerError(worker, output_dir)
