r"""Embeds a text file with a sentence encoder into `.npy` + ids (and TFRecord).

    python embed.py --init_checkpoint=all-MiniLM-L6-v2 \
      --input_file=sentences.txt --output_file=/tmp/sentences.npy

One text per line (.txt), or a column of a .tsv/.csv (with a header) or a
.jsonl file (--text_column, --id_column). Writes output_file (float32 [rows,
dim]) and <output_file without .npy>.ids.txt (the id column, else line
numbers), streaming: files larger than memory work.
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.embed_options import EmbedOptions

# The options `BertSentenceEncoder.from_checkpoint` takes (None: the model's).
_ENCODER_SETTINGS = (
    "pooling",
    "normalize",
    "max_seq_length",
    "vocab_file",
    "do_lower_case",
)
# What an exported .tflite file has fixed (its metadata says which).
_FIXED_BY_THE_FILE = (*_ENCODER_SETTINGS, "prompt_name", "truncate_dim")


def checked_input(options):
    """`(options, rows)`: every input row checked before TensorFlow loads (a
    bad file is named in a second, not after the model)."""
    from bert_tf.tasks.embed_file import count_rows

    o = options
    return o, count_rows(o.input_file, o.input_format, o.text_column, o.id_column)


def run(options, rows):
    """The model of --init_checkpoint, then `bert_tf.tasks.embed_file.embed_file`
    over the `rows` rows `checked_input` counted (TensorFlow imported now)."""
    from bert_tf.tasks.embed_file import embed_file

    f = options
    if f.init_checkpoint.endswith(".tflite"):
        model = _litert_model(f)
    else:
        from bert_tf.models import BertSentenceEncoder

        settings = {name: getattr(f, name) for name in _ENCODER_SETTINGS}
        model = BertSentenceEncoder.from_checkpoint(f.init_checkpoint, **settings)
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
    OptionFlags(EmbedOptions),
    run,
    required=("init_checkpoint", "input_file", "output_file"),
    check=checked_input,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
