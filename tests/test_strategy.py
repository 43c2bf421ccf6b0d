"""Strategy selection from flags (TPU arguments are checked without a TPU)."""

import json

import pytest

from bert_tf.training.strategy import create_strategy
from bert_tf.training.strategy import default_strategy_name
from bert_tf.training.strategy import tpu_resolver_kwargs


def test_tpu_flags_become_resolver_arguments():
    assert tpu_resolver_kwargs("my-tpu", "us-central1-b", "my-project") == {
        "tpu": "my-tpu",
        "zone": "us-central1-b",
        "project": "my-project",
    }
    assert tpu_resolver_kwargs(tpu_name="grpc://10.0.0.2:8470") == {
        "tpu": "grpc://10.0.0.2:8470",
        "zone": None,
        "project": None,
    }
    # Without --tpu_name the original used --master as the address.
    assert tpu_resolver_kwargs(master="grpc://10.0.0.3:8470") == {
        "tpu": "grpc://10.0.0.3:8470"
    }
    assert tpu_resolver_kwargs() == {"tpu": ""}


def test_default_strategy(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert default_strategy_name(use_tpu=True) == "tpu"
    assert default_strategy_name(num_gpus=0) == "one_device"
    assert default_strategy_name(num_gpus=4) == "mirrored"
    cluster = {
        "cluster": {"worker": ["127.0.0.1:1", "127.0.0.1:2"]},
        "task": {"type": "worker", "index": 0},
    }
    monkeypatch.setenv("TF_CONFIG", json.dumps(cluster))
    assert default_strategy_name() == "multi_worker_mirrored"
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG"):
        default_strategy_name()


def test_bad_strategy_and_gpu_count_name_the_flag():
    with pytest.raises(ValueError, match="^distribution_strategy='gpu'"):
        create_strategy("gpu")
    with pytest.raises(ValueError, match="^num_gpus=3"):
        create_strategy("one_device", num_gpus=3)
    assert create_strategy("one_device").num_replicas_in_sync == 1
