"""`BertTaskModel`: what the task models on top of a `BertEncoder` share."""

import keras

from bert_tf.checkpoints.loading import CheckpointMixin
from bert_tf.checkpoints.name_map import logits_head_variables
from bert_tf.config import BertConfig
from bert_tf.layers.logits_head import LogitsHead
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_encoder import encoder_inputs
from bert_tf.models.bert_encoder import global_dtype_policy


class BertTaskModel(CheckpointMixin, keras.Model):
    """Base of the task models: an `encoder` plus heads, built functionally.

    Subclasses build their graph in `__init__` (inside
    `global_dtype_policy(dtype)`, so heads get the model's dtype policy) and
    end it with `_init_graph` (the functional model, named `default_name`
    unless `name` is given, and `self.encoder`); they list their own
    constructor arguments in `task_arguments()`. Serialization and
    `from_checkpoint` come from here.
    """

    # Whether the heads read the encoder's pooled output; when they don't, a
    # checkpoint without the pooler (e.g. an HF tagging model) still loads.
    reads_pooled_output = True

    def _init_graph(self, encoder, inputs, outputs, **kwargs):
        """Initialises the functional model `inputs` -> `outputs` on top of
        `encoder` (named the class's `default_name` unless `name` is given)."""
        kwargs.setdefault("name", self.default_name)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder
        freeze_unread_pooler(self)

    def task_arguments(self):
        return {}

    def get_config(self):
        return {
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self.task_arguments(),
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


class BertLogitsTaskModel(BertTaskModel):
    """A task model with one `LogitsHead` (dropout + logits) on an encoder output.

    The shared body of `BertClassifier` (pooled output) and
    `BertTokenClassifier` (sequence output). Subclasses set the class
    attributes below and may override `outputs_from_logits`.
    """

    encoder_output = "pooled_output"  # or "sequence_output"
    head_name = "classifier"  # the head layer's Keras name
    head_scope = ""  # its original checkpoint scope ("" = root)
    # `output_range` of an encoder built here: 1 computes only [CLS] in the
    # last layer, all the pooled output needs.
    encoder_output_range = None
    default_name = "bert_classifier"

    def __init__(
        self, encoder, num_labels, dropout_rate=0.1, initializer_range=0.02, **kwargs
    ):
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder, output_range=self.encoder_output_range)
            # === Layers ===
            head = LogitsHead(
                num_outputs=num_labels,
                hidden_size=encoder.config.hidden_size,
                initializer_range=initializer_range,
                dropout_rate=dropout_rate,
                name=self.head_name,
            )
            # === Functional model ===
            inputs, encoded = encode(encoder)
            outputs = self.outputs_from_logits(head(encoded[self.encoder_output]))
            self._init_graph(encoder, inputs, outputs, **kwargs)
        # === Config ===
        self.head = head
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

    @staticmethod
    def outputs_from_logits(logits):
        return {"logits": logits}

    def task_arguments(self):
        return {
            "num_labels": self.num_labels,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }

    def checkpoint_variables(self):
        return {
            **self.encoder.checkpoint_variables(),
            **logits_head_variables(self.head, self.head_scope),
        }


def freeze_unread_pooler(model):
    """Makes the encoder's pooler non-trainable when `model` does not read the
    pooled output: it gets no gradient, so training it would only make the
    optimizer warn about missing gradients and keep slots for nothing. Its
    weights stay, and are saved, as loaded."""
    if not model.reads_pooled_output:
        model.encoder.pooler.trainable = False


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
