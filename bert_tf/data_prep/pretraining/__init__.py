"""Masked-LM / next-sentence pre-training data of ``create_pretraining_data.py``.

Reproduces google-research/bert's ``create_pretraining_data.py``: the same
documents, random-number call order, instances and TFRecord schema. In the
default mode (``num_workers=1`` and no ``shard_size_mb``) the output is that of
the original for the same inputs, flags and seed, byte for byte: all input
files are read into one list of documents, shuffled with
``random.Random(random_seed)``, passed over ``dupe_factor`` times, and all
instances of all passes are shuffled together before being written.

Modules: ``documents`` (input files, lines, documents, shards), ``instances``
(the original's algorithm), ``records`` (the record schema and its bytes),
``output`` (round-robin TFRecord writing and the log), ``sharded`` (sharded
generation in worker processes, and its division between machines),
``options`` (the generation flags as one value).

Added on top of the original:

* Sharded, streaming generation (``num_workers > 1``, or any ``shard_size_mb``;
  see ``bert_tf.data_prep.pretraining.sharded``), and its division between machines
  (``num_tasks`` / ``task_index``).
* Speed, with identical records: no TensorFlow for local files, WordPiece
  memoised per whitespace word, instances kept as serialized records (about a
  third of the memory of the Python objects) and shuffled as such with the
  same RNG calls.
* Strict input checks: a line that is not UTF-8 raises ``ValueError`` naming
  the file and line, an input that yields no document raises ``ValueError``
  naming the input files, and a vocabulary without ``[CLS]``, ``[SEP]`` or
  ``[MASK]`` raises ``ValueError`` naming the vocab file (the original failed
  with a KeyError after generating everything).
* Documents that have no tokens are dropped as in the original, and counted
  in the log.
"""

import random

from absl import logging

from bert_tf.data_prep.pretraining.documents import check_vocab
from bert_tf.data_prep.pretraining.documents import checked_tokenizer
from bert_tf.data_prep.pretraining.documents import expand_input_files
from bert_tf.data_prep.pretraining.documents import iter_shards
from bert_tf.data_prep.pretraining.documents import read_documents
from bert_tf.data_prep.pretraining.instances import TrainingInstance
from bert_tf.data_prep.pretraining.instances import create_masked_lm_predictions
from bert_tf.data_prep.pretraining.instances import create_training_instances
from bert_tf.data_prep.pretraining.instances import generate
from bert_tf.data_prep.pretraining.instances import truncate_seq_pair
from bert_tf.data_prep.pretraining.options import GenerationOptions
from bert_tf.data_prep.pretraining.output import write_records
from bert_tf.data_prep.pretraining.records import RecordEncoder
from bert_tf.data_prep.pretraining.records import decode_record
from bert_tf.data_prep.pretraining.records import expected_features
from bert_tf.data_prep.pretraining.records import instance_to_example
from bert_tf.data_prep.pretraining.records import parse_pretraining_record
from bert_tf.data_prep.pretraining.records import pretraining_feature_spec
from bert_tf.data_prep.pretraining.sharded import DEFAULT_SHARD_SIZE_MB
from bert_tf.data_prep.pretraining.sharded import ShardedRunStats
from bert_tf.data_prep.pretraining.sharded import TaskSplit
from bert_tf.data_prep.pretraining.sharded import release_large_blocks_to_os
from bert_tf.data_prep.pretraining.sharded import shard_seed
from bert_tf.data_prep.pretraining.sharded import write_sharded
from bert_tf.data_prep.tfrecord_files import frame_records
from bert_tf.data_prep.tfrecord_files import masked_crc32c
from bert_tf.errors import UserInputError
from bert_tf.options.input_overwrite_check import check_outputs_are_not_inputs

__all__ = [
    "DEFAULT_SHARD_SIZE_MB",
    "GenerationOptions",
    "RecordEncoder",
    "ShardedRunStats",
    "TaskSplit",
    "TrainingInstance",
    "check_vocab",
    "checked_tokenizer",
    "create_masked_lm_predictions",
    "create_pretraining_data",
    "create_training_instances",
    "decode_record",
    "expand_input_files",
    "expected_features",
    "frame_records",
    "instance_to_example",
    "iter_shards",
    "masked_crc32c",
    "parse_pretraining_record",
    "pretraining_feature_spec",
    "read_documents",
    "release_large_blocks_to_os",
    "shard_seed",
    "truncate_seq_pair",
    "write_sharded",
]


