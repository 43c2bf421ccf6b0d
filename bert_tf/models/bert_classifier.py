"""`BertClassifier`: sentence (pair) classification or regression."""

import keras

from bert_tf.checkpoints.name_map import logits_head_variables
from bert_tf.layers.logits_head import LogitsHead
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder
from bert_tf.models.task_model import encode


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(BertTaskModel):
    """The model of the original `run_classifier.create_model`.

    Dropout on the pooled output, then `output_weights`/`output_bias`
    (root-scope names in the original checkpoint). With `num_labels=1` the
    single logit is a regression output (STS-B).

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from (then
            built with `output_range=1`: only [CLS] in the last layer).
        num_labels: int. Number of classes (1 for regression).
        dropout_rate: float. Dropout on the pooled output (the original's
            keep_prob 0.9).
        initializer_range: float. Stddev of the head's initializer (0.02,
            hard-coded in the original).

    Outputs: a dict with `logits` [batch, num_labels], float32.

    Example:
    >>> classifier = bert_tf.BertClassifier.from_checkpoint(
    ...     "uncased_L-12_H-768_A-12", num_labels=2)
    >>> classifier(features)["logits"].shape
    (8, 2)
    """

    def __init__(
        self, encoder, num_labels, dropout_rate=0.1, initializer_range=0.02, **kwargs
    ):
        # Only the [CLS] output feeds the pooler: the last layer computes just
        # that position (identical logits, ~1/num_layers less work).
        encoder = build_encoder(encoder, output_range=1)
        # === Layers ===
        head = LogitsHead(
            num_outputs=num_labels,
            hidden_size=encoder.config.hidden_size,
            initializer_range=initializer_range,
            dropout_rate=dropout_rate,
            name="classifier",
        )
        # === Functional model ===
        inputs, encoded = encode(encoder)
        outputs = {"logits": head(encoded["pooled_output"])}
        kwargs.setdefault("name", "bert_classifier")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.classifier = head
        self.num_labels = num_labels
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

    def task_arguments(self):
        return {
            "num_labels": self.num_labels,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }

    def checkpoint_variables(self):
        return {
            **self.encoder.checkpoint_variables(),
            **logits_head_variables(self.classifier, ""),
        }
