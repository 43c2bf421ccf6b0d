"""Masked-LM / next-sentence pre-training data of ``create_pretraining_data.py``.

Reproduces google-research/bert's ``create_pretraining_data.py`` (spec §8): the
same documents, RNG call order, instances and TFRecord schema. With
``num_workers=1`` (the default) the output is that of the original for the same
inputs, flags and seed, byte for byte: all input files are read into one list
of documents, shuffled with ``random.Random(random_seed)``, passed over
``dupe_factor`` times, and all instances of all passes are shuffled together
before being written.

Each record is a ``tf.train.Example`` with (spec §2.1):

=====================  =======  =======================
feature                dtype    length
=====================  =======  =======================
input_ids              int64    max_seq_length (0-padded)
input_mask             int64    max_seq_length
segment_ids            int64    max_seq_length
masked_lm_positions    int64    max_predictions_per_seq (sorted, 0-padded)
masked_lm_ids          int64    max_predictions_per_seq
masked_lm_weights      float    max_predictions_per_seq (1.0 real, 0.0 pad)
next_sentence_labels   int64    1 (1 = B is a random segment)
=====================  =======  =======================

Added on top of the original:

* ``num_workers > 1``: sharded, streaming generation. A *shard* is one input
  file after glob expansion (a file is never split). Each shard is processed
  on its own, in a worker process, exactly as the original processes a whole
  corpus, but with its own ``random.Random(shard_seed(random_seed, index))``
  where ``index`` is the shard's position in the expanded input list. Random
  next segments therefore come from the same shard, and instances are shuffled
  within a shard only. Records are written shard after shard in input order,
  round-robin over the output files, so the output depends only on the seed
  and the input list, not on the number of workers (>1) or their timing. At
  most ``num_workers`` shards are in memory at once (the original holds the
  whole corpus and all its instances), so split a large corpus into several
  files. With a single input file only one worker has work.
* Strict input checks: a line that is not UTF-8 raises ``ValueError`` naming
  the file and line (the original died with a bare UnicodeDecodeError), an
  input that yields no document raises ``ValueError`` naming the input files,
  and a vocabulary without ``[CLS]``, ``[SEP]`` or ``[MASK]`` raises
  ``ValueError`` naming the vocab file (the original failed with a KeyError
  after generating everything).
* Documents that have no tokens are dropped as in the original, and counted in
  the log.
"""

import collections
import dataclasses
import hashlib
import multiprocessing
import os
import random

import tensorflow as tf
from absl import logging

from bert_tf import tokenization

__all__ = [
    "TrainingInstance",
    "create_instances_from_document",
    "create_masked_lm_predictions",
    "create_pretraining_data",
    "create_training_instances",
    "expand_input_files",
    "instance_to_example",
    "parse_pretraining_record",
    "pretraining_feature_spec",
    "read_documents",
    "shard_seed",
    "truncate_seq_pair",
    "write_instance_to_example_files",
]

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]")
# The original logs this many instances (tokens and features) when writing.
NUM_LOGGED_INSTANCES = 20


@dataclasses.dataclass
class TrainingInstance:
    """One sentence pair, after masking.

    Attributes:
      tokens: ``[CLS] A [SEP] B [SEP]`` with the masked positions replaced.
      segment_ids: 0 for ``[CLS] A [SEP]``, 1 for ``B [SEP]``.
      masked_lm_positions: the predicted positions, ascending.
      masked_lm_labels: the original tokens at those positions.
      is_random_next: B is a random segment (next_sentence_label 1).
    """

    tokens: list
    segment_ids: list
    masked_lm_positions: list
    masked_lm_labels: list
    is_random_next: bool

    def __str__(self):
        return (
            "tokens: "
            + " ".join(tokenization.printable_text(x) for x in self.tokens)
            + "\nsegment_ids: "
            + " ".join(str(x) for x in self.segment_ids)
            + f"\nis_random_next: {self.is_random_next}"
            + "\nmasked_lm_positions: "
            + " ".join(str(x) for x in self.masked_lm_positions)
            + "\nmasked_lm_labels: "
            + " ".join(tokenization.printable_text(x) for x in self.masked_lm_labels)
        )


# --------------------------------------------------------------------------
# Input
# --------------------------------------------------------------------------


