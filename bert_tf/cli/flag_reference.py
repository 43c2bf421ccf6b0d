"""The command reference: every tool's flags as Markdown, from the tools themselves.

Each tool module of `bert_tf.cli` defines its flags on import (its one
`Command`); this imports them one after another, renders each as its
``--help`` groups it (description, installed commands, the original's flags,
then bert_tf's, with defaults and help), and removes the tool's flags before
the next one defines its own. Nothing here repeats flag metadata, so the
reference cannot drift from the flags. TensorFlow is not imported.

The docs site's hook (`docs/hooks/command_reference.py`) appends it to
docs/reference/commands.md at build time.

Example:

```python
from bert_tf.cli.flag_reference import reference_markdown

print(reference_markdown())  # one "## bert-tf-<name>" section per tool
```
"""

import importlib
import pkgutil
import re

from absl import flags

from bert_tf import cli
from bert_tf.cli.command import console_command

# Modules of bert_tf.cli that are not tools; demo.py parses its own arguments.
_NOT_TOOLS = ("command", "flags", "flag_reference", "demo")
_MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]|<>#])")


def tool_names():
    """The tools of `bert_tf.cli` (a module with a `COMMAND`), by name."""
    names = [m.name for m in pkgutil.iter_modules(cli.__path__)]
    return sorted(name for name in names if name not in _NOT_TOOLS)


def _escaped(text):
    """`text` as literal Markdown inline text (one line)."""
    return _MARKDOWN_SPECIALS.sub(r"\\\1", " ".join(text.split()))


def _flag_row(flag):
    name = f"--[no]{flag.name}" if flag.boolean else f"--{flag.name}"
    return f"| `{name}` | `{flag.default_as_str}` | {_escaped(flag.help or '')} |"


def tool_section(command):
    """The Markdown section of one `bert_tf.cli.command.Command`."""
    lines = [
        f"## {console_command(command.name)}",
        "",
        command.started_as().replace("\n", " "),
        "",
        "```text",
        (command.doc or "").strip("\n"),
        "```",
    ]
    for title, names in command.flag_groups():
        lines += ["", f"**{title}**", "", "| flag | default | help |", "|---|---|---|"]
        lines += [_flag_row(flags.FLAGS[name]) for name in names]
    return "\n".join(lines) + "\n"


def reference_markdown(names=None):
    """Every tool's section (`tool_names()` unless `names`), one after another.

    Each tool's flags are removed from `absl.flags.FLAGS` once it is rendered,
    so the next tool defines its own flags of the same names.
    """
    sections = []
    for name in names or tool_names():
        command = importlib.import_module(f"bert_tf.cli.{name}").COMMAND
        sections.append(tool_section(command))
        for flag_name in command.defined_flags:
            delattr(flags.FLAGS, flag_name)
    return "\n".join(sections)
