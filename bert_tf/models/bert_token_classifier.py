"""`BertTokenClassifier`: one label per token (tagging, NER)."""

import keras

from bert_tf.checkpoints.name_map import TOKEN_CLASSIFIER_SCOPE
from bert_tf.models.task_model import BertLogitsTaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(BertLogitsTaskModel):
    """Dropout on `sequence_output`, then per-token logits.

    The original has no tagging model; its head is stored in the same layout
    as the others, under `cls/token_classifier/` (HF: `classifier.*`).

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        num_labels: int. Number of tags.
        dropout_rate: float. Dropout on the sequence output.
        initializer_range: float. Stddev of the head's initializer.
        dtype: optional dtype policy (e.g. "mixed_bfloat16") for every layer.

    Outputs: a dict with `logits` [batch, seq, num_labels], float32.

    Example:
    >>> tagger = bert_tf.BertTokenClassifier(bert_tf.BertConfig(vocab_size=30522),
    ...                                      num_labels=9)
    """

    encoder_output = "sequence_output"
    head_name = "token_classifier"
    head_scope = TOKEN_CLASSIFIER_SCOPE
    default_name = "bert_token_classifier"
    reads_pooled_output = False

    @property
    def token_classifier(self):
        return self.head
