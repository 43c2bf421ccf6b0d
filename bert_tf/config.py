"""`BertConfig`: the architecture of a BERT model, read from Google or HF files.

Google's `bert_config.json` and Hugging Face's `config.json` use nearly the same
keys but disagree on one value: `hidden_act="gelu"` is the tanh approximation in
the original `modeling.py` and the exact erf form in `transformers`. The config
keeps the original's names, so "gelu" always means the tanh form here and the
erf form is spelled "gelu_exact".
"""

import copy
import json
import math
import os

from bert_tf.errors import UserInputError

# Activation names as the original `modeling.get_activation` understands them,
# plus "gelu_exact" for checkpoints trained with the erf GELU (HF's "gelu").
ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")

# HF `hidden_act` values and what they are in this project's vocabulary.
_HF_ACTIVATIONS = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "gelu_fast": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}

_ORIGINAL_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)

_POSITIVE_INT_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)

_DEFAULT_LAYER_NORM_EPS = 1e-12

# Keys only Hugging Face's config.json has.
_HF_MARKER_KEYS = ("model_type", "architectures", "transformers_version")


class BertConfig:
    """The architecture of a BERT encoder.

    The fields and their defaults are those of the original `BertConfig`
    (`type_vocab_size=16` as in the class; the released configs say 2).
    Unknown keys from a JSON file are kept in `extra` and written back.

    Args:
        vocab_size: int. Rows of the word-embedding table.
        hidden_size: int. Width of every layer.
        num_hidden_layers: int. Number of transformer blocks.
        num_attention_heads: int. Heads per attention layer; must divide
            `hidden_size`.
        intermediate_size: int. Width of the feed-forward layer.
        hidden_act: str. One of "gelu" (tanh approximation, as the original),
            "gelu_exact" (erf), "relu", "tanh", "linear".
        hidden_dropout_prob: float. Dropout on embeddings and layer outputs.
        attention_probs_dropout_prob: float. Dropout on attention weights.
        max_position_embeddings: int. Longest sequence the model accepts.
        type_vocab_size: int. Number of segment (token type) ids.
        initializer_range: float. Stddev of the truncated-normal initializer.
        layer_norm_eps: float. LayerNorm epsilon; 1e-12 in the original.
        source: str or None. The file the config came from, used in errors.
        extra: dict. Keys that BERT itself does not use.

    Example:
    >>> config = BertConfig.from_json_file("uncased_L-12_H-768_A-12/bert_config.json")
    >>> config.hidden_size
    768
    """

    def __init__(
        self,
        vocab_size,
        hidden_size=768,
        num_hidden_layers=12,
        num_attention_heads=12,
        intermediate_size=3072,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        max_position_embeddings=512,
        type_vocab_size=16,
        initializer_range=0.02,
        layer_norm_eps=_DEFAULT_LAYER_NORM_EPS,
        source=None,
        extra=None,
    ):
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.num_hidden_layers = num_hidden_layers
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.source = source
        self.extra = dict(extra or {})
        self.validate()

    # --- Reading ---------------------------------------------------------------

    @classmethod
    def from_dict(cls, json_object, source=None):
        """Builds a config from a Google-style dict; unknown keys go to `extra`."""
        where = source or "config dict"
        if not isinstance(json_object, dict):
            raise UserInputError(
                f"{where}: expected a JSON object, got {type(json_object)}"
            )
        if "vocab_size" not in json_object:
            raise UserInputError(f"{where}: required key 'vocab_size' is missing")
        known = {k: json_object[k] for k in _ORIGINAL_KEYS if k in json_object}
        extra = {k: v for k, v in json_object.items() if k not in _ORIGINAL_KEYS}
        eps = extra.pop("layer_norm_eps", _DEFAULT_LAYER_NORM_EPS)
        return cls(**known, layer_norm_eps=eps, source=source, extra=extra)

    @classmethod
    def from_hf_dict(cls, json_object, source=None):
        """Builds a config from a Hugging Face `BertConfig` dict (config.json)."""
        where = source or "HF config dict"
        model_type = json_object.get("model_type", "bert")
        if model_type != "bert":
            raise UserInputError(
                f"{where}: model_type is {model_type!r}; only 'bert' is supported"
            )
        position_type = json_object.get("position_embedding_type", "absolute")
        if position_type != "absolute":
            raise UserInputError(
                f"{where}: position_embedding_type={position_type!r} is not supported "
                "(BERT uses 'absolute')"
            )
        converted = dict(json_object)
        act = converted.get("hidden_act", "gelu")
        if act not in _HF_ACTIVATIONS:
            raise UserInputError(
                f"{where}: hidden_act={act!r} is not supported; expected one of "
                f"{sorted(_HF_ACTIVATIONS)}"
            )
        converted["hidden_act"] = _HF_ACTIVATIONS[act]
        # HF's class default is 2, not the original's 16.
        converted.setdefault("type_vocab_size", 2)
        # Written back, this is a Google-format config: drop the keys that mark
        # an HF file, or "gelu_exact" would be read as an HF activation name.
        for key in _HF_MARKER_KEYS:
            converted.pop(key, None)
        return cls.from_dict(converted, source=source)

    @classmethod
    def from_json_file(cls, json_file):
        """Reads a Google `bert_config.json` or an HF `config.json`.

        The HF form is recognised by its `model_type`, `architectures` or
        `transformers_version` keys, which Google's configs never carry.
        """
        json_file = os.fspath(json_file)
        if not os.path.exists(json_file):
            raise FileNotFoundError(f"BERT config file not found: {json_file}")
        with open(json_file, encoding="utf-8") as reader:
            try:
                data = json.load(reader)
            except json.JSONDecodeError as e:
                raise UserInputError(f"{json_file}: not valid JSON: {e}") from e
        if is_hf_config_dict(data):
            return cls.from_hf_dict(data, source=json_file)
        return cls.from_dict(data, source=json_file)

    # --- Writing ---------------------------------------------------------------

    def to_dict(self):
        """The original's 11 keys, any extra keys, and a non-default epsilon."""
        output = {k: getattr(self, k) for k in _ORIGINAL_KEYS}
        output.update(copy.deepcopy(self.extra))
        if self.layer_norm_eps != _DEFAULT_LAYER_NORM_EPS:
            output["layer_norm_eps"] = self.layer_norm_eps
        return output

    def to_json_string(self):
        # Same formatting as the original: indent=2, sorted keys.
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, json_file):
        with open(os.fspath(json_file), "w", encoding="utf-8") as writer:
            writer.write(self.to_json_string())

    # --- Checks ----------------------------------------------------------------

    def validate(self):
        where = self.source or "BertConfig"
        for key in _POSITIVE_INT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise UserInputError(
                    f"{where}: {key} must be a positive integer, got {value!r}"
                )
        for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, key)
            if not _is_number(value) or not 0.0 <= value < 1.0:
                raise UserInputError(f"{where}: {key} must be in [0, 1), got {value!r}")
        for key in ("initializer_range", "layer_norm_eps"):
            value = getattr(self, key)
            # JSON allows NaN and Infinity, and `NaN <= 0` is False: a NaN
            # initializer_range would build a model that trains to NaN.
            if not _is_number(value) or not math.isfinite(value) or value <= 0:
                raise UserInputError(
                    f"{where}: {key} must be a positive finite number, got {value!r}"
                )
        if self.hidden_size % self.num_attention_heads != 0:
            raise UserInputError(
                f"{where}: hidden_size ({self.hidden_size}) is not a multiple of "
                f"num_attention_heads ({self.num_attention_heads})"
            )
        if self.hidden_act not in ACTIVATIONS:
            raise UserInputError(
                f"{where}: hidden_act={self.hidden_act!r} is not supported; expected one "
                f"of {ACTIVATIONS}"
            )

    def __eq__(self, other):
        return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

    def __repr__(self):
        return f"BertConfig({self.to_json_string()})"


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_hf_config_dict(data):
    return isinstance(data, dict) and any(k in data for k in _HF_MARKER_KEYS)
