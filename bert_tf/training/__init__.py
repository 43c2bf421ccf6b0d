"""Training: strategies, the custom loop with checkpoint/resume, output_dir.

`Trainer` and `create_strategy` load TensorFlow on first access.
"""

from bert_tf.lazy_exports import lazy_exports

_EXPORTS = {
    "Trainer": "bert_tf.training.trainer",
    "create_strategy": "bert_tf.training.strategy",
}

__all__ = ["Trainer", "create_strategy"]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
