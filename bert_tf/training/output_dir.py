"""Who writes an output_dir, and which run it holds.

`OutputDirLock`: one writer at a time. `RunSettings`: the settings that
define a training run, recorded beside its checkpoints, so that a rerun
resumes only the run it belongs to.
"""

import errno
import json
import os
import shutil
import socket

from absl import logging

from bert_tf.errors import UserInputError

LOCK_FILE = "run.lock"
SETTINGS_FILE = "run_settings.json"


class OutputDirInUseError(UserInputError):
    """Another live process holds the output_dir."""


class OutputDirLock:
    """An exclusive lock on `output_dir` for the life of a run.

    An advisory `flock` on `output_dir/run.lock`, which also records the
    holder's pid and host for the message a second writer gets. The kernel
    drops the lock when its process dies (even by SIGKILL), so the lock of a
    dead run is simply taken over. Remote paths (`gs://…`) are not locked.

    Args:
        output_dir: the run's output directory (created if missing, and
            removed again if the run fails before writing any file in it).

    Example:
    >>> with OutputDirLock("/tmp/mrpc_output"):
    ...     train()
    """

    def __init__(self, output_dir):
        self.output_dir = output_dir
        self._file = None
        self._created = False

    @property
    def path(self):
        return os.path.join(self.output_dir, LOCK_FILE)

    def __enter__(self):
        if "://" in self.output_dir:
            logging.info("%s is remote: no lock is taken", self.output_dir)
            return self
        import fcntl

        if os.path.exists(self.output_dir) and not os.path.isdir(self.output_dir):
            raise UserInputError(
                f"output_dir={self.output_dir}: exists and is not a directory",
                argument="output_dir",
            )
        self._created = not os.path.exists(self.output_dir)
        os.makedirs(self.output_dir, exist_ok=True)
        while True:
            handle = open(self.path, "a+")  # noqa: SIM115 (held until __exit__)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                handle.seek(0)
                holder = handle.read().strip() or "an unknown process"
                handle.close()
                raise OutputDirInUseError(
                    f"output_dir={self.output_dir} is in use by another run "
                    f"({holder}); wait for it to end or choose another output_dir",
                    argument="output_dir",
                ) from None
            # The run that held it deletes the file as it ends: a lock taken
            # on the deleted file is no lock, so take it again on a new one.
            if _same_file(handle, self.path):
                break
            handle.close()
        handle.seek(0)
        previous = handle.read().strip()
        if previous:
            logging.info("Taking over the lock of a run that ended (%s)", previous)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on host {socket.gethostname()}\n")
        handle.flush()
        self._file = handle
        return self

    def __exit__(self, *exc):
        if self._file is not None:
            # Deleted while still locked (no run.lock is left behind), then
            # closed, which releases the flock.
            os.remove(self.path)
            self._file.close()
            self._file = None
            if exc[0] is not None and self._created:
                _remove_if_no_files(self.output_dir)
        return False


def _remove_if_no_files(directory):
    """Removes `directory` if it holds only empty folders (a failed run's)."""
    for _, _, files in os.walk(directory):
        if files:
            return
    shutil.rmtree(directory, ignore_errors=True)


def _same_file(handle, path):
    try:
        on_disk = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle.fileno())
    return (held.st_dev, held.st_ino) == (on_disk.st_dev, on_disk.st_ino)


class RunSettings:
    """The settings that define a training run, kept in `output_dir/run_settings.json`.

    A rerun with the same settings resumes; one with different settings stops
    with the list of differences instead of continuing someone else's run (or
    silently mixing two). `overwrite` deletes the old run's checkpoints and
    final weights and starts over.

    Args:
        output_dir: the run's output directory.
        settings: a JSON-serialisable dict (flags, config, data fingerprints).

    Example:
    >>> RunSettings(output_dir, {"learning_rate": 2e-5, ...}).claim(overwrite=False)
    """

    def __init__(self, output_dir, settings):
        self.output_dir = output_dir
        self.settings = json.loads(json.dumps(settings))  # plain JSON values

    @property
    def path(self):
        return os.path.join(self.output_dir, SETTINGS_FILE)

    def differences(self, recorded):
        """`name: recorded -> now` lines for every setting that changed."""
        before, now = _flatten(recorded), _flatten(self.settings)
        return [
            f"{name}: {before.get(name, '(not set)')!r} -> {now.get(name, '(not set)')!r}"
            for name in sorted(set(before) | set(now))
            if before.get(name) != now.get(name)
        ]

    def recorded(self):
        """The settings output_dir records (None: no run recorded)."""
        tf = _tensorflow_for(self.output_dir)
        if tf is None:
            if not os.path.isfile(self.path):
                return None
            with open(self.path) as reader:
                return json.load(reader)
        if not tf.io.gfile.exists(self.path):
            return None
        with tf.io.gfile.GFile(self.path) as reader:
            return json.load(reader)

    def stop_if_changed(self, recorded):
        """Raises `UserInputError` listing the settings that differ from
        `recorded` (a run's settings, or the part of them compared)."""
        changed = self.differences(recorded)
        if changed:
            raise UserInputError(
                f"output_dir={self.output_dir} holds a run with other settings; "
                "rerun with the same ones to resume it, pass "
                "overwrite_output_dir to delete it and start over, or choose "
                "another output_dir. Differences (recorded -> now):\n  "
                + "\n  ".join(changed),
                argument=("output_dir", "overwrite_output_dir"),
            )

    def claim(self, overwrite=False):
        """Checks the output_dir holds this run (or none) and records it.

        Raises:
            UserInputError: output_dir holds a run with other settings (and
                `overwrite` is off).
        """
        import tensorflow as tf

        if overwrite:
            self._remove_previous_run()
        else:
            recorded = self.recorded()
            if recorded is not None:
                self.stop_if_changed(recorded)
                return
        temporary = self.path + ".tmp"
        with tf.io.gfile.GFile(temporary, "w") as writer:
            writer.write(json.dumps(self.settings, indent=2, sort_keys=True) + "\n")
        tf.io.gfile.rename(temporary, self.path, overwrite=True)

    def _remove_previous_run(self):
        import tensorflow as tf

        removed = []
        for name in ("checkpoints", "worker_tmp", "tensorboard"):
            path = os.path.join(self.output_dir, name)
            if tf.io.gfile.exists(path):
                tf.io.gfile.rmtree(path)
                removed.append(path)
        for path in tf.io.gfile.glob(os.path.join(self.output_dir, "model.ckpt-*")):
            tf.io.gfile.remove(path)
            removed.append(path)
        if tf.io.gfile.exists(self.path):
            tf.io.gfile.remove(self.path)
        if removed:
            logging.warning(
                "--overwrite_output_dir: removed the previous run (%s)",
                ", ".join(removed),
            )


def _tensorflow_for(path):
    """TensorFlow for a remote `path` (`gs://…`), None for a local one: a
    local record is read without loading TensorFlow."""
    if "://" not in str(path):
        return None
    import tensorflow as tf

    return tf


def _flatten(value, prefix=""):
    if isinstance(value, dict):
        flat = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}{key}."))
        return flat
    if isinstance(value, list):
        flat = {}
        for index, item in enumerate(value):
            flat.update(_flatten(item, f"{prefix}{index}."))
        return flat
    return {prefix.rstrip("."): value}
