"""The sharded mode: shards of whole documents, generated in worker processes.

A *shard* is a run of whole documents of one input file, cut at the first
blank line after ``shard_size_mb`` MiB of text (a document is never split, a
file never continues into the next one). Each shard is processed on its own
exactly as the original processes a whole corpus, but with its own
``random.Random(shard_seed(random_seed, index))``, ``index`` counting the
shards over all input files. Random next segments therefore come from the
same shard, and instances are shuffled within a shard only. Records are
written shard after shard in input order, round-robin over the output files,
so the output depends only on the seed, the input and the shard size, not on
the number of workers or their timing. At most ``num_workers`` shards (their
text and records) are in memory at once, so memory is bounded by the shard
size, not by the corpus (the original holds every instance).

``TaskSplit`` divides one such run between machines: task i of n writes the
records of the shards that start in the i-th n-th of the input bytes, so the
tasks' outputs concatenated in task order are the one-machine output.
"""

import collections
import dataclasses
import hashlib
import itertools
import multiprocessing
import os
import random
import sys
import threading

from absl import logging

from bert_tf.data_prep.pretraining.documents import documents_from_lines
from bert_tf.data_prep.pretraining.documents import iter_shard_spans
from bert_tf.data_prep.pretraining.documents import tokenize_function
from bert_tf.data_prep.pretraining.instances import generate
from bert_tf.data_prep.pretraining.output import NUM_LOGGED_INSTANCES
from bert_tf.data_prep.pretraining.output import RoundRobinWriter
from bert_tf.data_prep.pretraining.output import log_record
from bert_tf.data_prep.pretraining.records import RecordEncoder
from bert_tf.data_prep.tfrecord_files import frame_records
from bert_tf.errors import UserInputError
from bert_tf.text import tokenization

# Shard size of the sharded mode when --shard_size_mb is not given. At seq 128
# a 1 MiB shard gives ~3,000 instances per pass (SQuAD text), and a worker
# needs ~30 MB per MiB of shard at dupe_factor=5 (~60 MB at 10) on top of its
# ~65 MB base: small enough for many workers, large enough for the shuffle and
# the random next segments to draw from thousands of documents' instances.
DEFAULT_SHARD_SIZE_MB = 1.0
# glibc's mallopt parameter number of M_MMAP_THRESHOLD (malloc.h).
_M_MMAP_THRESHOLD = -3


