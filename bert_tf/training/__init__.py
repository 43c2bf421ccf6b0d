"""Training: strategies, the custom loop with checkpoint/resume, output_dir.

`Trainer` and `create_strategy` load TensorFlow on first access.
"""

import importlib

_EXPORTS = {
    "Trainer": "bert_tf.training.trainer",
    "create_strategy": "bert_tf.training.strategy",
}

__all__ = ["Trainer", "create_strategy"]


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bert_tf.training' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value
