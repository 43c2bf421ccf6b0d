"""The checks the option types share; each message names the flag at fault."""

import dataclasses
import glob
import os

from bert_tf.errors import UserInputError
from bert_tf.options.option import metadata
from bert_tf.serving.families import OWN_LENGTH_MODEL_TYPES


def positive(name, value):
    """`--name: must be positive, got 0` unless `value` is None or ≥ 1."""
    if value is not None and value < 1:
        raise UserInputError(f"--{name}: must be positive, got {value}")


# [CLS], one piece of text and [SEP]: the shortest input that holds a text.
MIN_SEQ_LENGTH = 3


def holds_a_text(name, max_seq_length):
    """`--name=2: must be at least 3` unless `max_seq_length` is None or ≥ 3
    (below, every text is cut to nothing or the tokenizer fails)."""
    if max_seq_length is not None and max_seq_length < MIN_SEQ_LENGTH:
        raise UserInputError(
            f"--{name}={max_seq_length}: must be at least {MIN_SEQ_LENGTH} "
            "([CLS], a piece of text, [SEP])"
        )


# The original's --max_seq_length default for the others.
DEFAULT_SEQ_LENGTH = 128


def export_seq_length(model_type, max_seq_length):
    """An export's `max_seq_length`: as given; not given (None), the
    checkpoint's own for `OWN_LENGTH_MODEL_TYPES` (None), else 128."""
    if max_seq_length is None:
        return None if model_type in OWN_LENGTH_MODEL_TYPES else DEFAULT_SEQ_LENGTH
    positive("max_seq_length", max_seq_length)
    holds_a_text("max_seq_length", max_seq_length)
    if model_type == "retrieval":
        raise UserInputError(
            f"--max_seq_length={max_seq_length}: a retrieval export reads with "
            "its towers' own lengths; leave the flag out"
        )
    return max_seq_length


def check_choices(options):
    """`--name=value: expected one of a, b` for the first field of `options`
    whose value is not one of the choices it declares (``option(choices=)``;
    None passes where it is the field's default). The fields of the options
    it holds are theirs to check.

    The flags' enums check the command line; this checks a library caller's
    arguments.
    """
    for field in dataclasses.fields(options):
        meta = metadata(field)
        choices = meta and meta["choices"]
        value = getattr(options, field.name)
        if not choices or (value is None and field.default is None):
            continue
        if value not in choices:
            raise UserInputError(
                f"--{field.name}={value}: expected one of {', '.join(choices)}"
            )


def existing_path(name, path, what="does not exist"):
    """`--name: path does not exist` for a local path that is missing.

    Remote paths (`gs://…`) are left to the reader, which needs TensorFlow.
    """
    if path and "://" not in str(path) and not os.path.exists(path):
        raise UserInputError(f"--{name}: {path} {what}")


def existing_checkpoint(name, path):
    """`--name: path does not exist` for a local checkpoint that is missing:
    neither a file or directory nor a TF checkpoint prefix (`path.index`)."""
    if not path or "://" in str(path) or os.path.exists(path):
        return
    if glob.glob(glob.escape(str(path)) + ".*"):
        return
    raise UserInputError(
        f"--{name}: {path} does not exist (no such file, directory or "
        "checkpoint prefix)"
    )


def required(name, value):
    """The original's `Flag --name must be specified.`"""
    if value is None or value == "":
        raise UserInputError(f"Flag --{name} must be specified.")


def run_defining(options):
    """`{name: value}` of the fields that define a training run (declared
    with ``option(..., run_defining=True)``), from `options` and the option
    objects it holds.

    A field declared ``absent_when_none`` is left out when None: the tool
    has no such flag (e.g. run_squad has no --pad_to_longest).
    """
    settings = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        meta = metadata(field)
        if dataclasses.is_dataclass(value):
            settings.update(run_defining(value))
        elif meta and meta["run_defining"]:
            if value is None and meta["absent_when_none"]:
                continue
            settings[field.name] = list(value) if isinstance(value, tuple) else value
    return settings


def check_once(options, run):
    """`options.check(run)`, unless it passed for this `run` already: the
    command line checks before TensorFlow loads, and the task would again."""
    if options.__dict__.get("_checked_for") is not run:
        options.check(run)
        object.__setattr__(options, "_checked_for", run)


def sequence_length_fits(max_seq_length, config):
    """The original's check: `max_seq_length` ≤ the model's positions
    (`config.max_position_embeddings`), with both flags named."""
    if max_seq_length > config.max_position_embeddings:
        raise UserInputError(
            f"Cannot use sequence length {max_seq_length} because the BERT "
            "model was only trained up to sequence length "
            f"{config.max_position_embeddings} "
            "(--max_seq_length > max_position_embeddings)"
        )
