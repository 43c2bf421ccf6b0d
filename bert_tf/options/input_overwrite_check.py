"""Refuses a run whose output file is one of its inputs, before anything is written.

`create_pretraining_data.py --input_file=corpus.txt --output_file=corpus.txt`
(or an `--input_file` glob that the output matches) would truncate the corpus
the moment the writer opens it; the same holds for every tool that writes a
file named by a flag.
"""

import os

from bert_tf.errors import UserInputError


def check_outputs_are_not_inputs(outputs, inputs):
    """Raises if any output path is one of the input files.

    Two local paths are the same file when their real paths agree (symlinks
    followed) or, both existing, `os.path.samefile` says so (hard links);
    remote URIs (`gs://...`) are compared as written.

    Args:
        outputs: `(flag, path)` pairs of the files the run will write (a
            flag, or a parameter name).
        inputs: `(flag, paths)` pairs: each input flag (or parameter) and
            the files it names (globs already expanded).

    Raises:
        UserInputError: naming the output flag, the path and the input flag.

    Example:
    >>> check_outputs_are_not_inputs(
    ...     [("--output_file", "corpus.txt")], [("--input_file", ["corpus.txt"])]
    ... )
    Traceback (most recent call last):
    ...
    bert_tf.errors.UserInputError: --output_file=corpus.txt is also an input ...
    """
    for out_flag, out_path in outputs:
        for in_flag, in_paths in inputs:
            for in_path in in_paths:
                if in_path and _same_file(out_path, in_path):
                    raise UserInputError(
                        f"{out_flag}={out_path} is also an input ({in_flag} names "
                        f"{in_path}): writing it would destroy the input; choose "
                        f"another {out_flag}",
                        # Parameter names (library callers): the CLI's flags.
                        argument=tuple(
                            n for n in (out_flag, in_flag) if n.isidentifier()
                        ),
                    )


def _same_file(a, b):
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False
