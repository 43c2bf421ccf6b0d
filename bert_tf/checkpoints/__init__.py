"""Checkpoint I/O: Google TF1, TF Model Garden TF2, Hugging Face and KerasHub."""

from bert_tf.checkpoints.loading import CheckpointMismatchError
from bert_tf.checkpoints.loading import LoadReport
from bert_tf.checkpoints.loading import check_vocab_matches_config
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import save_tf1_checkpoint

__all__ = [
    "CheckpointMismatchError",
    "LoadReport",
    "check_vocab_matches_config",
    "find_checkpoint",
    "load_checkpoint",
    "save_tf1_checkpoint",
]
