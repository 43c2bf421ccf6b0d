"""What embed is asked to do: which texts, into which files, in what batches."""

import dataclasses
import os

from bert_tf.options.checks import existing_path
from bert_tf.options.checks import holds_a_text
from bert_tf.options.checks import positive
from bert_tf.options.input_overwrite_check import check_outputs_are_not_inputs


@dataclasses.dataclass(frozen=True)
class EmbedOptions:
    """embed's options (flags of the same names), checked before TensorFlow loads.

    Args:
      init_checkpoint: the sentence encoder (a directory, checkpoint or .tflite).
      input_file: the texts.
      output_file: the `.npy` written; `<output_file without .npy>.ids.txt`
        beside it.
      output_tfrecord: also a TFRecord, or None.
      batch_size: texts per forward pass.
      max_seq_length: longest input in tokens, or None (the model's).
      vocab_file: another vocabulary, or None (the checkpoint's).

    Example:

    ```python
    EmbedOptions("all-MiniLM-L6-v2", "texts.txt", "texts.npy", batch_size=64)
    ```
    """

    init_checkpoint: str
    input_file: str
    output_file: str
    output_tfrecord: str | None = None
    batch_size: int = 32
    max_seq_length: int | None = None
    vocab_file: str | None = None

    def __post_init__(self):
        positive("batch_size", self.batch_size)
        holds_a_text("max_seq_length", self.max_seq_length)
        existing_path("input_file", self.input_file)
        existing_path("vocab_file", self.vocab_file)
        check_outputs_are_not_inputs(self.outputs(), self.inputs())

    def ids_file(self):
        """The ids written beside `output_file`."""
        return os.path.splitext(self.output_file)[0] + ".ids.txt"

    def outputs(self):
        written = [("--output_file", self.output_file)]
        written.append(("--output_file (its .ids.txt)", self.ids_file()))
        if self.output_tfrecord:
            written.append(("--output_tfrecord", self.output_tfrecord))
        return written

    def inputs(self):
        read = [("--input_file", [self.input_file])]
        read.append(("--init_checkpoint", [self.init_checkpoint]))
        if self.vocab_file:
            read.append(("--vocab_file", [self.vocab_file]))
        return read
