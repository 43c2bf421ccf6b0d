"""The activations a BERT config can name."""

import keras


def gelu(x):
    """GELU, tanh approximation: what the original BERT's "gelu" computes."""
    return keras.activations.gelu(x, approximate=True)


def gelu_exact(x):
    """GELU with the erf: what Hugging Face's "gelu" computes."""
    return keras.activations.gelu(x, approximate=False)


_BY_NAME = {
    "gelu": gelu,
    "gelu_exact": gelu_exact,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "linear": keras.activations.linear,
}


def get_activation(name):
    """Returns the function for a `BertConfig.hidden_act` name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(
            f"Unknown activation {name!r}; expected one of {sorted(_BY_NAME)}"
        ) from None
