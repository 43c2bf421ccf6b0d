"""Reading and writing checkpoints in the original (TF1, name-based) layout."""

import os

import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.model_garden_checkpoint import is_object_checkpoint
from bert_tf.checkpoints.name_map import is_ignored
from bert_tf.checkpoints.name_map import is_tf1_encoder_name
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError


class Tf1CheckpointReader:
    """The variables of a TF1 checkpoint prefix (`.../bert_model.ckpt`)."""

    kind = "Google TF1 checkpoint"

    def __init__(self, prefix):
        self.path = prefix
        self._reader = tf.train.load_checkpoint(prefix)
        self.shapes = {
            name: tuple(shape)
            for name, shape in self._reader.get_variable_to_shape_map().items()
            if not is_ignored(name)
        }
        if is_object_checkpoint(self.shapes):
            raise UserInputError(
                f"{prefix} is a TF2 object-based checkpoint (tf.train.Checkpoint), "
                "not a TF1 name-based one"
            )

    load_config = staticmethod(BertConfig.from_json_file)

    def lookup(self, tf1_name):
        """(stored name, how to convert it) for an original name, or None."""
        return (tf1_name, None) if tf1_name in self.shapes else None

    def is_encoder_entry(self, name):
        return is_tf1_encoder_name(name)

    def read(self, name):
        return np.asarray(self._reader.get_tensor(name))


def save_tf1_checkpoint(model, prefix):
    """Writes `model`'s weights under the original names, plus bert_config.json.

    The files are `prefix.index` and `prefix.data-00000-of-00001`, as the
    original's `tf.train.Saver` writes them: no optimizer slots, so a
    fine-tuned model is the size of a released one. `bert_config.json` goes
    next to them, so the prefix can be passed to `from_checkpoint`, to
    `tf.train.load_checkpoint`, or to the original's `--init_checkpoint`.

    Args:
        model: A bert_tf model (`BertEncoder` or a task model).
        prefix: str. Checkpoint prefix, e.g. "out/bert_model.ckpt".

    Returns:
        The prefix.
    """
    prefix = os.fspath(prefix)
    directory = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(directory, exist_ok=True)
    variables = model.checkpoint_variables()
    names = sorted(variables)
    tf.raw_ops.SaveV2(
        prefix=prefix,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.convert_to_tensor(variables[n].numpy()) for n in names],
    )
    config = model.config if hasattr(model, "config") else model.encoder.config
    config.to_json_file(os.path.join(directory, "bert_config.json"))
    return prefix
