"""`BertTaskModel`: what the task models on top of a `BertEncoder` share."""

import keras

from bert_tf.checkpoints.loading import CheckpointMixin
from bert_tf.config import BertConfig
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_encoder import encoder_inputs


class BertTaskModel(CheckpointMixin, keras.Model):
    """Base of the task models: an `encoder` plus heads, built functionally.

    Subclasses build their graph in `__init__`, set `self.encoder`, and list
    their own constructor arguments in `task_arguments()`; serialization and
    `from_checkpoint` come from here.
    """

    def task_arguments(self):
        return {}

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self.task_arguments(),
            "name": self.name,
            "trainable": self.trainable,
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


def build_encoder(encoder, output_range=None):
    """Accepts a `BertEncoder`, or a `BertConfig`/dict to build one from.

    `output_range` applies only to an encoder built here; a given encoder is
    used as it is.
    """
    if isinstance(encoder, BertEncoder):
        return encoder
    if isinstance(encoder, (BertConfig, dict)):
        return BertEncoder(encoder, output_range=output_range)
    raise TypeError(
        f"Expected a BertEncoder or a BertConfig, got {type(encoder).__name__}"
    )


def encode(encoder):
    """Fresh encoder inputs and the encoder's outputs on them."""
    inputs = encoder_inputs()
    return inputs, encoder(inputs)
