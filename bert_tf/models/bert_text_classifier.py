"""`BertTextClassifier`: a sentence (pair) classifier that takes raw text."""

import os

import keras
import numpy as np

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
    `BertTextTask.compile`); a `.keras` file carries the vocabulary, the
    label names, the dtype policy and the compile arguments. `predict` gives
    logits; `predict_labels` gives label names and probabilities.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        num_labels: int. Number of classes (1 for regression); may be omitted
            when `labels` is given.
        preprocessor: `BertPreprocessor` over the encoder's vocabulary.
        labels: optional class names in label-id order (default "0", "1", …;
            `from_checkpoint` reads a run_classifier output_dir's
            `label_list.json`).
        dropout_rate: float. Dropout on the pooled output.
        initializer_range: float. Stddev of the head's initializer.
        dtype: optional dtype policy (e.g. "mixed_bfloat16") for every layer.

    Example:
    >>> classifier = bert_tf.BertTextClassifier.from_checkpoint(
    ...     "uncased_L-12_H-768_A-12", labels=["negative", "positive"])
    >>> classifier.compile()
    >>> classifier.fit(x=sentences, y=label_ids, batch_size=32)
    >>> classifier.predict_labels(["A new sentence."])
    [{'label': 'positive', 'score': 0.93}]
    """

    default_name = "bert_text_classifier"

    def __init__(
        self, encoder, num_labels=None, preprocessor=None, labels=None, **kwargs
    ):
        if num_labels is None:
            if labels is None:
                raise ValueError("BertTextClassifier needs num_labels or labels")
            num_labels = len(labels)
        if labels is not None:
            labels = [str(label) for label in labels]
            if len(labels) != num_labels:
                raise ValueError(
                    f"{len(labels)} labels {labels} for num_labels={num_labels}"
                )
        # dropout_rate and initializer_range go on to BertClassifier.
        super().__init__(encoder, num_labels, preprocessor, **kwargs)
        self.labels = labels

    @staticmethod
    def outputs_from_logits(logits):
        return logits

    def task_arguments(self):
        return {**super().task_arguments(), "labels": self.labels}

    def predict_probabilities(self, x, batch_size=None, **kwargs):
        """Class probabilities [batch, num_labels] (softmax of `predict`)."""
        logits = np.asarray(self.predict(x, batch_size=batch_size, **kwargs))
        logits = logits.astype("float64")
        exp = np.exp(logits - logits.max(-1, keepdims=True))
        return exp / exp.sum(-1, keepdims=True)

    def predict_labels(self, x, batch_size=None, **kwargs):
        """`[{"label": name, "score": probability}]`, one per input row, as
        Hugging Face's text-classification pipeline returns (`{"score":
        value}` for a regression model).

        Args:
            x: strings, or a tuple of two lists of strings for pairs (the
                forms `predict` takes).
            batch_size: rows per batch (default 32).
            **kwargs: passed to `predict` (e.g. `verbose=0`).
        """
        kwargs.setdefault("verbose", 0)
        if self.num_labels == 1:
            values = np.asarray(self.predict(x, batch_size=batch_size, **kwargs))
            return [{"score": float(v)} for v in values.reshape(-1)]
        names = self.labels or [str(i) for i in range(self.num_labels)]
        return [
            {"label": names[int(p.argmax())], "score": float(p.max())}
            for p in self.predict_probabilities(x, batch_size=batch_size, **kwargs)
        ]

    @classmethod
    def from_checkpoint(cls, path, config=None, **kwargs):
        """See `BertTextTask.from_checkpoint`; a run_classifier output_dir's
        `label_list.json` gives `labels` (and `num_labels`) unless passed."""
        if "labels" not in kwargs and os.path.isdir(str(path)):
            from bert_tf.data_prep.label_list_file import read_label_list

            saved = read_label_list(str(path))
            if saved is not None and not saved.is_regression:
                kwargs["labels"] = saved.label_list
        if "num_labels" not in kwargs and kwargs.get("labels") is None:
            raise ValueError(
                f"num_labels or labels is needed: no label_list.json in {path}"
            )
        return super().from_checkpoint(path, config=config, **kwargs)