def expand_input_files(input_file):
    """Expands the ``--input_file`` value: comma-separated parts, each globbed.

    Args:
      input_file: a path, a glob, or a comma-separated list of them.

    Returns:
      The matching files in the original's order (part by part, each part's
      matches as tf.io.gfile.glob returns them).

    Raises:
      ValueError: a part matches no file (the original silently skipped it,
        which turns a typo into a smaller corpus).
    """
    files = []
    for pattern in input_file.split(","):
        if not pattern:
            continue
        matches = tf.io.gfile.glob(pattern)
        if not matches:
            raise ValueError(f"input_file: {pattern!r} matches no file")
        files.extend(matches)
    if not files:
        raise ValueError(f"input_file: no file given in {input_file!r}")
    return files


def _open_binary(path):
    # Remote paths ("gs://...") go through tf.io.gfile as in the original;
    # local ones through open(), which iterates lines without TensorFlow.
    if "://" in path:
        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def _iter_lines(path):
    """Yields (line_number, stripped text) of a file, decoded as strict UTF-8."""
    with _open_binary(path) as reader:
        # Lines end at "\n" as with the original's GFile.readline().
        for line_number, raw in enumerate(reader, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(
                    f"{path}:{line_number}: not valid UTF-8 ({exc.reason} at "
                    f"byte {exc.start} of the line)"
                ) from None
            yield line_number, text.strip()


def read_documents(input_files, tokenizer):
    """Reads and tokenizes documents: one sentence per line, blank line ends one.

    As in the original, the files are read as one stream: a file that does not
    end with a blank line continues its last document into the next file.

    Args:
      input_files: list of paths.
      tokenizer: a ``FullTokenizer``.

    Returns:
      (documents, num_dropped): documents as lists of token lists (sentences),
      in reading order, without the documents that have no token; and how many
      such empty documents were dropped.
    """
    documents = [[]]
    for path in input_files:
        for _, line in _iter_lines(path):
            if not line:
                documents.append([])
                continue
            tokens = tokenizer.tokenize(line)
            if tokens:
                documents[-1].append(tokens)
    kept = [document for document in documents if document]
    return kept, len(documents) - len(kept)


def check_vocab(tokenizer):
    """Raises ValueError (naming the vocab file) if a special token is missing."""
    missing = [token for token in SPECIAL_TOKENS if token not in tokenizer.vocab]
    if missing:
        raise ValueError(
            f"{tokenizer.vocab_file}: the vocabulary has no "
            f"{', '.join(missing)} (pre-training data needs [CLS], [SEP] and [MASK])"
        )


# --------------------------------------------------------------------------
# The algorithm (the original's functions, same RNG call order)
# --------------------------------------------------------------------------


def create_training_instances(
    documents,
    vocab_words,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    rng,
    do_whole_word_mask=False,
):
    """Builds the instances of a list of documents, as the original does.

    The documents are shuffled in place with `rng`, passed over `dupe_factor`
    times, and all instances of all passes are shuffled together at the end.

    Args:
      documents: non-empty documents from ``read_documents`` (shuffled in
        place).
      vocab_words: ``list(tokenizer.vocab.keys())``, the random replacements.
      max_seq_length: the record length; A and B get max_seq_length - 3 tokens.
      dupe_factor: number of passes, each with different masks and pairs.
      short_seq_prob: probability of a shorter target length for a document.
      masked_lm_prob: fraction of tokens to predict.
      max_predictions_per_seq: cap on predictions per instance.
      rng: a ``random.Random``.
      do_whole_word_mask: mask whole words ("##" pieces with their word).
    """
    rng.shuffle(documents)
    instances = []
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            instances.extend(
                create_instances_from_document(
                    documents,
                    document_index,
                    max_seq_length,
                    short_seq_prob,
                    masked_lm_prob,
                    max_predictions_per_seq,
                    vocab_words,
                    rng,
                    do_whole_word_mask,
                )
            )
    rng.shuffle(instances)
    return instances


def create_instances_from_document(
    all_documents,
    document_index,
    max_seq_length,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask=False,
):
    """Creates the instances of one document (one pass), as the original does."""
    document = all_documents[document_index]
    # [CLS], [SEP], [SEP]
    max_num_tokens = max_seq_length - 3

    # Mostly full sequences (padding is wasted compute), but sometimes shorter
    # ones so that pre-training matches the shorter fine-tuning inputs.
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    instances = []
    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                # How many segments of the chunk go into A.
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])

                tokens_b = []
                if len(current_chunk) == 1 or rng.random() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    # With a large corpus one try would do; 10 keep a tiny
                    # corpus from pairing a document with itself too often.
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    # The segments of the chunk not used in A are "put back"
                    # so they are not wasted.
                    num_unused_segments = len(current_chunk) - a_end
                    i -= num_unused_segments
                else:
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                if not tokens_a or not tokens_b:
                    raise AssertionError("empty segment after truncation")

                tokens = ["[CLS]", *tokens_a, "[SEP]", *tokens_b, "[SEP]"]
                segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
                tokens, positions, labels = create_masked_lm_predictions(
                    tokens,
                    masked_lm_prob,
                    max_predictions_per_seq,
                    vocab_words,
                    rng,
                    do_whole_word_mask,
                )
                instances.append(
                    TrainingInstance(
                        tokens=tokens,
                        segment_ids=segment_ids,
                        masked_lm_positions=positions,
                        masked_lm_labels=labels,
                        is_random_next=is_random_next,
                    )
                )
            current_chunk = []
            current_length = 0
        i += 1
    return instances


