"""One option, declared once: a dataclass field that carries what its flag shows.

The command-line tools generate their flags from these fields
(`bert_tf.cli.flags`): the flag's name is the field's, its type the field's
(bool, int, float, str; a tuple is a comma-separated list), its default the
field's, its help and choices the metadata's. No TensorFlow, no absl here.
"""

import dataclasses
import types

_KEY = "bert_tf.option"


def option(
    default=dataclasses.MISSING,
    help="",  # noqa: A002  (absl's name for it)
    *,
    choices=None,
    run_defining=False,
    absent_when_none=False,
    flag_default=dataclasses.MISSING,
    omitted_is_default=False,
    lower_bound=None,
    default_factory=dataclasses.MISSING,
):
    """A dataclass field that is also a command-line flag.

    Args:
      default: the field's default (none: a required argument; the flag's
        default is then None).
      help: the flag's help text (absl adds ``<a|b|c>:`` for `choices`).
      choices: the allowed values (an enum flag).
      run_defining: the value defines a training run: a rerun that changes
        it starts over (`bert_tf.options.checks.run_defining`).
      absent_when_none: None means the tool has no such flag; the field is
        then None, and a run-defining field is left out of the run's identity.
      flag_default: the flag's default when it is not the field's (e.g. the
        field's None is "no such flag" and the flag's True is its default).
      omitted_is_default: a flag left off the command line gives the field's
        default, not the flag's (which only --help shows).
      lower_bound: the smallest value the flag takes (absl refuses less).
      default_factory: as `dataclasses.field`'s.

    Example:

    ```python
    @dataclasses.dataclass(frozen=True)
    class MyOptions:
        top_k: int = option(10, "Results per query.", run_defining=True)
    ```
    """
    metadata = {
        "help": help,
        "choices": tuple(choices) if choices is not None else None,
        "run_defining": run_defining,
        "absent_when_none": absent_when_none,
        "omitted_is_default": omitted_is_default,
        "lower_bound": lower_bound,
    }
    if flag_default is not dataclasses.MISSING:
        metadata["flag_default"] = flag_default
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata={_KEY: metadata}
    )


def same_as(options_class, name, **changes):
    """The field `name` of `options_class` again (its metadata and default),
    with `changes` (`option`'s arguments), for a class with the same option.

    Example:

    ```python
    vocab_file: str | None = same_as(SavedModelExportOptions, "vocab_file")
    ```
    """
    field = fields_by_name(options_class)[name]
    arguments = dict(field.metadata[_KEY])
    arguments["default"] = field.default
    arguments["default_factory"] = field.default_factory
    arguments.update(changes)
    return option(**arguments)


def metadata(field):
    """The option metadata of a dataclass field (None: not a flag)."""
    return field.metadata.get(_KEY)


def fields_by_name(options_class):
    return {field.name: field for field in dataclasses.fields(options_class)}


def value_type(field):
    """The field's type without None (`int | None` -> int)."""
    kind = field.type
    if isinstance(kind, types.UnionType):
        kinds = [k for k in kind.__args__ if k is not type(None)]
        kind = kinds[0]
    return kind


def nested_options(field):
    """The options class a field holds (`training: TrainingOptions`), or None."""
    kind = value_type(field)
    return kind if isinstance(kind, type) and dataclasses.is_dataclass(kind) else None


def flag_default(field):
    """The default the field's flag shows."""
    meta = metadata(field)
    if "flag_default" in meta:
        return meta["flag_default"]
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return None
