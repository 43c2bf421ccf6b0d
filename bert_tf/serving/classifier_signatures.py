"""`ClassifierSignatures`: the SavedModel signatures of a `BertClassifier`."""

import tensorflow as tf

from bert_tf.serving.text_pair_signatures import TextPairSignatures


class ClassifierSignatures(TextPairSignatures):
    """`probabilities` [B, C], `label_ids` [B] int32 and `labels` [B] string;
    a regression model (1 output) gives `predictions` [B].

    Args:
        model: a `BertClassifier`.
        preprocessor: its `BertPreprocessor`.
        label_list: the label strings in label-id order (default "0", "1",
            ...).
        text_pair: whether `serving_default` takes `text_b` too.
        trained_labels: the labels the model was trained with, when
            `label_list` renames them for display (recorded in the metadata).

    Example:
    >>> module = ClassifierSignatures(model, preprocessor, ["no", "yes"], True)
    >>> module.endpoints()["serving_default"][1]  # text_a, text_b specs
    """

    family = "classifier"

    def __init__(
        self,
        model,
        preprocessor,
        label_list=None,
        text_pair=False,
        trained_labels=None,
    ):
        super().__init__(model, preprocessor, text_pair)
        self.regression = model.num_labels == 1
        if label_list is None:
            label_list = [str(i) for i in range(model.num_labels)]
        self.labels = [str(label) for label in label_list]
        if not self.regression and len(self.labels) != model.num_labels:
            raise ValueError(
                f"label_list has {len(self.labels)} labels but the classifier has "
                f"{model.num_labels} outputs"
            )
        self.trained_labels = None
        if trained_labels is not None:
            self.trained_labels = [str(label) for label in trained_labels]

    def _renaming(self):
        """{"trained_labels": [...]} when the labels rename the trained ones."""
        if self.trained_labels in (None, self.labels):
            return {}
        return {"trained_labels": self.trained_labels}

    def outputs(self, inputs):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        if self.regression:
            return {"predictions": logits[:, 0]}
        label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        return {
            "probabilities": tf.nn.softmax(logits, axis=-1),
            "label_ids": label_ids,
            "labels": tf.gather(tf.constant(self.labels), label_ids),
        }

    def metadata(self):
        return {**super().metadata(), "labels": self.labels, **self._renaming()}

    def litert_metadata(self):
        labels = None if self.regression else self.labels
        return {**super().litert_metadata(), "labels": labels, **self._renaming()}
