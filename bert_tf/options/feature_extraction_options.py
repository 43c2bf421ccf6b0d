"""What extract_features is asked for: which layers of which texts."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.option import option
from bert_tf.options.option import same_as
from bert_tf.options.run_options import RunOptions


@dataclasses.dataclass(frozen=True)
class FeatureExtractionOptions:
    """extract_features' options (flags of the same names).

    Args:
      input_file: one example per line, `A ||| B` for a pair.
      output_file: JSON lines out.
      init_checkpoint, bert_config_file, vocab_file, do_lower_case: the model.
      layers: comma-separated layer indexes (-1 the last).
      max_seq_length: int = same_as(RunOptions, "max_seq_length")
      batch_size: examples per batch.
      use_tpu, master, num_tpu_cores, use_one_hot_embeddings: the original's,
        accepted and ignored.

    Example:

    ```python
    FeatureExtractionOptions("in.txt", "out.jsonl", "ckpt", vocab_file="vocab.txt")
    ```
    """

    input_file: str = option(help="")
    output_file: str = option(help="")
    init_checkpoint: str = option(
        help="Initial checkpoint (usually from a pre-trained BERT model)."
    )
    vocab_file: str = same_as(RunOptions, "vocab_file", default=dataclasses.MISSING)
    bert_config_file: str | None = same_as(RunOptions, "bert_config_file")
    do_lower_case: bool = same_as(RunOptions, "do_lower_case")
    layers: str = option("-1,-2,-3,-4", "")
    max_seq_length: int = same_as(RunOptions, "max_seq_length")
    batch_size: int = option(32, "Batch size for predictions.")
    # The original's TPU flags: accepted, and ignored (one device).
    use_tpu: bool = option(False, "Whether to use TPU or GPU/CPU.")
    master: str | None = option(None, "If using a TPU, the address of the master.")
    num_tpu_cores: int = option(
        8, "Only used if `use_tpu` is True. Total number of TPU cores to use."
    )
    use_one_hot_embeddings: bool = option(
        False,
        "If True, tf.one_hot will be used for embedding lookups, otherwise "
        "tf.nn.embedding_lookup will be used. On TPUs, this should be True since "
        "it is much faster.",
    )

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