def create_pretraining_data(
    input_files,
    output_files,
    vocab_file,
    do_lower_case=True,
    do_whole_word_mask=False,
    max_seq_length=128,
    max_predictions_per_seq=20,
    random_seed=12345,
    dupe_factor=10,
    masked_lm_prob=0.15,
    short_seq_prob=0.1,
    num_workers=1,
    shard_size_mb=None,
    num_tasks=1,
    task_index=0,
):
    """Generates pre-training TFRecords; returns the number of instances written.

    Args:
      input_files: list of text files (see ``expand_input_files``) or the
        ``--input_file`` string.
      output_files: list of TFRecord paths (written round-robin) or a
        comma-separated string (not globbed).
      vocab_file: WordPiece vocabulary with [CLS], [SEP] and [MASK].
      do_lower_case, do_whole_word_mask, max_seq_length,
      max_predictions_per_seq, random_seed, dupe_factor, masked_lm_prob,
      short_seq_prob: the original's flags, same meanings.
      num_workers: worker processes. With 1 and no `shard_size_mb` (and one
        task): the original's algorithm over the whole corpus (held in
        memory). Otherwise sharded (see ``bert_tf.data_prep.pretraining.sharded``).
      shard_size_mb: shard size of the sharded mode in MiB (default
        ``DEFAULT_SHARD_SIZE_MB``). Giving it selects the sharded mode even
        with one worker (bounded memory on one core); the records depend on it
        but not on num_workers.
      num_tasks, task_index: write only task `task_index`'s part of the
        sharded run divided between `num_tasks` machines (see
        ``TaskSplit``); each output path then gets the suffix
        ``-<task_index:05d>-of-<num_tasks:05d>``, and the tasks' files
        concatenated in task order equal the one-machine output.

    Raises:
      ValueError: undecodable input (file:line), no document in the input,
        a vocabulary without a special token, or an invalid argument.
    """
    if isinstance(input_files, str):
        input_files = expand_input_files(input_files)
    if isinstance(output_files, str):
        output_files = [path for path in output_files.split(",") if path]
    if not output_files:
        raise UserInputError("output_file: no file given")
    options = GenerationOptions(
        max_seq_length=max_seq_length,
        max_predictions_per_seq=max_predictions_per_seq,
        random_seed=random_seed,
        dupe_factor=dupe_factor,
        masked_lm_prob=masked_lm_prob,
        short_seq_prob=short_seq_prob,
        do_whole_word_mask=do_whole_word_mask,
    )
    if num_workers < 1:
        raise UserInputError(f"num_workers must be >= 1, got {num_workers}")
    if shard_size_mb is not None and not shard_size_mb > 0:
        raise UserInputError(f"shard_size_mb must be > 0, got {shard_size_mb}")
    split = TaskSplit(num_tasks=num_tasks, task_index=task_index)
    output_files = [split.output_path(path) for path in output_files]
    check_outputs_are_not_inputs(
        [("output_file", path) for path in output_files],
        [("input_file", input_files), ("vocab_file", [vocab_file])],
    )
    tokenizer = checked_tokenizer(vocab_file, do_lower_case)

    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    logging.info("*** Writing to output files ***")
    for path in output_files:
        logging.info("  %s", path)

    if num_workers == 1 and shard_size_mb is None and num_tasks == 1:
        documents, num_dropped = read_documents(input_files, tokenizer)
        logging.info(
            "Read %d documents (%d empty documents dropped)",
            len(documents),
            num_dropped,
        )
        if not documents:
            raise UserInputError(
                f"no document with any token in the input: {', '.join(input_files)}"
            )
        encoder = RecordEncoder(
            tokenizer.vocab, max_seq_length, max_predictions_per_seq
        )
        records = generate(
            documents,
            encoder.encode,
            list(tokenizer.vocab.keys()),
            options,
            random.Random(random_seed),
        )
        del documents
        return write_records(records, output_files, tokenizer.inv_vocab)

    if shard_size_mb is None:
        shard_size_mb = DEFAULT_SHARD_SIZE_MB
    stats = write_sharded(
        input_files,
        output_files,
        vocab_file,
        do_lower_case,
        options,
        num_workers,
        shard_size_mb,
        split,
    )
    if stats.num_shards < num_workers:
        logging.warning(
            "%d shards for %d workers: only %d workers had work; a smaller "
            "--shard_size_mb gives more shards",
            stats.num_shards,
            num_workers,
            stats.num_shards,
        )
    return stats.num_records