def create_masked_lm_predictions(
    tokens,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask=False,
):
    """Chooses and masks the predicted positions, as the original does.

    Returns:
      (output_tokens, masked_lm_positions, masked_lm_labels), positions sorted.
    """
    cand_indexes = []
    for i, token in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            continue
        # Whole-word masking: a "##" piece belongs to the previous word, and
        # the word's pieces are masked (or not) together.
        if do_whole_word_mask and cand_indexes and token.startswith("##"):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])

    rng.shuffle(cand_indexes)
    output_tokens = list(tokens)
    num_to_predict = min(
        max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob)))
    )

    masked = []  # (index, label)
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked) >= num_to_predict:
            break
        # A whole word that would overshoot the budget is skipped, not cut.
        if len(masked) + len(index_set) > num_to_predict:
            continue
        if any(index in covered_indexes for index in index_set):
            continue
        for index in index_set:
            covered_indexes.add(index)
            # The RNG call order matters for identical output: random() for
            # the 80% test, random() for the 50/50 test, then randint.
            if rng.random() < 0.8:
                masked_token = "[MASK]"
            elif rng.random() < 0.5:
                masked_token = tokens[index]
            else:
                masked_token = vocab_words[rng.randint(0, len(vocab_words) - 1)]
            output_tokens[index] = masked_token
            masked.append((index, tokens[index]))
    masked.sort(key=lambda item: item[0])
    return (
        output_tokens,
        [index for index, _ in masked],
        [label for _, label in masked],
    )


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Shrinks the longer of A and B, from the front or back at random, in place.

    Unlike the classifier rule, the side is random so that the model does not
    learn that segments always end (or start) cleanly.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()