def shard_seed(seed, shard_index):
    """The RNG seed of shard `shard_index` in sharded mode (stable across runs)."""
    digest = hashlib.sha256(f"{seed}/{shard_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@dataclasses.dataclass(frozen=True)
class TaskSplit:
    """Task `task_index` of `num_tasks` machines sharing one sharded run.

    Args:
      num_tasks: machines (or scheduler tasks) the run is divided between.
      task_index: this one, 0-based.

    Example:

    >>> TaskSplit(num_tasks=4, task_index=1).byte_range(1000)
    (250, 500)
    """

    num_tasks: int = 1
    task_index: int = 0

    def __post_init__(self):
        if self.num_tasks < 1:
            raise UserInputError(f"num_tasks must be >= 1, got {self.num_tasks}")
        if not 0 <= self.task_index < self.num_tasks:
            raise UserInputError(
                f"task_index must be in [0, {self.num_tasks}), got {self.task_index}"
            )

    def byte_range(self, total_bytes):
        """[start, end): the shard start offsets of this task."""
        return (
            total_bytes * self.task_index // self.num_tasks,
            total_bytes * (self.task_index + 1) // self.num_tasks,
        )

    def output_path(self, path):
        """`path` with this task's suffix (``-00001-of-00004``); unchanged for 1."""
        if self.num_tasks == 1:
            return path
        return f"{path}-{self.task_index:05d}-of-{self.num_tasks:05d}"


def _file_size(path):
    if "://" in path:
        import tensorflow as tf

        return tf.io.gfile.stat(path).length
    return os.path.getsize(path)


def _task_shards(input_files, shard_size_mb, split):
    """(global shard index, lines) of the shards of `split`'s task, in order.

    Every task reads the input up to the end of its range (no tokenizing
    before it), because a shard's index, hence its seed, counts the shards
    before it.
    """
    spans = enumerate(iter_shard_spans(input_files, shard_size_mb))
    if split.num_tasks == 1:
        for index, (_, lines) in spans:
            yield index, lines
        return
    start, end = split.byte_range(sum(_file_size(path) for path in input_files))
    for index, (offset, lines) in spans:
        if offset >= end:
            return
        if offset >= start:
            yield index, lines


@dataclasses.dataclass
class ShardedRunStats:
    """What a sharded run did (returned by ``write_sharded``).

    Attributes:
      num_records: records written.
      num_shards: shards with at least one line of text.
      num_documents: documents with tokens, over all shards.
      num_dropped: empty documents dropped.
      processes: worker processes used (0: in this process).
      max_shards_in_flight: the most shards whose text or records were in
        memory at once (submitted and not yet written); at most num_workers.
      max_shard_records: the most records of one shard (records in memory
        are at most max_shards_in_flight × this).
      shard_records: records of each shard, in order.
    """

    num_records: int = 0
    num_shards: int = 0
    num_documents: int = 0
    num_dropped: int = 0
    processes: int = 0
    max_shards_in_flight: int = 0
    max_shard_records: int = 0
    shard_records: list = dataclasses.field(default_factory=list)


def release_large_blocks_to_os():
    """Makes glibc return large freed blocks to the OS (no-op elsewhere).

    A shard's framed records are one block of tens of MB. glibc raises its
    mmap threshold to the size of the largest block freed, so from the second
    shard on such blocks come from the heap, which then keeps their pages: the
    RSS of a process that handles many shards creeps up (it plateaus, but
    ~20% above one shard's). A fixed threshold (glibc's default, 128 KiB)
    keeps every large block in its own mapping, unmapped when freed. Called in
    worker processes and by the command line, never on a library caller's
    process.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, 128 * 1024)
    except (AttributeError, OSError):
        pass  # not glibc


class ShardProcessor:
    """Turns one shard's lines into records (in a worker, in-process or in Beam).

    Args:
      vocab_file, do_lower_case: the tokenizer's.
      options: a ``GenerationOptions``.

    Example:

    ```python
    process = ShardProcessor(vocab_file, True, GenerationOptions())
    records, num_documents, num_dropped = process.records(0, ["One.", "Two."])
    ```
    """

    def __init__(self, vocab_file, do_lower_case, options):
        tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
        self.tokenize = tokenize_function(tokenizer)
        self.vocab_words = list(tokenizer.vocab.keys())
        self.encoder = RecordEncoder(
            tokenizer.vocab, options.max_seq_length, options.max_predictions_per_seq
        )
        self.options = options

    def records(self, shard_index, lines):
        """→ (serialized records, documents, empty documents dropped).

        The shard's RNG is ``shard_seed(random_seed, shard_index)``: every
        path (workers, ``TaskSplit`` tasks, the Beam pipeline) gets the same
        records for the same shard.
        """
        documents, num_dropped = documents_from_lines(lines, self.tokenize)
        del lines
        if not documents:
            return [], 0, num_dropped
        rng = random.Random(shard_seed(self.options.random_seed, shard_index))
        records = generate(
            documents, self.encoder.encode, self.vocab_words, self.options, rng
        )
        return records, len(documents), num_dropped

    def __call__(self, shard_index, lines):
        """→ (framed records, their sizes, documents, empty documents dropped)."""
        records, num_documents, num_dropped = self.records(shard_index, lines)
        del lines
        if not records:
            return b"", [], num_documents, num_dropped
        data, sizes = frame_records(records)
        return data, sizes, num_documents, num_dropped


# The worker process's processor: a Pool initializer can only leave state in
# the worker's module globals.
_worker_processor = None


def _init_worker(vocab_file, do_lower_case, options):
    global _worker_processor
    release_large_blocks_to_os()
    _worker_processor = ShardProcessor(vocab_file, do_lower_case, options)


def _process_shard_in_worker(shard_index, lines):
    return _worker_processor(shard_index, lines)


def _popping_chain(head, rest):
    # Like itertools.chain, but drops each read-ahead shard once handed out.
    while head:
        yield head.popleft()
    yield from rest


def _pool_context():
    # fork is cheap and shares the loaded modules, but is only safe in a
    # single-threaded process without TensorFlow's runtime; otherwise spawn.
    if (
        sys.platform.startswith("linux")
        and "tensorflow" not in sys.modules
        and threading.active_count() == 1
    ):
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def write_sharded(
    input_files,
    output_files,
    vocab_file,
    do_lower_case,
    options,
    num_workers,
    shard_size_mb,
    split=TaskSplit(),
):
    """The sharded mode (see the module doc); returns ``ShardedRunStats``.

    Args:
      input_files, output_files, vocab_file, do_lower_case: as
        ``create_pretraining_data``.
      options: a ``GenerationOptions``.
      num_workers: worker processes (1 = in this process); the records do not
        depend on it.
      shard_size_mb: see ``iter_shards``.
      split: the part of the run to write (``TaskSplit``; default all of it).
        `output_files` are used as given (see ``TaskSplit.output_path``).
    """
    if num_workers < 1:
        raise UserInputError(f"num_workers must be >= 1, got {num_workers}")
    stats = ShardedRunStats()
    inv_vocab = tokenization.FullTokenizer(
        vocab_file, do_lower_case=do_lower_case
    ).inv_vocab
    shards = _task_shards(input_files, shard_size_mb, split)
    # Read ahead as many shards as workers: fewer shards need fewer processes.
    head = collections.deque(itertools.islice(shards, num_workers))
    num_head = len(head)
    shards = _popping_chain(head, shards)
    del head
    writer = RoundRobinWriter(output_files)
    num_logged = 0

    def consume(result):
        nonlocal num_logged
        data, sizes, num_documents, num_dropped = result
        stats.num_shards += 1
        stats.num_documents += num_documents
        stats.num_dropped += num_dropped
        stats.shard_records.append(len(sizes))
        stats.max_shard_records = max(stats.max_shard_records, len(sizes))
        writer.write_framed(data, sizes)
        offset = 0
        for size in sizes:
            if num_logged >= NUM_LOGGED_INSTANCES:
                break
            log_record(bytes(data[offset + 12 : offset + size - 4]), inv_vocab)
            offset += size
            num_logged += 1

    try:
        if num_workers == 1 or num_head <= 1:
            process = ShardProcessor(vocab_file, do_lower_case, options)
            for shard_index, lines in shards:
                stats.max_shards_in_flight = 1
                consume(process(shard_index, lines))
        else:
            stats.processes = num_head
            with _pool_context().Pool(
                processes=stats.processes,
                initializer=_init_worker,
                initargs=(vocab_file, do_lower_case, options),
            ) as pool:
                # At most `processes` shards are submitted and not yet
                # written, which bounds memory; results are written in shard
                # order, so the output does not depend on worker timing.
                pending = collections.deque()
                for shard_index, lines in shards:
                    pending.append(
                        pool.apply_async(_process_shard_in_worker, (shard_index, lines))
                    )
                    del lines
                    stats.max_shards_in_flight = max(
                        stats.max_shards_in_flight, len(pending)
                    )
                    if len(pending) >= stats.processes:
                        consume(pending.popleft().get())
                while pending:
                    consume(pending.popleft().get())
        writer.close()
    except BaseException:
        writer.discard()  # no cut file passes for output (see write_records)
        raise
    stats.num_records = writer.total
    logging.info(
        "Read %d documents (%d empty documents dropped) in %d shards of up to "
        "%g MiB; %d worker processes",
        stats.num_documents,
        stats.num_dropped,
        stats.num_shards,
        shard_size_mb,
        stats.processes,
    )
    if stats.num_documents == 0 and split.num_tasks == 1:
        raise UserInputError(
            f"no document with any token in the input: {', '.join(input_files)}"
        )
    logging.info("Wrote %d total instances", writer.total)
    return stats
