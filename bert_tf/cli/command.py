"""How every bert_tf command behaves: help, quiet TensorFlow, one-line errors.

A `Command` wraps a script's flags and its work:

* ``--help`` (``-h``, ``--helpshort``) prints the script's own flags, the
  original's first, then those bert_tf adds, and exits 0 at once: flags are
  defined without importing TensorFlow. ``--helpfull`` lists every flag.
* TensorFlow is imported only when the work starts, with its start-up
  messages (oneDNN notice, CUDA probing on machines without a GPU) held back
  and its C++ log at warnings and above; ``--verbosity=1`` shows everything.
* The flags are generated from typed option objects (`bert_tf.options`,
  `bert_tf.cli.flags`) and become them before TensorFlow loads: a bad value
  or a missing input file is reported in well under a second, naming the
  flag.
* Bad input (`bert_tf.errors.UserInputError`, a malformed data row, a missing
  file, a bad flag) prints one line naming the file, line or flag and exits
  2; ``--verbosity=1`` adds the traceback. Any other exception is a bug and
  keeps its traceback.
* A worker of a multi-worker run lost during training
  (`bert_tf.errors.LostWorkerError`) prints one line naming it and exits 3 on
  the workers that survive: restart all workers, training resumes.
"""

import dataclasses
import errno
import importlib
import os
import re
import sys
import textwrap
import traceback

from absl import app
from absl import flags
from absl import logging

from bert_tf.cli.flags import ORIGINAL_FLAGS
from bert_tf.errors import LostWorkerError
from bert_tf.errors import UserInputError
from bert_tf.options.run_identity import stop_if_other_run
from bert_tf.tensorflow_import import hold_back_keras_extras
from bert_tf.tensorflow_import import import_tensorflow

HELP_ARGS = ("-h", "-?", "--help", "--helpshort")
FULL_HELP_ARGS = ("--helpfull",)
USER_ERROR_EXIT_CODE = 2
# A worker of a multi-worker run was lost: restart all workers (they resume).
LOST_WORKER_EXIT_CODE = 3


def user_error_types():
    """The exception types that mean bad input rather than a bug."""
    types = [
        UserInputError,
        flags.Error,
        FileNotFoundError,
        IsADirectoryError,
        NotADirectoryError,
        PermissionError,
    ]
    tf = sys.modules.get("tensorflow")
    if tf is not None:
        # tf.io.gfile on a path that does not exist.
        types.append(tf.errors.NotFoundError)
    return tuple(types)


# File-system failures the user can fix (a read-only or full disk, a symlink
# loop, a directory given as a file, ...): one line, like bad input.
_USER_ERRNOS = {
    errno.EROFS,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.ELOOP,
    errno.EISDIR,
    errno.ENOTDIR,
    errno.ENOENT,
    errno.EEXIST,
    errno.EACCES,
    errno.EPERM,
    errno.ENAMETOOLONG,
}
# The same failures as TensorFlow's file system reports them (its messages
# carry the path and the C library's text).
_USER_OS_MESSAGES = tuple(os.strerror(code) for code in sorted(_USER_ERRNOS))


def is_user_error(exc):
    """Whether `exc` means bad input (or a file system to fix) rather than a bug."""
    if isinstance(exc, user_error_types()):
        return True
    if isinstance(exc, OSError):
        return exc.errno in _USER_ERRNOS
    tf = sys.modules.get("tensorflow")
    if tf is not None and isinstance(exc, tf.errors.OpError):
        return any(text in str(exc) for text in _USER_OS_MESSAGES)
    return False


