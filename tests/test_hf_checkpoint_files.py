"""Hugging Face safetensors files that are damaged or point outside their directory."""

import json
import os

import numpy as np
import pytest
from safetensors.numpy import save_file

from bert_tf.checkpoints.hf_checkpoint import HfCheckpointReader
from bert_tf.checkpoints.hf_checkpoint import safetensors_files

NAME = "bert.embeddings.word_embeddings.weight"


def test_truncated_file_is_named(tmp_path):
    path = str(tmp_path / "model.safetensors")
    save_file({NAME: np.ones((64, 16), np.float32)}, path)
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])
    with pytest.raises(ValueError, match=f"{path}: not a readable safetensors"):
        HfCheckpointReader(safetensors_files(str(tmp_path)))


def test_shard_names_stay_in_the_directory(tmp_path):
    outside = tmp_path / "secret.safetensors"
    save_file({NAME: np.ones((4, 4), np.float32)}, str(outside))
    model = tmp_path / "model"
    model.mkdir()
    index = model / "model.safetensors.index.json"
    for shard in (
        "../secret.safetensors",
        str(outside),
        "sub/../../secret.safetensors",
    ):
        index.write_text(json.dumps({"weight_map": {NAME: shard}}))
        with pytest.raises(ValueError, match="is not a file name in"):
            safetensors_files(str(model))
    # A shard inside the directory is read.
    save_file({NAME: np.ones((4, 4), np.float32)}, str(model / "part-1.safetensors"))
    index.write_text(json.dumps({"weight_map": {NAME: "part-1.safetensors"}}))
    files = safetensors_files(str(model))
    assert files == [os.path.join(str(model), "part-1.safetensors")]
    assert HfCheckpointReader(files).shapes == {NAME: (4, 4)}


def test_index_without_weight_map_is_named(tmp_path):
    index = tmp_path / "model.safetensors.index.json"
    index.write_text("[1, 2]")
    with pytest.raises(ValueError, match="weight_map"):
        safetensors_files(str(tmp_path))
