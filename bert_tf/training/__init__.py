"""Training: strategies, the custom loop with checkpoint/resume, shared flags."""

from bert_tf.training.strategy import create_strategy
from bert_tf.training.trainer import Trainer

__all__ = ["Trainer", "create_strategy"]