def one_line(exc):
    """The exception's message on one line (the parameters an error names as
    its `arguments` written as their flags: `vocab_file=` -> `--vocab_file=`)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    flag_names = getattr(exc, "flags", {})
    for argument, flag in flag_names.items():
        # A mention, not part of a path or a word (a name without "_" may be
        # a word: only its `name=`); `--a/b` lists flags.
        name = re.escape(argument)
        end = "(?!\\w)" if "_" in argument else "(?==)"
        text = re.sub(rf"(?<![-\w./']){name}{end}", f"--{flag}", text)
        text = re.sub(rf"(--\w+/){name}{end}", rf"\1--{flag}", text)
    if flag_names and not any(f"--{flag}" in text for flag in flag_names.values()):
        text = f"--{next(iter(flag_names.values()))}: {text}"
    if isinstance(exc, OSError) and exc.filename and exc.strerror:
        text = f"{exc.filename}: {exc.strerror}"
        if exc.filename2:
            text = f"{exc.filename} -> {exc.filename2}: {exc.strerror}"
    return text


def _flag_text(flag):
    name = f"--[no]{flag.name}" if flag.boolean else f"--{flag.name}"
    if flag.short_name:
        name = f"-{flag.short_name},{name}"
    text = flag.help or ""
    lines = textwrap.wrap(
        f"{name}: {text}".rstrip(),
        width=88,
        initial_indent="  ",
        subsequent_indent="    ",
    )
    lines.append(f"    (default: {flag.default_as_str})")
    return "\n".join(lines)


def console_command(name):
    """The installed command of tool `name` (setup.py's scheme):
    ``run_classifier`` -> ``bert-tf-run-classifier``."""
    return "bert-tf-" + name.replace("_", "-")


@dataclasses.dataclass(eq=False)
class Command:
    """One command-line tool: its flags (defined at once) and its work.

    The flags of the original script of the same name
    (`bert_tf.cli.flags.ORIGINAL_FLAGS`) are listed first by ``--help``; the
    rest are listed as added by bert_tf.

    Args:
      name: the original script's name without ``.py`` (e.g.
        ``"run_classifier"``); the console command is ``bert-tf-`` + name
        with dashes (`console_command`).
      doc: the usage text shown first by ``--help`` (followed by the line
        naming the commands that start the tool).
      flags_source: the `bert_tf.cli.flags.OptionFlags` the tool's flags
        are generated from (they build the typed options, checked before
        TensorFlow loads), or a function defining the flags by hand.
      work: ``work(*options)`` does the job (``work(flags_obj)`` when
        `flags_source` is a function), or ``"module:function"`` naming it,
        imported only when the job starts.
      required: flags that must be given.
      uses_tensorflow: import TensorFlow (quietly) before the work starts.
      check: ``check(*options)`` runs before TensorFlow loads and returns
        the arguments of `work` (a tool's input checks beyond its options',
        so a bad file is named in a second).
      arguments: the command line's arguments after the flags (a list) are
        passed last to `check` (or `work`); without it they are ignored.
      print_result: print what `work` returns (an exporter's path).
      checkout_script: the checkout's script of the tool: True, a top-level
        ``<name>.py``; a folder name (``"data_prep"``), ``<folder>/<name>.py``
        (the data-preparation tools); False, none.

    Example:

    ```python
    COMMAND = Command(
        "run_squad",
        __doc__,
        OptionFlags(RunOptions, SquadOptions),
        "bert_tf.tasks.squad:run",
    )
    main = COMMAND.main  # the console command's entry point
    ```
    """

    name: str
    doc: str
    flags_source: object
    work: object
    required: tuple = ()
    uses_tensorflow: bool = True
    check: object = None
    arguments: bool = False
    print_result: bool = False
    checkout_script: bool | str = True

    def __post_init__(self):
        self.required = tuple(self.required)
        self.original_flags = ORIGINAL_FLAGS.get(self.name, ())
        self.options = None
        before = set(flags.FLAGS)
        if callable(self.flags_source):
            self.flags_source()
        else:
            self.options = self.flags_source
            self.flags_source.define(f"bert_tf.cli.{self.name}")
        self.defined_flags = [n for n in flags.FLAGS if n not in before]
        unknown = set(self.original_flags) - set(self.defined_flags)
        if unknown:
            raise AssertionError(f"{self.name}: original flags not defined: {unknown}")

    def started_as(self):
        """The --help line naming the commands that start the tool (wrapped
        at 88 columns between, not inside, the commands)."""
        pieces = ["Installed", "as", f"`{console_command(self.name)}`;", "also"]
        pieces.append(f"`python -m bert_tf.cli.{self.name}`")
        if self.checkout_script:
            pieces += ["and", f"`python {self.script_path()}`"]
        pieces[-1] += "."
        lines = [pieces[0]]
        for piece in pieces[1:]:
            if len(lines[-1]) + 1 + len(piece) > 88:
                lines.append(piece)
            else:
                lines[-1] += " " + piece
        return "\n".join(lines)

    def script_path(self):
        """The checkout's script, relative to the checkout (None if none)."""
        if not self.checkout_script:
            return None
        script = f"{self.name}.py"
        if isinstance(self.checkout_script, str):
            return f"{self.checkout_script}/{script}"
        return script

    def flag_groups(self):
        """[(title, [flag names])]: the groups --help lists, in order (the
        original's flags, then those bert_tf adds)."""
        registry = flags.FLAGS
        added = [
            n
            for n in self.defined_flags
            if n not in self.original_flags and registry[n].name == n
        ]
        groups = []
        if self.original_flags:
            groups.append(
                (f"Flags of the original {self.name}.py", self.original_flags)
            )
        if added:
            title = "Flags added by bert_tf" if self.original_flags else "Flags"
            groups.append((title, added))
        return groups

    def help_text(self):
        """The script's flags: the original's, then bert_tf's, then logging."""
        registry = flags.FLAGS
        sections = [(self.doc or "").strip(), self.started_as()]
        for title, names in self.flag_groups():
            sections.append(
                f"{title}:\n" + "\n".join(_flag_text(registry[n]) for n in names)
            )
        sections.append(
            "Logging and help:\n"
            "  --verbosity: -1 warnings only, 0 progress (default), 1 debug: also "
            "TensorFlow's\n    start-up messages and the traceback of input errors.\n"
            "  --helpfull: every flag, those of absl's logging included."
        )
        return "\n\n".join(s for s in sections if s) + "\n"

    def parse(self, argv):
        """Parses `argv` (help and flag errors exit here); returns the rest."""
        args = argv[1:]
        if any(a in HELP_ARGS for a in args):
            sys.stdout.write(self.help_text())
            sys.exit(0)
        if any(a in FULL_HELP_ARGS for a in args):
            sys.stdout.write(flags.FLAGS.get_help() + "\n")
            sys.exit(0)
        for name in self.required:
            flags.mark_flag_as_required(name)
        try:
            return flags.FLAGS(argv)
        except flags.Error as exc:
            self._print_error(exc)
            sys.exit(USER_ERROR_EXIT_CODE)

    def _print_error(self, exc):
        sys.stderr.write(f"{self.name}: error: {one_line(exc)}\n")

    def main(self, argv=None):
        """Parses `argv` (default: sys.argv) and does the work.

        Exits 0 when the work returns, 2 on bad input, 3 when a worker of a
        multi-worker run was lost (one line on stderr).
        """
        work = self.work
        if isinstance(work, str):
            module, function = work.split(":")

            def work(*args):
                return getattr(importlib.import_module(module), function)(*args)

        self.run(work, argv)

    def run(self, work, argv=None):
        """Parses the flags and calls ``work(*options)`` (``work(flags.FLAGS)``
        for flags defined by hand)."""
        argv = list(sys.argv if argv is None else argv) or [self.name]
        # A command's TensorFlow import without Keras's scikit-learn,
        # matplotlib, pandas, OpenCV and IPython integrations (seconds of
        # every start).
        hold_back_keras_extras()

        def main(argv):
            verbosity = flags.FLAGS.verbosity
            try:
                args = (flags.FLAGS,)
                if self.options is not None:
                    args = self.options.build(flags.FLAGS)
                    # A --do_train rerun with other settings than the run
                    # its output_dir holds: named now, not after the model.
                    stop_if_other_run(self.name, *args)
                if self.arguments:
                    args = (*args, list(argv[1:]))
                if self.check is not None:
                    args = tuple(self.check(*args))
                if self.uses_tensorflow:
                    import_tensorflow(verbosity)
                result = work(*args)
                if self.print_result:
                    print(result)
            except LostWorkerError as exc:
                if verbosity >= 1:
                    traceback.print_exc()
                logging.flush()
                self._print_error(exc)
                sys.exit(LOST_WORKER_EXIT_CODE)
            except Exception as exc:
                if not is_user_error(exc):
                    raise
                if verbosity >= 1:
                    traceback.print_exc()
                logging.flush()
                self._print_error(exc)
                sys.exit(USER_ERROR_EXIT_CODE)

        app.run(main, argv=argv, flags_parser=self.parse)
