"""Opening a local input file without blocking on a FIFO or a device."""

import os
import stat

from bert_tf.errors import UserInputError


def open_input_file(path):
    """Opens the local file `path` for binary reading.

    A FIFO (named pipe) or a device given as an input would block forever
    (or never end) on open or read: it is refused, naming the path.

    Raises:
        UserInputError: `path` is not a regular file (nor a directory, which
            `open` reports itself).
        OSError: as `open` (missing file, permission, a directory).

    Example:
    >>> with open_input_file("train.tsv") as f:
    ...     data = f.read()
    """
    check_not_a_pipe(path)
    return open(path, "rb")  # noqa: SIM115 (the caller closes it)


def check_not_a_pipe(path):
    """Raises UserInputError if the local `path` is a FIFO, socket or device."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # open() reports it, naming the path
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise UserInputError(
            f"{path}: not a regular file (a FIFO, socket or device, which would "
            "block or never end): give a file"
        )


def remove_partial_output(path):
    """Removes the cut output file `path` a failed write left, if it is a
    regular file.

    An output given as a device (/dev/full, /dev/null) or a FIFO is never
    removed: run as root, removing /dev/full would leave a plain file in its
    place, and the next write there would succeed silently.

    Example:
    >>> remove_partial_output("out/train.tf_record")
    """
    try:
        if stat.S_ISREG(os.lstat(path).st_mode):
            os.remove(path)
    except OSError:
        pass  # already gone, or not ours to remove
