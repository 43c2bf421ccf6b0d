"""What extract_features is asked for: which layers of which texts."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.checks import required


@dataclasses.dataclass(frozen=True)
class FeatureExtractionOptions:
    """extract_features' options (flags of the same names).

    Args:
      input_file: one example per line, `A ||| B` for a pair.
      output_file: JSON lines out.
      init_checkpoint, bert_config_file, vocab_file, do_lower_case: the model.
      layers: comma-separated layer indexes (-1 the last).
      max_seq_length: tokens per example.
      batch_size: examples per batch.

    Example:

    ```python
    FeatureExtractionOptions("in.txt", "out.jsonl", "ckpt", vocab_file="vocab.txt")
    ```
    """

    input_file: str
    output_file: str
    init_checkpoint: str
    vocab_file: str
    bert_config_file: str | None = None
    do_lower_case: bool = True
    layers: str = "-1,-2,-3,-4"
    max_seq_length: int = 128
    batch_size: int = 32

    def __post_init__(self):
        for name in ("input_file", "output_file", "init_checkpoint", "vocab_file"):
            required(name, getattr(self, name))
        positive("batch_size", self.batch_size)
        self.layer_indexes()
        for name in ("input_file", "vocab_file", "bert_config_file"):
            existing_path(name, getattr(self, name))

    def layer_indexes(self):
        """--layers as a list of ints."""
        try:
            return [int(x) for x in self.layers.split(",")]
        except ValueError:
            raise UserInputError(
                f"--layers={self.layers}: expected comma-separated layer indexes "
                "(e.g. -1,-2,-3,-4)"
            ) from None