# --------------------------------------------------------------------------
# Records
# --------------------------------------------------------------------------


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The ``tf.io.FixedLenFeature`` dict the original run_pretraining reads."""
    return {
        "input_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([max_seq_length], tf.int64),
        "masked_lm_positions": tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.int64
        ),
        "masked_lm_ids": tf.io.FixedLenFeature([max_predictions_per_seq], tf.int64),
        "masked_lm_weights": tf.io.FixedLenFeature(
            [max_predictions_per_seq], tf.float32
        ),
        "next_sentence_labels": tf.io.FixedLenFeature([1], tf.int64),
    }


def parse_pretraining_record(serialized, max_seq_length, max_predictions_per_seq):
    """Parses one serialized record; int64 features become int32 (as the original).

    Args:
      serialized: a scalar string tensor (one tf.train.Example).
      max_seq_length: the length the records were written with.
      max_predictions_per_seq: the prediction count they were written with.
    """
    example = tf.io.parse_single_example(
        serialized, pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    )
    # tf.Example only supports tf.int64, but the TPU only supports tf.int32.
    return {
        name: tf.cast(tensor, tf.int32) if tensor.dtype == tf.int64 else tensor
        for name, tensor in example.items()
    }


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


def _float_feature(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def instance_to_example(instance, tokenizer, max_seq_length, max_predictions_per_seq):
    """Converts a ``TrainingInstance`` to a padded ``tf.train.Example``."""
    input_ids = tokenizer.convert_tokens_to_ids(instance.tokens)
    if len(input_ids) > max_seq_length:
        raise AssertionError(f"{len(input_ids)} tokens > {max_seq_length}")
    padding = [0] * (max_seq_length - len(input_ids))
    input_mask = [1] * len(input_ids) + padding
    segment_ids = list(instance.segment_ids) + padding
    input_ids = input_ids + padding

    masked_lm_ids = tokenizer.convert_tokens_to_ids(instance.masked_lm_labels)
    num_pad = max_predictions_per_seq - len(masked_lm_ids)
    masked_lm_positions = list(instance.masked_lm_positions) + [0] * num_pad
    masked_lm_weights = [1.0] * len(masked_lm_ids) + [0.0] * num_pad
    masked_lm_ids = masked_lm_ids + [0] * num_pad

    features = collections.OrderedDict()
    features["input_ids"] = _int_feature(input_ids)
    features["input_mask"] = _int_feature(input_mask)
    features["segment_ids"] = _int_feature(segment_ids)
    features["masked_lm_positions"] = _int_feature(masked_lm_positions)
    features["masked_lm_ids"] = _int_feature(masked_lm_ids)
    features["masked_lm_weights"] = _float_feature(masked_lm_weights)
    features["next_sentence_labels"] = _int_feature([int(instance.is_random_next)])
    return tf.train.Example(features=tf.train.Features(feature=features))


_FEATURE_ORDER = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def _log_instance(instance, example):
    logging.info("*** Example ***")
    logging.info(
        "tokens: %s",
        " ".join(tokenization.printable_text(x) for x in instance.tokens),
    )
    feature_map = example.features.feature
    # The map of a proto has no order; log in the record's feature order.
    for name in _FEATURE_ORDER:
        feature = feature_map[name]
        values = feature.int64_list.value or feature.float_list.value
        logging.info("%s: %s", name, " ".join(str(x) for x in values))


class _RoundRobinWriter:
    """Writes serialized records round-robin over several TFRecord files."""

    def __init__(self, output_files):
        self.writers = []
        for path in output_files:
            directory = os.path.dirname(path)
            if directory and not tf.io.gfile.exists(directory):
                tf.io.gfile.makedirs(directory)
            self.writers.append(tf.io.TFRecordWriter(path))
        self.index = 0
        self.total = 0

    def write(self, record):
        self.writers[self.index].write(record)
        self.index = (self.index + 1) % len(self.writers)
        self.total += 1

    def close(self):
        for writer in self.writers:
            writer.close()


def write_instance_to_example_files(
    instances, tokenizer, max_seq_length, max_predictions_per_seq, output_files
):
    """Writes instances round-robin over `output_files`; returns the count.

    The first 20 instances are logged, then "Wrote %d total instances".
    """
    writer = _RoundRobinWriter(output_files)
    try:
        for index, instance in enumerate(instances):
            example = instance_to_example(
                instance, tokenizer, max_seq_length, max_predictions_per_seq
            )
            # The feature map's entry order otherwise depends on the process
            # (hash seed); deterministic=True makes equal runs equal bytes.
            writer.write(example.SerializeToString(deterministic=True))
            if index < NUM_LOGGED_INSTANCES:
                _log_instance(instance, example)
    finally:
        writer.close()
    logging.info("Wrote %d total instances", writer.total)
    return writer.total


# --------------------------------------------------------------------------
# Driver (single process, or sharded over worker processes)
# --------------------------------------------------------------------------


def shard_seed(seed, shard_index):
    """The RNG seed of shard `shard_index` in sharded mode (stable across runs)."""
    digest = hashlib.sha256(f"{seed}/{shard_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _check_args(
    max_seq_length, max_predictions_per_seq, dupe_factor, masked_lm_prob, num_workers
):
    # max_num_tokens must allow one token in A and one in B.
    if max_seq_length < 5:
        raise ValueError(f"max_seq_length must be >= 5, got {max_seq_length}")
    if max_predictions_per_seq < 1:
        raise ValueError(
            f"max_predictions_per_seq must be >= 1, got {max_predictions_per_seq}"
        )
    if dupe_factor < 1:
        raise ValueError(f"dupe_factor must be >= 1, got {dupe_factor}")
    if not 0.0 <= masked_lm_prob <= 1.0:
        raise ValueError(f"masked_lm_prob must be in [0, 1], got {masked_lm_prob}")
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")


# Per-worker state of the sharded mode (set by _init_worker in each process).
_WORKER = {}


def _init_worker(vocab_file, do_lower_case, options):
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    _WORKER.update(tokenizer=tokenizer, options=options)


def _process_shard(shard_index, path):
    """Worker: one shard (file) → (serialized records, logged instances, stats)."""
    tokenizer = _WORKER["tokenizer"]
    options = _WORKER["options"]
    documents, num_dropped = read_documents([path], tokenizer)
    if not documents:
        return [], [], num_dropped, 0
    rng = random.Random(shard_seed(options["random_seed"], shard_index))
    instances = create_training_instances(
        documents,
        list(tokenizer.vocab.keys()),
        options["max_seq_length"],
        options["dupe_factor"],
        options["short_seq_prob"],
        options["masked_lm_prob"],
        options["max_predictions_per_seq"],
        rng,
        options["do_whole_word_mask"],
    )
    records = []
    for instance in instances:
        example = instance_to_example(
            instance,
            tokenizer,
            options["max_seq_length"],
            options["max_predictions_per_seq"],
        )
        records.append(example.SerializeToString(deterministic=True))
    return records, instances[:NUM_LOGGED_INSTANCES], num_dropped, len(documents)


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
      num_workers: 1 = the original's algorithm over the whole corpus; more =
        sharded generation, one shard per input file (see the module doc).

    Raises:
      ValueError: undecodable input (file:line), no document in the input,
        a vocabulary without a special token, or an invalid argument.
    """
    if isinstance(input_files, str):
        input_files = expand_input_files(input_files)
    if isinstance(output_files, str):
        output_files = [path for path in output_files.split(",") if path]
    if not output_files:
        raise ValueError("output_file: no file given")
    _check_args(
        max_seq_length,
        max_predictions_per_seq,
        dupe_factor,
        masked_lm_prob,
        num_workers,
    )
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    check_vocab(tokenizer)

    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    logging.info("*** Writing to output files ***")
    for path in output_files:
        logging.info("  %s", path)

    if num_workers == 1:
        documents, num_dropped = read_documents(input_files, tokenizer)
        logging.info(
            "Read %d documents (%d empty documents dropped)",
            len(documents),
            num_dropped,
        )
        if not documents:
            raise ValueError(
                f"no document with any token in the input: {', '.join(input_files)}"
            )
        rng = random.Random(random_seed)
        instances = create_training_instances(
            documents,
            list(tokenizer.vocab.keys()),
            max_seq_length,
            dupe_factor,
            short_seq_prob,
            masked_lm_prob,
            max_predictions_per_seq,
            rng,
            do_whole_word_mask,
        )
        return write_instance_to_example_files(
            instances,
            tokenizer,
            max_seq_length,
            max_predictions_per_seq,
            output_files,
        )

    options = dict(
        random_seed=random_seed,
        max_seq_length=max_seq_length,
        dupe_factor=dupe_factor,
        short_seq_prob=short_seq_prob,
        masked_lm_prob=masked_lm_prob,
        max_predictions_per_seq=max_predictions_per_seq,
        do_whole_word_mask=do_whole_word_mask,
    )
    if len(input_files) < num_workers:
        logging.warning(
            "%d input files (shards) for %d workers: only %d workers have work; "
            "split the corpus into more files to use them all",
            len(input_files),
            num_workers,
            len(input_files),
        )
    return _write_sharded(
        input_files, output_files, vocab_file, do_lower_case, options, num_workers
    )


