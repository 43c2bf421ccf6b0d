"""Token vectors to one sentence vector: sentence-transformers' pooling modes."""

import keras
from keras import ops

# sentence-transformers' modes, in the order its legacy config keys imply.
POOLING_MODES = (
    "cls",
    "max",
    "mean",
    "mean_sqrt_len_tokens",
    "weightedmean",
    "lasttoken",
)
# Other spellings accepted for the same modes.
_ALIASES = {"mean_sqrt_len": "mean_sqrt_len_tokens", "mean_tokens": "mean"}


def pooling_modes(pooling):
    """`pooling` (a mode, a "+"-joined string or a list) as a tuple of modes.

    Raises:
        ValueError: naming an unknown mode.
    """
    if isinstance(pooling, str):
        pooling = pooling.split("+")
    modes = tuple(_ALIASES.get(m.strip(), m.strip()) for m in pooling)
    unknown = [m for m in modes if m not in POOLING_MODES]
    if not modes or unknown:
        raise ValueError(
            f"pooling mode {unknown or pooling!r} is not supported; expected one or "
            f"more of {POOLING_MODES} (or mean_sqrt_len)"
        )
    return modes


@keras.saving.register_keras_serializable(package="bert_tf")
class SentencePooling(keras.layers.Layer):
    """Pools [batch, seq, hidden] token vectors into [batch, len(modes) * hidden].

    The modes of sentence-transformers' `Pooling`, with padded positions
    left out of every one: `cls` (the first token), `max` (element-wise
    maximum over real tokens), `mean` (their average),
    `mean_sqrt_len_tokens` (their sum over the square root of their
    number), `weightedmean` (weighted by position 1, 2, ...) and
    `lasttoken` (the last real token). Several modes are concatenated in the order given, as
    sentence-transformers >= 6 does (its older configs imply the order of
    `POOLING_MODES`). The sums run in float32 whatever the
    compute dtype.

    Args:
        modes: a mode, modes joined by "+", or a list of modes.
        include_prompt: False: `input_mask` may have its first positions (a
            prompt) zeroed, and `cls` is then the first position it keeps
            (sentence-transformers' `include_prompt=False`).

    Call arguments: `sequence_output` [batch, seq, hidden] and `input_mask`
        [batch, seq] (1 for real tokens, 0 for padding).

    Example:
    >>> pooling = SentencePooling("mean")
    >>> pooling(ops.ones((2, 5, 8)), ops.ones((2, 5), "int32")).shape
    (2, 8)
    """

    def __init__(self, modes="mean", include_prompt=True, **kwargs):
        super().__init__(**kwargs)
        self.modes = pooling_modes(modes)
        self.include_prompt = bool(include_prompt)
        self.built = True

    def call(self, sequence_output, input_mask):
        vectors = ops.cast(sequence_output, "float32")
        # expand_dims, not [:, :, None]: LiteRT's builtin StridedSlice has no
        # new axes, so the slice would not convert for bert_tf.serving.litert_model.
        mask = ops.expand_dims(ops.cast(input_mask, "float32"), -1)
        outputs = []
        for mode in self.modes:
            if mode == "cls" and self.include_prompt:
                outputs.append(vectors[:, 0, :])
            elif mode in ("cls", "lasttoken"):
                # One-hot of the first (last) kept position: a sum, not a
                # gather, so LiteRT converts it with builtins.
                seen = ops.cumsum(mask, axis=1)
                edge = 1.0 if mode == "cls" else ops.sum(mask, axis=1, keepdims=True)
                pick = mask * ops.cast(ops.equal(seen, edge), "float32")
                outputs.append(ops.sum(vectors * pick, axis=1))
            elif mode == "max":
                # Padding can never win: it is pushed far below any real value.
                outputs.append(ops.max(vectors + (mask - 1.0) * 1e9, axis=1))
            elif mode == "weightedmean":
                # Weights 1, 2, ... by position (right padding: from the first).
                positions = ops.arange(1, ops.shape(vectors)[1] + 1, dtype="float32")
                weights = mask * ops.reshape(positions, (1, -1, 1))
                total = ops.sum(vectors * weights, axis=1)
                outputs.append(total / ops.maximum(ops.sum(weights, axis=1), 1e-9))
            else:
                total = ops.sum(vectors * mask, axis=1)
                count = ops.maximum(ops.sum(mask, axis=1), 1e-9)
                if mode == "mean_sqrt_len_tokens":
                    count = ops.sqrt(count)
                outputs.append(total / count)
        pooled = outputs[0] if len(outputs) == 1 else ops.concatenate(outputs, -1)
        return ops.cast(pooled, self.compute_dtype)

    def compute_output_shape(self, sequence_output_shape, input_mask_shape=None):
        width = sequence_output_shape[-1]
        batch = sequence_output_shape[0]
        return (batch, None if width is None else width * len(self.modes))

    def get_config(self):
        return {
            **super().get_config(),
            "modes": list(self.modes),
            "include_prompt": self.include_prompt,
        }
