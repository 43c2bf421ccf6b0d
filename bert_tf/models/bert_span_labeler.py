"""`BertSpanLabeler`: start/end logits for extractive QA (SQuAD)."""

import keras

from bert_tf.checkpoints.name_map import logits_head_variables
from bert_tf.layers.logits_head import LogitsHead
from bert_tf.models.bert_encoder import global_dtype_policy
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder
from bert_tf.models.task_model import encode


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSpanLabeler(BertTaskModel):
    """The model of the original `run_squad.create_model`.

    `cls/squad/output_weights` [2, hidden] applied to every token; row 0 gives
    the start logits and row 1 the end logits.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        initializer_range: float. Stddev of the head's initializer (0.02).

    Outputs: a dict with `start_logits` and `end_logits`, float32
        [batch, seq].

    Example:
    >>> labeler = bert_tf.BertSpanLabeler.from_checkpoint("uncased_L-12_H-768_A-12")
    >>> labeler(features)["start_logits"].shape
    (8, 384)
    """

    reads_pooled_output = False
    default_name = "bert_span_labeler"

    def __init__(self, encoder, initializer_range=0.02, **kwargs):
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder)
            # === Layers ===
            head = LogitsHead(
                num_outputs=2,
                hidden_size=encoder.config.hidden_size,
                initializer_range=initializer_range,
                name="span",
            )
            # === Functional model ===
            inputs, encoded = encode(encoder)
            logits = head(encoded["sequence_output"])
            outputs = {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
            self._init_graph(encoder, inputs, outputs, **kwargs)
        # === Config ===
        self.span = head
        self.initializer_range = initializer_range

    def task_arguments(self):
        return {"initializer_range": self.initializer_range}

    def checkpoint_variables(self):
        return {
            **self.encoder.checkpoint_variables(),
            **logits_head_variables(self.span, "cls/squad"),
        }