def _write_sharded(
    input_files, output_files, vocab_file, do_lower_case, options, num_workers
):
    # "spawn": the parent has TensorFlow's threads running, which fork() does
    # not copy safely.
    context = multiprocessing.get_context("spawn")
    writer = _RoundRobinWriter(output_files)
    num_documents = num_dropped = num_logged = 0
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)

    def consume(result):
        nonlocal num_documents, num_dropped, num_logged
        records, sample, dropped, documents = result
        num_documents += documents
        num_dropped += dropped
        for index, record in enumerate(records):
            writer.write(record)
            if num_logged < NUM_LOGGED_INSTANCES and index < len(sample):
                _log_instance(
                    sample[index],
                    instance_to_example(
                        sample[index],
                        tokenizer,
                        options["max_seq_length"],
                        options["max_predictions_per_seq"],
                    ),
                )
                num_logged += 1

    try:
        with context.Pool(
            processes=min(num_workers, len(input_files)),
            initializer=_init_worker,
            initargs=(vocab_file, do_lower_case, options),
        ) as pool:
            # At most num_workers shards are in flight or waiting to be
            # written, which bounds memory; results are written in shard order
            # so the output does not depend on worker timing.
            pending = collections.deque()
            for shard_index, path in enumerate(input_files):
                pending.append(pool.apply_async(_process_shard, (shard_index, path)))
                if len(pending) >= num_workers:
                    consume(pending.popleft().get())
            while pending:
                consume(pending.popleft().get())
    finally:
        writer.close()
    logging.info(
        "Read %d documents (%d empty documents dropped) from %d shards",
        num_documents,
        num_dropped,
        len(input_files),
    )
    if num_documents == 0:
        raise ValueError(
            f"no document with any token in the input: {', '.join(input_files)}"
        )
    logging.info("Wrote %d total instances", writer.total)
    return writer.total
