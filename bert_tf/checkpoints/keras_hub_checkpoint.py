"""Reading a KerasHub `BertBackbone` preset directory.

`backbone.save_to_preset(dir)` writes `config.json` (the backbone's Keras
config), `model.weights.h5` (Keras 3 weights file) and the tokenizer's
vocabulary under `assets/tokenizer/vocabulary.txt`; a task's
`save_to_preset` adds `task.json` and `task.weights.h5` (the head alone). The
weights are read with h5py (a Keras dependency), so keras_hub need not be
installed.
"""

import json
import os

import h5py
import numpy as np

from bert_tf.checkpoints.name_map import KERAS_HUB_CLASSIFIER_HEAD
from bert_tf.checkpoints.name_map import keras_hub_name
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.text.tokenizer_json import read_json_or_empty

WEIGHTS_FILE = "model.weights.h5"
TASK_WEIGHTS_FILE = "task.weights.h5"
VOCAB_FILE = os.path.join("assets", "tokenizer", "vocabulary.txt")
_BACKBONE_CLASS = "BertBackbone"


def is_keras_hub_preset(directory):
    """Whether `directory` holds a KerasHub preset (config.json + weights.h5)."""
    config = os.path.join(directory, "config.json")
    if not os.path.exists(config) or not os.path.exists(
        os.path.join(directory, WEIGHTS_FILE)
    ):
        return False
    with open(config, encoding="utf-8") as f:
        try:
            data = json.load(f)
        except json.JSONDecodeError:
            return False
    return isinstance(data, dict) and "registered_name" in data and "config" in data


def preset_lowercase(directory):
    """The preset tokenizer's `lowercase` (with `strip_accents`, KerasHub's
    do_lower_case), or None when the preset has no tokenizer.json."""
    tokenizer = os.path.join(directory, "tokenizer.json")
    if not os.path.exists(tokenizer):
        return None
    with open(tokenizer, encoding="utf-8") as f:
        return json.load(f).get("config", {}).get("lowercase")


def keras_hub_config(config_file):
    """The `BertConfig` of a KerasHub `BertBackbone` config.json.

    KerasHub's BERT is the original's: tanh-approximated GELU, LayerNorm
    epsilon 1e-12, one dropout rate for hidden states and attention.
    """
    with open(config_file, encoding="utf-8") as f:
        data = json.load(f)
    class_name = data.get("class_name")
    if class_name != _BACKBONE_CLASS:
        raise UserInputError(
            f"{config_file}: a KerasHub preset of {class_name!r}; only "
            f"{_BACKBONE_CLASS!r} (BERT) loads here"
        )
    backbone = data["config"]
    return BertConfig(
        vocab_size=backbone["vocabulary_size"],
        hidden_size=backbone["hidden_dim"],
        num_hidden_layers=backbone["num_layers"],
        num_attention_heads=backbone["num_heads"],
        intermediate_size=backbone["intermediate_dim"],
        hidden_act="gelu",
        hidden_dropout_prob=backbone.get("dropout", 0.1),
        attention_probs_dropout_prob=backbone.get("dropout", 0.1),
        max_position_embeddings=backbone.get("max_sequence_length", 512),
        type_vocab_size=backbone.get("num_segments", 2),
        source=config_file,
    )


def _task_class(directory):
    return read_json_or_empty(os.path.join(directory, "task.json")).get("class_name")


def _datasets(path, prefix=""):
    """{prefix + path in file: shape} of every array in a Keras weights file."""
    shapes = {}

    def collect(name, item):
        # A task file also holds the optimizer's state: not weights.
        if isinstance(item, h5py.Dataset) and not name.startswith("optimizer/"):
            shapes[prefix + name] = tuple(item.shape)

    with h5py.File(path, "r") as f:
        f.visititems(collect)
    return shapes


class KerasHubCheckpointReader:
    """The tensors of a KerasHub BERT preset, addressed by original names.

    The backbone's weights, plus the classifier head of a `BertTextClassifier`
    task preset (its `task.weights.h5` entries are named
    "task.weights.h5/<path>" here and in reports).
    """

    kind = "KerasHub BertBackbone preset"

    def __init__(self, directory):
        self.path = os.path.join(directory, WEIGHTS_FILE)
        self.shapes = _datasets(self.path)
        self._task_path = os.path.join(directory, TASK_WEIGHTS_FILE)
        self._task_prefix = TASK_WEIGHTS_FILE + "/"
        self._head = {}
        task_class = _task_class(directory)
        if task_class is not None and os.path.exists(self._task_path):
            self.kind = f"KerasHub {task_class} preset"
            self.shapes.update(_datasets(self._task_path, self._task_prefix))
            if task_class == "BertTextClassifier":
                self._head = KERAS_HUB_CLASSIFIER_HEAD

    @staticmethod
    def load_config(config_file):
        return keras_hub_config(config_file)

    def lookup(self, tf1_name):
        if tf1_name in self._head:
            path, transpose = self._head[tf1_name]
            name = self._task_prefix + path
            if name in self.shapes:
                return name, "transpose" if transpose else None
            return None
        name = keras_hub_name(tf1_name)
        if name in self.shapes:
            return name, "reshape"
        return None

    def is_encoder_entry(self, name):
        # model.weights.h5 of a preset is the backbone alone.
        return not name.startswith(self._task_prefix)

    def read(self, name):
        path = self.path
        if name.startswith(self._task_prefix):
            path, name = self._task_path, name[len(self._task_prefix) :]
        with h5py.File(path, "r") as f:
            return np.asarray(f[name], dtype=np.float32)
