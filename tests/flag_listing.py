"""Every tool's flags as a user meets them, as JSON: to diff a refactor of the flags.

For each tool of `bert_tf/cli` (setup.py's COMMANDS), in its own process
(each defines its flags on import): its ``--help`` text and, per flag, the
name, default, help, type, enum values, the module absl files it under in
``--helpfull``, and whether the tool requires it. TensorFlow is not imported.

    PYTHONPATH=. python tests/flag_listing.py /tmp/flags.json
    PYTHONPATH=. python tests/flag_listing.py /tmp/after.json --diff /tmp/flags.json
"""

import argparse
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

_DUMP = r"""
import json, sys
from absl import flags
from bert_tf.cli import {tool} as tool
command = tool.COMMAND
registry = flags.FLAGS
listing = []
for name in command.defined_flags:
    flag = registry[name]
    listing.append({{
        "name": name,
        "default": flag.default_as_str,
        "help": flag.help,
        "type": flag.flag_type(),
        "enum": list(getattr(flag.parser, "enum_values", None) or []) or None,
        "module": registry.find_module_defining_flag(name),
        "required": name in command.required,
    }})
print(json.dumps({{
    "help": command.help_text(),
    "flags": listing,
    "tensorflow_imported": "tensorflow" in sys.modules,
}}))
"""


def tools():
    """setup.py's COMMANDS, read without running setup()."""
    text = open(os.path.join(REPO, "setup.py"), encoding="utf-8").read()
    start = text.index("COMMANDS = (")
    block = text[start : text.index(")", start)]
    return [line.strip().strip('",') for line in block.splitlines()[1:] if line.strip()]


def listing(tool):
    env = {**os.environ, "PYTHONPATH": REPO}
    result = subprocess.run(
        [sys.executable, "-c", _DUMP.format(tool=tool)],
        capture_output=True,
        text=True,
        env=env,
    )
    if result.returncode:
        raise SystemExit(f"{tool}:\n{result.stderr}")
    return json.loads(result.stdout)


def diff(before, after):
    """Lines describing every difference between two listings."""
    lines = []
    for tool in sorted(set(before) | set(after)):
        b, a = before.get(tool), after.get(tool)
        if b is None or a is None:
            lines.append(f"{tool}: only in {'after' if b is None else 'before'}")
            continue
        if b["help"] != a["help"]:
            lines.append(f"{tool}: --help text differs")
        bf = {f["name"]: f for f in b["flags"]}
        af = {f["name"]: f for f in a["flags"]}
        for name in sorted(set(bf) | set(af)):
            if name not in af or name not in bf:
                lines.append(
                    f"{tool} --{name}: only in {'before' if name in bf else 'after'}"
                )
                continue
            for key in bf[name]:
                if bf[name][key] != af[name].get(key):
                    lines.append(
                        f"{tool} --{name} {key}: {bf[name][key]!r} -> {af[name].get(key)!r}"
                    )
        if a["tensorflow_imported"]:
            lines.append(f"{tool}: imports TensorFlow")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output")
    parser.add_argument("--diff", help="a listing to compare with")
    args = parser.parse_args()
    result = {tool: listing(tool) for tool in tools()}
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    if args.diff:
        with open(args.diff, encoding="utf-8") as f:
            before = json.load(f)
        for line in diff(before, result):
            print(line)
            if line.endswith("--help text differs"):
                import difflib

                tool = line.split(":")[0]
                sys.stdout.writelines(
                    difflib.unified_diff(
                        before[tool]["help"].splitlines(True),
                        result[tool]["help"].splitlines(True),
                        n=1,
                    )
                )


if __name__ == "__main__":
    main()
