"""Reading Hugging Face BERT checkpoints (safetensors)."""

import json
import os

import numpy as np
from safetensors import SafetensorError
from safetensors import safe_open

from bert_tf.checkpoints.name_map import HF_TIED_DUPLICATES
from bert_tf.checkpoints.name_map import hf_names
from bert_tf.checkpoints.name_map import is_hf_encoder_name
from bert_tf.checkpoints.name_map import is_ignored
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError


def safetensors_files(directory):
    """The weight files of an HF model directory (single or sharded)."""
    index = os.path.join(directory, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index, encoding="utf-8") as f:
            try:
                shards = sorted(set(json.load(f)["weight_map"].values()))
            except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as e:
                raise UserInputError(
                    f"{index}: not a safetensors index (a JSON object with a "
                    f"'weight_map'): {e}"
                ) from e
        root = os.path.realpath(directory)
        for shard in shards:
            # An index from elsewhere must not make us open any file on disk.
            path = os.path.realpath(os.path.join(directory, str(shard)))
            if not isinstance(shard, str) or os.path.dirname(path) != root:
                raise UserInputError(
                    f"{index}: shard {shard!r} is not a file name in {directory}"
                )
        return [os.path.join(directory, s) for s in shards]
    single = os.path.join(directory, "model.safetensors")
    return [single] if os.path.exists(single) else []


class HfCheckpointReader:
    """The tensors of an HF BERT directory, addressed by original names."""

    kind = "Hugging Face safetensors checkpoint"

    def __init__(self, files):
        self.path = files[0] if len(files) == 1 else os.path.dirname(files[0])
        self._file_of = {}
        self.shapes = {}
        for file in files:
            try:
                with safe_open(file, framework="np") as f:
                    for name in f.keys():
                        if is_ignored(name) or name in HF_TIED_DUPLICATES:
                            continue
                        self._file_of[name] = file
                        self.shapes[name] = tuple(f.get_slice(name).get_shape())
            # safetensors' own errors (a truncated header, a bad JSON header)
            # name no file.
            except (OSError, SafetensorError) as e:
                if isinstance(e, FileNotFoundError):
                    raise
                raise UserInputError(
                    f"{file}: not a readable safetensors file (truncated or "
                    f"damaged?): {' '.join(str(e).split())}"
                ) from e

    load_config = staticmethod(BertConfig.from_json_file)

    def lookup(self, tf1_name):
        candidates, transpose = hf_names(tf1_name)
        for name in candidates:
            if name in self.shapes:
                return name, "transpose" if transpose else None
        return None

    def is_encoder_entry(self, name):
        return is_hf_encoder_name(name)

    def read(self, name):
        file = self._file_of[name]
        try:
            with safe_open(file, framework="np") as f:
                return np.asarray(f.get_tensor(name), dtype=np.float32)
        except (OSError, SafetensorError) as e:
            # A file cut inside its data: the header reads, the tensor not.
            raise UserInputError(
                f"{file}: tensor {name!r} cannot be read (truncated or damaged?): "
                f"{' '.join(str(e).split())}"
            ) from e
