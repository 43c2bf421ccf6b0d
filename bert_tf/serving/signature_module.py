"""`SignatureModule`: what one model family serves, for any exporter.

Every exported model has the same two endpoints (TF Serving signatures, or
LiteRT signatures):

* `serving_default`: raw strings in, tokenized in the graph by the
  `BertPreprocessor`, the family's answers out;
* `serve_tokenized`: int32 `input_ids`, `input_mask`, `segment_ids`
  [batch, length] for clients that tokenize themselves.

A family (classifier, span, tagger, encoder, ...) is one subclass; the
exporters ask it for its endpoints, its warmup requests and the metadata
written beside the model, and never look at the model's type themselves.
`bert_tf.serving.register` maps a model class to its family.
"""

import abc

import tensorflow as tf

from bert_tf.text.input_schema import ENCODER_INPUT_NAMES

# Raw texts of the warmup requests (one request per signature) that TF
# Serving replays before it serves.
WARMUP_TEXTS = (
    "The quick brown fox jumps over the lazy dog.",
    "BERT reads raw text inside the SavedModel.",
)


class SignatureModule(abc.ABC):
    """The signatures of one model family over a model and its preprocessor.

    Subclasses set `family` (the "model" entry of the export's metadata),
    implement `text_endpoint` and `serve_tokenized`, and take their own
    options as keyword arguments of `__init__` (labels, `SpanOptions`, ...).

    Args:
        model: the Keras model, in the precision it is served in.
        preprocessor: the `BertPreprocessor` the model was trained with.

    Example:
    >>> module = signature_module_for(model, preprocessor, label_list=["no", "yes"])
    >>> serve_text, specs = module.text_endpoint()
    >>> module.endpoints()["serve_tokenized"]
    """

    family = None

    def __init__(self, model, preprocessor):
        self.model = model
        self.preprocessor = preprocessor

    @abc.abstractmethod
    def text_endpoint(self):
        """`(function, input specs)` of `serving_default` (string inputs)."""

    @abc.abstractmethod
    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        """The outputs for packed inputs (int32 [batch, length] each)."""

    @abc.abstractmethod
    def tokenize_for_warmup(self, inputs):
        """The packed model inputs of the raw `inputs` (name -> strings)."""

    def trackables(self):
        """Objects the exporter must track beside the endpoints' variables
        (lookup tables of a second preprocessor, tf.Variables of served data)."""
        return []

    def tokenized_endpoint(self):
        """`(function, input specs)` of `serve_tokenized`."""
        specs = [
            tf.TensorSpec([None, None], tf.int32, name) for name in ENCODER_INPUT_NAMES
        ]
        return self.serve_tokenized, specs

    def endpoints(self):
        """Signature name -> `(function, input specs)`, `serving_default` first."""
        return {
            "serving_default": self.text_endpoint(),
            "serve_tokenized": self.tokenized_endpoint(),
        }

    def warmup_requests(self, texts=WARMUP_TEXTS):
        """`[(signature name, inputs)]`: one request per signature."""
        _, specs = self.text_endpoint()
        raw = {spec.name: tf.constant(list(texts)) for spec in specs}
        return [
            ("serving_default", raw),
            ("serve_tokenized", self.tokenize_for_warmup(raw)),
        ]

    def metadata(self):
        """What was exported: family, signature inputs, family options."""
        return {
            "model": self.family,
            "signatures": {
                name: [spec.name for spec in specs]
                for name, (_, specs) in self.endpoints().items()
            },
        }

    def check_fits_model(self, vocab_file, seq_length):
        """Raises ValueError when the vocabulary or `seq_length` runs past
        the model's embeddings."""
        config = self.encoder_config
        if self.preprocessor.vocab_size > config.vocab_size:
            raise ValueError(
                f"{vocab_file} has {self.preprocessor.vocab_size} tokens but the "
                f"model's vocab_size is {config.vocab_size}: ids would run past the "
                "embeddings"
            )
        if seq_length > config.max_position_embeddings:
            raise ValueError(
                f"seq_length={seq_length} is longer than the model's "
                f"max_position_embeddings ({config.max_position_embeddings})"
            )

    @property
    def encoder_config(self):
        """The `BertConfig` of the model's encoder."""
        return getattr(self.model, "encoder", self.model).config


def model_inputs(input_ids, input_mask, segment_ids):
    """The encoder's input dict of the tokenized endpoint's arguments."""
    return dict(
        zip(ENCODER_INPUT_NAMES, (input_ids, input_mask, segment_ids), strict=True)
    )
