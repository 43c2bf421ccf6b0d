"""Reading TF Model Garden `BertEncoder` weights from a TF2 object checkpoint.

`tf.train.Checkpoint(encoder=...)` stores each variable under its object path
(`encoder/_transformer_layers/0/_attention_layer/_query_dense/kernel/...`),
not under the original's names. The encoder is found by where its first
query kernel sits, whatever name it was saved under, and its names come from
`name_map.model_garden_name`.
"""

import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.name_map import MODEL_GARDEN_PROBES
from bert_tf.checkpoints.name_map import OBJECT_VALUE_SUFFIX
from bert_tf.checkpoints.name_map import model_garden_name
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError

# The key every object-based checkpoint has, and TF1 name-based ones lack.
OBJECT_GRAPH_KEY = "_CHECKPOINTABLE_OBJECT_GRAPH"


def is_object_checkpoint(shapes):
    return OBJECT_GRAPH_KEY in shapes


def _is_bookkeeping(name):
    # The object graph itself, the save counter, optimizer state.
    return (
        name == OBJECT_GRAPH_KEY
        or name.startswith(("save_counter/", "optimizer/"))
        or ".OPTIMIZER_SLOT" in name
    )


def top_level_objects(shapes):
    """The objects a TF2 checkpoint was saved with (`tf.train.Checkpoint(x=...)`)."""
    return sorted({n.split("/")[0] for n in shapes if not _is_bookkeeping(n)})


def find_model_garden_encoders(shapes):
    """[(prefix, layout)] of every Model Garden BertEncoder in the checkpoint."""
    found = []
    for name in shapes:
        for layout, probe in MODEL_GARDEN_PROBES.items():
            suffix = probe + OBJECT_VALUE_SUFFIX
            if name.endswith(suffix):
                found.append((name[: -len(suffix)], layout))
    return sorted(found)


class ModelGardenCheckpointReader:
    """The encoder variables of a Model Garden TF2 checkpoint, by original name.

    Raises:
        ValueError: naming the file and its top-level objects when it holds
            no Model Garden BertEncoder, or several.
    """

    kind = "TF Model Garden BertEncoder checkpoint (TF2 object-based)"
    # Model Garden's released checkpoints come with the original's config.
    load_config = staticmethod(BertConfig.from_json_file)

    def __init__(self, prefix):
        self.path = prefix
        self._reader = tf.train.load_checkpoint(prefix)
        all_shapes = self._reader.get_variable_to_shape_map()
        encoders = find_model_garden_encoders(all_shapes)
        if len(encoders) != 1:
            what = (
                "no TF Model Garden BertEncoder"
                if not encoders
                else f"{len(encoders)} Model Garden encoders ({[p for p, _ in encoders]})"
            )
            raise UserInputError(
                f"{prefix} is a TF2 object-based checkpoint (written by "
                f"tf.train.Checkpoint), not a TF1 name-based one, and holds {what}; "
                f"its top-level objects are {top_level_objects(all_shapes)}. "
                "Load it with the code that wrote it, or save the encoder alone "
                "with tf.train.Checkpoint(encoder=encoder)."
            )
        self.prefix, self.layout = encoders[0]
        self.shapes = {
            name: tuple(shape)
            for name, shape in all_shapes.items()
            if not _is_bookkeeping(name)
        }
        block = "_transformer_layers/" if self.layout == "v2" else "layer_with_weights-"
        self.num_layers = sum(
            1
            for name in self.shapes
            if name.startswith(self.prefix + block)
            and name.endswith(
                "_attention_layer/_query_dense/kernel" + OBJECT_VALUE_SUFFIX
            )
        )

    def lookup(self, tf1_name):
        name = model_garden_name(tf1_name, self.layout, self.num_layers, self.prefix)
        if name in self.shapes:
            return name, "reshape"
        return None

    def is_encoder_entry(self, name):
        return name.startswith(self.prefix)

    def read(self, name):
        return np.asarray(self._reader.get_tensor(name))
