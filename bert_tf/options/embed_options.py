"""What embed is asked to do: which texts, into which files, in what batches."""

import dataclasses
import os

from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_checkpoint
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import holds_a_text
from bert_tf.options.checks import positive
from bert_tf.options.input_overwrite_check import check_outputs_are_not_inputs
from bert_tf.options.option import option

# The layouts embed reads (default: from the file's extension).
EMBED_INPUT_FORMATS = ("text", "tsv", "csv", "jsonl")


@dataclasses.dataclass(frozen=True)
class EmbedOptions:
    """embed's options (flags of the same names), checked before TensorFlow loads.

    Args:
      init_checkpoint: the sentence encoder (a directory, checkpoint or .tflite).
      input_file: the texts.
      output_file: the `.npy` written; `<output_file without .npy>.ids.txt`
        beside it.
      input_format: one of `EMBED_INPUT_FORMATS`, or None (from the extension).
      text_column, id_column: a table's text and row-id columns.
      output_tfrecord: also a TFRecord, or None.
      batch_size: texts per forward pass.
      pooling, normalize: a plain BERT checkpoint's sentence embedding, or
        None (the model's own).
      max_seq_length: longest input in tokens, or None (the model's).
      vocab_file: another vocabulary, or None (the checkpoint's).
      do_lower_case: or None (what the checkpoint's tokenizer files say).

    Example:

    ```python
    EmbedOptions("all-MiniLM-L6-v2", "texts.txt", "texts.npy", batch_size=64)
    ```
    """

    init_checkpoint: str = option(
        help="The sentence encoder: a sentence-transformers directory (e.g. "
        "all-MiniLM-L6-v2), a run_similarity.py --output_dir, any BERT "
        "checkpoint with --pooling, or an embedding .tflite file of "
        "export_litert.py (run by LiteRT, int8 by default: the fastest on CPUs)."
    )
    input_file: str = option(help="Texts: .txt (one per line), .tsv, .csv or .jsonl.")
    output_file: str = option(help="Embeddings .npy [rows, dim] float32.")
    input_format: str | None = option(
        None, "Default: from the extension.", choices=EMBED_INPUT_FORMATS
    )
    text_column: str | None = option(
        None, "tsv/csv/jsonl: the column holding the text."
    )
    id_column: str | None = option(
        None, "tsv/csv/jsonl: the column of row ids (default: line numbers)."
    )
    output_tfrecord: str | None = option(
        None, "Also write a TFRecord of tf.train.Example {id, embedding}."
    )
    batch_size: int = option(32, "Texts per forward pass.")
    pooling: str | None = option(
        None,
        "mean, cls, max or mean_sqrt_len_tokens ('+' joins several); needed for a "
        "plain BERT checkpoint, a sentence-transformers directory says its own.",
    )
    normalize: bool | None = option(None, "L2-normalise (default: as the model says).")
    max_seq_length: int | None = option(
        None, "Longest input in tokens (default: the model's, else 128)."
    )
    vocab_file: str | None = option(None, "Default: the vocab.txt of the checkpoint.")
    do_lower_case: bool | None = option(
        None, "Default: what the checkpoint's tokenizer files say."
    )

    prompt_name: str | None = option(
        None,
        "A key of the model's prompts (config_sentence_transformers.json), e.g. "
        "query or document: its text goes before each input (default: the "
        "model's default_prompt_name, if any).",
    )
    truncate_dim: int | None = option(
        None,
        "Keep the first N dimensions of each embedding (Matryoshka models), as "
        "sentence-transformers' truncate_dim. Default: all.",
    )

    def __post_init__(self):
        existing_checkpoint("init_checkpoint", self.init_checkpoint)
        check_choices(self)
        positive("batch_size", self.batch_size)
        positive("truncate_dim", self.truncate_dim)
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
