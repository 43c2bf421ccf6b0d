"""`EncoderSignatures`: the SavedModel signatures of a bare `BertEncoder`."""

import tensorflow as tf

from bert_tf.serving.text_pair_signatures import TextPairSignatures


class EncoderSignatures(TextPairSignatures):
    """`pooled_output` [B, H] and `sequence_output` [B, L, H], float32.

    Args:
        model: a `BertEncoder`.
        preprocessor: its `BertPreprocessor`.
        text_pair: whether `serving_default` takes `text_b` too.

    Example:
    >>> EncoderSignatures(encoder, preprocessor).endpoints()
    """

    family = "encoder"

    def outputs(self, inputs):
        outputs = self.model(inputs, training=False)
        return {
            "pooled_output": tf.cast(outputs["pooled_output"], tf.float32),
            "sequence_output": tf.cast(outputs["sequence_output"], tf.float32),
        }
