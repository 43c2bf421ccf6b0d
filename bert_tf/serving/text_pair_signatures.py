"""`TextPairSignatures`: signatures over one text or a pair of texts."""

import tensorflow as tf

from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text.preprocessing import request_batch
from bert_tf.text.preprocessing import same_batch_size


class TextPairSignatures(SignatureModule):
    """`serving_default` over `text_a` (and `text_b`), `serve_tokenized` over
    ids; both give `outputs(model inputs)`, which subclasses define.

    Args:
        model, preprocessor: as `SignatureModule`.
        text_pair: whether `serving_default` takes `text_b` too.

    Example:
    >>> class Logits(TextPairSignatures):
    ...     family = "logits"
    ...     def outputs(self, inputs):
    ...         return {"logits": self.model(inputs, training=False)["logits"]}
    """

    def __init__(self, model, preprocessor, text_pair=False):
        super().__init__(model, preprocessor)
        self.text_pair = bool(text_pair)

    def outputs(self, inputs):
        """The signature outputs for packed model `inputs`."""
        raise NotImplementedError

    def text_endpoint(self):
        names = ("text_a", "text_b") if self.text_pair else ("text_a",)
        specs = [tf.TensorSpec([None], tf.string, name) for name in names]
        if self.text_pair:

            def serve_text(text_a, text_b):
                texts = same_batch_size(
                    [request_batch(text_a, "text_a"), request_batch(text_b, "text_b")],
                    ("text_a", "text_b"),
                )
                return self.outputs(self.preprocessor(tuple(texts)))

        else:

            def serve_text(text_a):
                return self.outputs(self.preprocessor(request_batch(text_a, "text_a")))

        return serve_text, specs

    def litert_text_endpoint(self):
        """`text_endpoint` over a `LiteRTPreprocessor` (a LiteRT file's)."""
        _, specs = self.text_endpoint()

        def serve_text(*texts):
            return self.outputs(self.preprocessor.pack_texts(texts))

        return serve_text, specs

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata."""
        return {"text_pair": self.text_pair}

    def tokenize_for_warmup(self, inputs):
        texts = tuple(inputs[name] for name in sorted(inputs))
        return self.preprocessor(texts if self.text_pair else texts[0])

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        return self.outputs(model_inputs(input_ids, input_mask, segment_ids))
