"""`BertTokenClassifier`: one label per token (tagging, NER)."""

import keras

from bert_tf.checkpoints.name_map import TOKEN_CLASSIFIER_SCOPE
from bert_tf.checkpoints.name_map import logits_head_variables
from bert_tf.layers.logits_head import LogitsHead
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder
from bert_tf.models.task_model import encode


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(BertTaskModel):
    """Dropout on `sequence_output`, then per-token logits.

    The original has no tagging model; its head is stored in the same layout
    as the others, under `cls/token_classifier/` (HF: `classifier.*`).

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        num_labels: int. Number of tags.
        dropout_rate: float. Dropout on the sequence output.
        initializer_range: float. Stddev of the head's initializer.

    Outputs: a dict with `logits` [batch, seq, num_labels], float32.

    Example:
    >>> tagger = bert_tf.BertTokenClassifier(bert_tf.BertConfig(vocab_size=30522),
    ...                                      num_labels=9)
    """

    def __init__(
        self, encoder, num_labels, dropout_rate=0.1, initializer_range=0.02, **kwargs
    ):
        encoder = build_encoder(encoder)
        # === Layers ===
        head = LogitsHead(
            num_outputs=num_labels,
            hidden_size=encoder.config.hidden_size,
            initializer_range=initializer_range,
            dropout_rate=dropout_rate,
            name="token_classifier",
        )
        # === Functional model ===
        inputs, encoded = encode(encoder)
        outputs = {"logits": head(encoded["sequence_output"])}
        kwargs.setdefault("name", "bert_token_classifier")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        # === Config ===
        self.encoder = encoder
        self.token_classifier = head
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
            **logits_head_variables(self.token_classifier, TOKEN_CLASSIFIER_SCOPE),
        }
