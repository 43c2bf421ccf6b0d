"""A Beam job's ``<prefix>-SSSSS-of-NNNNN`` output: checked before, the only one after.

Beam writes the shards under a temporary name and renames them when the
job ends, so a failed job leaves the previous run's shards as they were. A
rerun with fewer shards, though, left the first run's ``-of-00002`` files
beside the new ``-of-00001`` one, and a glob of the prefix read both runs:
`ReplaceShards` deletes, once the new shards are in place, every shard of
the prefix the job did not write. `check_writable` names a read-only or
full output directory before any work starts.
"""

import os
import re
import uuid

from bert_tf.beam.runner_options import import_beam
from bert_tf.errors import UserInputError

beam = import_beam()

__all__ = ["ReplaceShards", "check_writable"]


def check_writable(argument, prefix):
    """Raises a UserInputError naming `argument` when the local directory of
    `prefix` cannot be made or written (read-only, full, not a directory).

    Other file systems (gs://, ...) are left to the job.
    """
    if "://" in prefix:
        return
    directory = os.path.dirname(os.path.abspath(prefix))
    probe = os.path.join(directory, f".bert_tf-write-check-{uuid.uuid4().hex}")
    try:
        os.makedirs(directory, exist_ok=True)
        with open(probe, "wb") as f:
            f.write(b"\0")
            f.flush()
            os.fsync(f.fileno())
    except OSError as error:
        raise UserInputError(
            f"{argument}={prefix}: cannot write in {directory}: {error.strerror}",
            argument=argument,
        ) from None
    finally:
        if os.path.exists(probe):
            os.remove(probe)


def _shards_of(prefix):
    """The existing files named ``<prefix>-SSSSS-of-NNNNN``."""
    from apache_beam.io.filesystems import FileSystems

    name = re.compile(re.escape(prefix) + r"-\d{5}-of-\d{5}$")
    found = FileSystems.match([prefix + "-*-of-*"])[0].metadata_list
    return sorted(m.path for m in found if name.match(m.path))


def _delete_stale(written, prefix):
    from absl import logging
    from apache_beam.io.filesystems import FileSystems

    stale = sorted(set(_shards_of(prefix)) - set(written))
    if stale:
        FileSystems.delete(stale)
        logging.info(
            "Deleted %d shards of an earlier run of %s-*: %s",
            len(stale),
            prefix,
            ", ".join(stale),
        )
    return len(stale)


class ReplaceShards(beam.PTransform):
    """After a file write (its output: the names it wrote), deletes the
    other ``<prefix>-SSSSS-of-NNNNN`` files.

    Args:
      prefix: the write's ``file_path_prefix``.

    Example:

    ```python
    names = lines | beam.io.WriteToText(prefix)
    names | ReplaceShards(prefix)
    ```
    """

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def expand(self, written):
        return (
            written
            | "AllWritten" >> beam.combiners.ToList()
            | "DeleteStale" >> beam.Map(_delete_stale, self._prefix)
        )
