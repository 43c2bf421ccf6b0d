"""The generation settings shared by every part of the pre-training data pipeline."""

import dataclasses

from bert_tf.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class GenerationOptions:
    """The original's generation flags, checked once, passed as one value.

    Args:
      max_seq_length: the record length; A and B get max_seq_length - 3
        tokens ([CLS], [SEP], [SEP]).
      max_predictions_per_seq: cap on masked positions per instance.
      random_seed: seed of the default mode's RNG (sharded mode: of every
        shard's seed, see ``shard_seed``).
      dupe_factor: passes over the documents, each with different masks and
        pairs.
      masked_lm_prob: fraction of tokens to predict.
      short_seq_prob: probability of a shorter target length for a document.
      do_whole_word_mask: mask whole words ("##" pieces with their word).

    Example:

    >>> options = GenerationOptions(max_seq_length=128, dupe_factor=5)
    >>> options.max_predictions_per_seq
    20
    """

    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    random_seed: int = 12345
    dupe_factor: int = 10
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    do_whole_word_mask: bool = False

    def __post_init__(self):
        # max_num_tokens must allow one token in A and one in B.
        if self.max_seq_length < 5:
            raise UserInputError(
                f"max_seq_length must be >= 5, got {self.max_seq_length}"
            )
        if self.max_predictions_per_seq < 1:
            raise UserInputError(
                "max_predictions_per_seq must be >= 1, got "
                f"{self.max_predictions_per_seq}"
            )
        if self.dupe_factor < 1:
            raise UserInputError(f"dupe_factor must be >= 1, got {self.dupe_factor}")
        if not 0.0 <= self.masked_lm_prob <= 1.0:
            raise UserInputError(
                f"masked_lm_prob must be in [0, 1], got {self.masked_lm_prob}"
            )
        # Compared with rng.random(): -0.1 acts as 0 and 1.5 as 1, silently.
        if not 0.0 <= self.short_seq_prob <= 1.0:
            raise UserInputError(
                f"short_seq_prob must be in [0, 1], got {self.short_seq_prob}"
            )

    @property
    def max_num_tokens(self):
        """Tokens of A and B together ([CLS], [SEP], [SEP] take 3)."""
        return self.max_seq_length - 3
