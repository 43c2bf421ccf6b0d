"""`BertTextClassifier`: a sentence (pair) classifier that takes raw text."""

import keras

from bert_tf.models.bert_classifier import BertClassifier
from bert_tf.models.text_task import BertTextTask


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTextClassifier(BertTextTask, BertClassifier):
    """`BertClassifier` with its own `BertPreprocessor`: strings in `fit`,
    `evaluate` and `predict`, as KerasHub's `BertTextClassifier`.

    The network and checkpoint names are `BertClassifier`'s (a run_classifier
    checkpoint loads with its head, `save_tf1_checkpoint` writes one), but
    the output is the logits tensor itself [batch, num_labels], so Keras
    losses and metrics apply directly. `compile()` needs no arguments (see
    `BertTextTask.compile`); a `.keras` file carries the vocabulary and the
    dtype policy.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        num_labels: int. Number of classes (1 for regression).
        preprocessor: `BertPreprocessor` over the encoder's vocabulary.
        dropout_rate: float. Dropout on the pooled output.
        initializer_range: float. Stddev of the head's initializer.
        dtype: optional dtype policy (e.g. "mixed_bfloat16") for every layer.

    Example:
    >>> classifier = bert_tf.BertTextClassifier.from_checkpoint(
    ...     "uncased_L-12_H-768_A-12", num_labels=2)
    >>> classifier.compile()
    >>> classifier.fit(x=(sentences_a, sentences_b), y=labels, batch_size=32)
    >>> classifier.predict(["A new sentence."]).argmax(-1)
    """

    default_name = "bert_text_classifier"

    def __init__(
        self,
        encoder,
        num_labels,
        preprocessor,
        dropout_rate=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(
            encoder,
            num_labels,
            dropout_rate=dropout_rate,
            initializer_range=initializer_range,
            **kwargs,
        )
        self.preprocessor = preprocessor

    @staticmethod
    def outputs_from_logits(logits):
        return logits
