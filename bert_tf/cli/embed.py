r"""Embeds a text file with a sentence encoder into `.npy` + ids (and TFRecord).

    python embed.py --init_checkpoint=all-MiniLM-L6-v2 \
      --input_file=sentences.txt --output_file=/tmp/sentences.npy

One text per line (.txt), or a column of a .tsv/.csv (with a header) or a
.jsonl file (--text_column, --id_column). Writes output_file (float32 [rows,
dim]) and <output_file without .npy>.ids.txt (the id column, else line
numbers), streaming: files larger than memory work.

Installed as `bert-tf-embed`; also `python -m bert_tf.cli.embed` and `python embed.py`.
"""

from absl import flags

from bert_tf.cli.command import Command


def define_flags():
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "The sentence encoder: a sentence-transformers directory (e.g. "
        "all-MiniLM-L6-v2), a run_similarity.py --output_dir, any BERT "
        "checkpoint with --pooling, or an embedding .tflite file of "
        "export_litert.py (run by LiteRT, int8 by default: the fastest on CPUs).",
    )
    flags.DEFINE_string(
        "input_file", None, "Texts: .txt (one per line), .tsv, .csv or .jsonl."
    )
    flags.DEFINE_string("output_file", None, "Embeddings .npy [rows, dim] float32.")
    flags.DEFINE_enum(
        "input_format",
        None,
        ["text", "tsv", "csv", "jsonl"],
        "Default: from the extension.",
    )
    flags.DEFINE_string(
        "text_column", None, "tsv/csv/jsonl: the column holding the text."
    )
    flags.DEFINE_string(
        "id_column",
        None,
        "tsv/csv/jsonl: the column of row ids (default: line numbers).",
    )
    flags.DEFINE_string(
        "output_tfrecord",
        None,
        "Also write a TFRecord of tf.train.Example {id, embedding}.",
    )
    flags.DEFINE_integer("batch_size", 32, "Texts per forward pass.")
    flags.DEFINE_string(
        "pooling",
        None,
        "mean, cls, max or mean_sqrt_len_tokens ('+' joins several); needed for a "
        "plain BERT checkpoint, a sentence-transformers directory says its own.",
    )
    flags.DEFINE_bool("normalize", None, "L2-normalise (default: as the model says).")
    flags.DEFINE_integer(
        "max_seq_length",
        None,
        "Longest input in tokens (default: the model's, else 128).",
    )
    flags.DEFINE_string("vocab_file", None, "Default: the vocab.txt of the checkpoint.")
    flags.DEFINE_bool(
        "do_lower_case", None, "Default: what the checkpoint's tokenizer files say."
    )
    # --- flags added for issue 45 ---
    flags.DEFINE_string(
        "prompt_name",
        None,
        "A key of the model's prompts (config_sentence_transformers.json), e.g. "
        "query or document: its text goes before each input (default: the "
        "model's default_prompt_name, if any).",
    )
    flags.DEFINE_integer(
        "truncate_dim",
        None,
        "Keep the first N dimensions of each embedding (Matryoshka models), as "
        "sentence-transformers' truncate_dim. Default: all.",
    )


def checked_input(flags_obj):
    """`(flags, rows)`: the flags (`EmbedOptions`), the paths and every input
    row checked before TensorFlow loads (a bad file is named in a second, not
    after the model)."""
    from bert_tf.options.checks import existing_checkpoint
    from bert_tf.options.checks import positive
    from bert_tf.options.embed_options import EmbedOptions
    from bert_tf.tasks.embed_file import count_rows

    f = flags_obj
    existing_checkpoint("init_checkpoint", f.init_checkpoint)
    positive("truncate_dim", f.truncate_dim)
    EmbedOptions(
        init_checkpoint=f.init_checkpoint,
        input_file=f.input_file,
        output_file=f.output_file,
        output_tfrecord=f.output_tfrecord,
        batch_size=f.batch_size,
        max_seq_length=f.max_seq_length,
        vocab_file=f.vocab_file,
    )
    return f, count_rows(f.input_file, f.input_format, f.text_column, f.id_column)


def run(flags_obj, rows):
    """The model of --init_checkpoint, then `bert_tf.tasks.embed_file.embed_file`
    over the `rows` rows `checked_input` counted (TensorFlow imported now)."""
    from bert_tf.tasks.embed_file import embed_file

    f = flags_obj
    if f.init_checkpoint.endswith(".tflite"):
        model = _litert_model(f)
    else:
        from bert_tf.models import BertSentenceEncoder

        model = BertSentenceEncoder.from_checkpoint(
            f.init_checkpoint,
            pooling=f.pooling,
            normalize=f.normalize,
            max_seq_length=f.max_seq_length,
            vocab_file=f.vocab_file,
            do_lower_case=f.do_lower_case,
        )
        model.set_defaults(f.prompt_name, f.truncate_dim)
    return embed_file(
        model,
        f.input_file,
        f.output_file,
        file_format=f.input_format,
        text_column=f.text_column,
        id_column=f.id_column,
        batch_size=f.batch_size,
        output_tfrecord=f.output_tfrecord,
        rows=rows,
    )


# What an exported .tflite file has fixed (its metadata says which).
_FIXED_BY_THE_FILE = (
    "pooling",
    "normalize",
    "max_seq_length",
    "vocab_file",
    "do_lower_case",
    "prompt_name",
    "truncate_dim",
)


def _litert_model(f):
    """The `LiteRTModel` of an embedding .tflite --init_checkpoint."""
    import os

    from bert_tf.errors import UserInputError
    from bert_tf.serving.litert_model import LiteRTModel

    given = [name for name in _FIXED_BY_THE_FILE if getattr(f, name) is not None]
    if given:
        raise UserInputError(
            f"--{given[0]}: {f.init_checkpoint} is a LiteRT export, whose "
            "tokenization and pooling are fixed in the file; leave the flag out"
        )
    try:
        model = LiteRTModel(f.init_checkpoint, num_threads=os.cpu_count() or 1)
        model.require_model("embedding")
    except ImportError as error:  # the litert extra is not installed
        raise UserInputError(
            f"--init_checkpoint={f.init_checkpoint}: {error}"
        ) from None
    except ValueError as error:  # not a bert_tf embedding export, or no model
        raise UserInputError(
            f"--init_checkpoint: {error} (export_litert.py --model_type=embedding "
            "writes one)"
        ) from error
    return model


COMMAND = Command(
    "embed",
    __doc__,
    define_flags,
    run,
    required=("init_checkpoint", "input_file", "output_file"),
    check=checked_input,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
