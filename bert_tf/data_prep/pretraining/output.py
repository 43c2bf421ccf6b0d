"""Writing pre-training records: TFRecord files filled round-robin, and the log.

Records go to the output files in turn (record i to file i mod n), as the
original writer does, and the first ``NUM_LOGGED_INSTANCES`` are logged as the
original logs them (tokens, then each feature).
"""

import contextlib
import os

from absl import logging

from bert_tf.data_prep.local_files import remove_partial_output
from bert_tf.data_prep.pretraining.records import FEATURE_NAMES
from bert_tf.data_prep.pretraining.records import decode_record
from bert_tf.data_prep.tfrecord_files import frame_records
from bert_tf.errors import UserInputError
from bert_tf.text import tokenization

# The original logs this many instances (tokens and features) when writing.
NUM_LOGGED_INSTANCES = 20
# Records framed at once (bounds the temporary copy of the framed bytes).
_FRAME_BATCH = 4096


def _open_output(path):
    if "://" in path:
        import tensorflow as tf

        directory = os.path.dirname(path)
        if directory and not tf.io.gfile.exists(directory):
            tf.io.gfile.makedirs(directory)
        return tf.io.gfile.GFile(path, "wb")
    directory = os.path.dirname(path)
    if directory:
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise UserInputError(
                f"output_file={path}: {directory} exists and is not a directory",
                argument="output_file",
            )
        os.makedirs(directory, exist_ok=True)
    return open(path, "wb", buffering=1 << 20)


class RoundRobinWriter:
    """Writes TFRecord-framed records round-robin over several files.

    Args:
      output_files: the paths (parent directories are created).

    Example:

    >>> writer = RoundRobinWriter(["/tmp/a.tfrecord", "/tmp/b.tfrecord"])
    >>> writer.write_records([b"one", b"two", b"three"])
    >>> writer.close()
    >>> writer.total
    3
    """

    def __init__(self, output_files):
        self.output_files = list(output_files)
        self.files = []
        try:
            for path in self.output_files:
                self.files.append(_open_output(path))
        except BaseException:
            self.close()
            raise
        self.index = 0
        self.total = 0

    def write_framed(self, data, sizes):
        """Writes `data` (framed records of the given sizes, in order)."""
        if len(self.files) == 1:
            with _named(self.output_files[0]):
                self.files[0].write(data)
        else:
            view = memoryview(data)
            offset = 0
            files = self.files
            index = self.index
            for size in sizes:
                with _named(self.output_files[index]):
                    files[index].write(view[offset : offset + size])
                offset += size
                index = (index + 1) % len(files)
            self.index = index
        self.total += len(sizes)

    def write_records(self, records):
        """Frames and writes serialized records, in order."""
        for start in range(0, len(records), _FRAME_BATCH):
            self.write_framed(*frame_records(records[start : start + _FRAME_BATCH]))

    def close(self):
        for path, file in zip(self.output_files, self.files, strict=False):
            with _named(path):
                file.close()

    def discard(self):
        """Closes and removes the files (local ones) after a failed write."""
        for path, file in zip(self.output_files, self.files, strict=False):
            with contextlib.suppress(OSError):
                file.close()
            if "://" not in path:
                remove_partial_output(path)


@contextlib.contextmanager
def _named(path):
    """A write error (a full disk: ENOSPC has no file name) names `path`."""
    try:
        yield
    except OSError as error:
        if error.filename or not error.errno:
            raise
        raise OSError(error.errno, error.strerror, path) from error


def log_record(record, inv_vocab):
    """Logs a record as the original logs an instance (tokens, then features)."""
    features = decode_record(record)
    num_tokens = sum(features["input_mask"])
    tokens = [inv_vocab[index] for index in features["input_ids"][:num_tokens]]
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
    for name in FEATURE_NAMES:
        logging.info("%s: %s", name, " ".join(str(x) for x in features[name]))


def write_records(records, output_files, inv_vocab):
    """Writes serialized records round-robin; logs the first ones; returns the count."""
    writer = RoundRobinWriter(output_files)
    try:
        writer.write_records(records)
        writer.close()
    except BaseException:
        # A cut file (a full disk, an interrupt) must not pass for output:
        # a later glob of the shards would read it as a smaller corpus.
        writer.discard()
        raise
    for record in records[:NUM_LOGGED_INSTANCES]:
        log_record(record, inv_vocab)
    logging.info("Wrote %d total instances", writer.total)
    return writer.total
