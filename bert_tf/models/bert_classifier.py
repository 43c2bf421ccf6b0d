"""`BertClassifier`: sentence (pair) classification or regression."""

import keras

from bert_tf.models.task_model import BertLogitsTaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertClassifier(BertLogitsTaskModel):
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
        dtype: optional dtype policy (e.g. "mixed_bfloat16") for every layer.

    Outputs: a dict with `logits` [batch, num_labels], float32.

    Example:
    >>> classifier = bert_tf.BertClassifier.from_checkpoint(
    ...     "uncased_L-12_H-768_A-12", num_labels=2)
    >>> classifier(features)["logits"].shape
    (8, 2)
    """

    encoder_output = "pooled_output"
    head_name = "classifier"
    head_scope = ""  # the original's root-scope output_weights/output_bias
    # Only the [CLS] output feeds the pooler: an encoder built here computes
    # just that position in its last layer (identical logits, less work).
    encoder_output_range = 1
    default_name = "bert_classifier"

    @property
    def classifier(self):
        return self.head
