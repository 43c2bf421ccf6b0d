"""Masked-LM / next-sentence pre-training data of ``create_pretraining_data.py``.

Reproduces google-research/bert's ``create_pretraining_data.py`` (spec §8): the
same documents, RNG call order, instances and TFRecord schema. In the default
mode (``num_workers=1`` and no ``shard_size_mb``) the output is that of the
original for the same inputs, flags and seed, byte for byte: all input files
are read into one list of documents, shuffled with ``random.Random(random_seed)``,
passed over ``dupe_factor`` times, and all instances of all passes are shuffled
together before being written.

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

* Sharded, streaming generation (``num_workers > 1``, or any ``shard_size_mb``).
  A *shard* is a run of whole documents of one input file, cut at the first
  blank line after ``shard_size_mb`` MiB of text (default 1 MiB; a document is
  never split, a file never continues into the next one). Each shard is
  processed on its own, in a worker process, exactly as the original processes
  a whole corpus, but with its own ``random.Random(shard_seed(random_seed,
  index))`` where ``index`` counts the shards over all input files. Random
  next segments therefore come from the same shard, and instances are shuffled
  within a shard only. Records are written shard after shard in input order,
  round-robin over the output files, so the output depends only on the seed,
  the input and the shard size, not on the number of workers or their timing.
  At most ``num_workers`` shards (their text and records) are in memory at
  once, so memory is bounded by the shard size, not by the corpus (the
  original holds every instance, issue #89). An input file smaller than the
  shard size is one shard, so several small files give the same records as the
  previous "one shard per file" mode.
* Speed, with identical records: no TensorFlow for local files (records are
  serialized by ``RecordEncoder`` and framed by ``frame_records``, both checked
  byte for byte against ``tf.train.Example`` / ``tf.io.TFRecordWriter`` in the
  tests; TensorFlow is imported only for remote ``gs://``-style paths, glob
  patterns, and the reader helpers), WordPiece memoised per whitespace word,
  instances kept as serialized records (about a third of the memory of the
  Python objects) and shuffled as such with the same RNG calls.
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
import importlib
import importlib.util
import itertools
import multiprocessing
import os
import random
import struct
import sys
import threading

import numpy as np
from absl import logging


def _import_tokenization():
    """``bert_tf.tokenization`` without running ``bert_tf/__init__.py``.

    The package's ``__init__`` imports Keras and TensorFlow (about 4 s and
    600 MB), which this pure-Python data pipeline does not need. The module is
    loaded from its file under its own name, so a later ``import bert_tf``
    reuses it (one module object either way).
    """
    name = "bert_tf.tokenization"
    if name in sys.modules or "bert_tf" in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("bert_tf")
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = os.path.join(locations[0], "tokenization.py") if locations else ""
    if not os.path.isfile(path):
        return importlib.import_module(name)
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


tokenization = _import_tokenization()

__all__ = [
    "DEFAULT_SHARD_SIZE_MB",
    "RecordEncoder",
    "ShardedRunStats",
    "TrainingInstance",
    "create_instances_from_document",
    "create_masked_lm_predictions",
    "create_pretraining_data",
    "create_training_instances",
    "decode_record",
    "expand_input_files",
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
    "write_instance_to_example_files",
    "write_sharded",
]

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]")
# The original logs this many instances (tokens and features) when writing.
NUM_LOGGED_INSTANCES = 20
# Shard size of the sharded mode when --shard_size_mb is not given. At seq 128
# a 1 MiB shard gives ~3,000 instances per pass (SQuAD text), and a worker
# needs ~30 MB per MiB of shard at dupe_factor=5 (~60 MB at 10) on top of its
# ~65 MB base: small enough for many workers, large enough for the shuffle and
# the random next segments to draw from thousands of documents' instances.
DEFAULT_SHARD_SIZE_MB = 1.0
# Distinct whitespace words memoised by the tokenizer before the memo is reset
# (bounds its memory at a few tens of MB on any corpus).
_MAX_CACHED_WORDS = 200_000


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

_GLOB_CHARACTERS = frozenset("*?[\\")


def expand_input_files(input_file):
    """Expands the ``--input_file`` value: comma-separated parts, each globbed.

    Args:
      input_file: a path, a glob, or a comma-separated list of them.

    Returns:
      The matching files in the original's order (part by part, each part's
      matches as tf.io.gfile.glob returns them). A local path without glob
      characters is checked with os.path.exists, which is what tf.io.gfile.glob
      does for it, without importing TensorFlow.

    Raises:
      ValueError: a part matches no file (the original silently skipped it,
        which turns a typo into a smaller corpus).
    """
    files = []
    for pattern in input_file.split(","):
        if not pattern:
            continue
        if "://" in pattern or _GLOB_CHARACTERS.intersection(pattern):
            import tensorflow as tf

            matches = tf.io.gfile.glob(pattern)
        else:
            matches = [pattern] if os.path.exists(pattern) else []
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
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "rb")
    return open(path, "rb")


def _iter_raw_lines(path):
    """Yields (stripped text, size in bytes) of a file's lines, strict UTF-8."""
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
            yield text.strip(), len(raw)


class _MemoTokenizer:
    """``FullTokenizer.tokenize`` with WordPiece memoised per whitespace word.

    FullTokenizer runs WordPiece on each token of the basic tokenizer
    independently, so caching the pieces of each distinct token gives the same
    output. Words repeat a lot in running text; the pieces (immutable strings)
    are shared between sentences, which also saves memory. The memo is reset
    after ``max_words`` distinct words so that it stays bounded.
    """

    def __init__(self, tokenizer, max_words=_MAX_CACHED_WORDS):
        self._basic = tokenizer.basic_tokenizer.tokenize
        self._wordpiece = tokenizer.wordpiece_tokenizer.tokenize
        self._memo = {}
        self._max_words = max_words

    def tokenize(self, text):
        memo = self._memo
        output = []
        for word in self._basic(text):
            pieces = memo.get(word)
            if pieces is None:
                pieces = self._wordpiece(word)
                if len(memo) >= self._max_words:
                    memo.clear()
                memo[word] = pieces
            output.extend(pieces)
        return output


def _tokenize_function(tokenizer):
    """The fastest equivalent of ``tokenizer.tokenize``."""
    if (
        isinstance(tokenizer, tokenization.FullTokenizer)
        and type(tokenizer).tokenize is tokenization.FullTokenizer.tokenize
    ):
        return _MemoTokenizer(tokenizer).tokenize
    return tokenizer.tokenize


def _documents_from_lines(lines, tokenize):
    """Stripped lines → (documents, num_dropped), as the original reads them."""
    documents = [[]]
    for line in lines:
        if not line:
            documents.append([])
            continue
        tokens = tokenize(line)
        if tokens:
            documents[-1].append(tokens)
    kept = [document for document in documents if document]
    return kept, len(documents) - len(kept)


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
    # A generator: the text itself is never held, only its tokens.
    lines = (line for path in input_files for line, _ in _iter_raw_lines(path))
    return _documents_from_lines(lines, _tokenize_function(tokenizer))


def iter_shards(input_files, shard_size_mb):
    """Splits the input into shards: runs of whole documents of one file.

    A shard ends at the first blank line (document end) once it holds at least
    ``shard_size_mb`` MiB of text; that blank line is not part of either shard.
    A document is never split, and a file's last document does not continue
    into the next file. Shards without any non-blank line are skipped. The
    files are read lazily: only the shard being built is in memory.

    Args:
      input_files: list of paths.
      shard_size_mb: the size at which a shard may end, in MiB (> 0).

    Yields:
      Lists of stripped lines (blank lines "" separate documents).
    """
    if not shard_size_mb > 0:
        raise ValueError(f"shard_size_mb must be > 0, got {shard_size_mb}")
    limit = max(1, int(shard_size_mb * (1 << 20)))
    for path in input_files:
        lines = []
        size = 0
        has_text = False
        for line, raw_size in _iter_raw_lines(path):
            if line:
                has_text = True
            elif size >= limit:
                if has_text:
                    yield lines
                lines = []
                size = 0
                has_text = False
                continue
            lines.append(line)
            size += raw_size
        if has_text:
            yield lines


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
    return _generate(
        documents,
        _instance_from_pair,
        vocab_words,
        max_seq_length,
        dupe_factor,
        short_seq_prob,
        masked_lm_prob,
        max_predictions_per_seq,
        rng,
        do_whole_word_mask,
    )


def _instance_from_pair(tokens, num_segment_a, positions, labels, is_random_next):
    return TrainingInstance(
        tokens=tokens,
        segment_ids=[0] * num_segment_a + [1] * (len(tokens) - num_segment_a),
        masked_lm_positions=positions,
        masked_lm_labels=labels,
        is_random_next=is_random_next,
    )


def _generate(
    documents,
    make,
    vocab_words,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    rng,
    do_whole_word_mask,
):
    """The original's create_training_instances, each instance built by `make`.

    `make(tokens, num_segment_a, positions, labels, is_random_next)` turns an
    instance into what is kept (a TrainingInstance, or its serialized record,
    which is a third of the memory); `make` must not use `rng`. The final
    shuffle only depends on the number of items, so shuffling records uses the
    same RNG calls and gives the same order as shuffling instances.
    """
    rng.shuffle(documents)
    items = []
    for _ in range(dupe_factor):
        for document_index in range(len(documents)):
            for pair in _document_pairs(
                documents,
                document_index,
                max_seq_length,
                short_seq_prob,
                masked_lm_prob,
                max_predictions_per_seq,
                vocab_words,
                rng,
                do_whole_word_mask,
            ):
                items.append(make(*pair))
    rng.shuffle(items)
    return items


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
    return [
        _instance_from_pair(*pair)
        for pair in _document_pairs(
            all_documents,
            document_index,
            max_seq_length,
            short_seq_prob,
            masked_lm_prob,
            max_predictions_per_seq,
            vocab_words,
            rng,
            do_whole_word_mask,
        )
    ]


def _document_pairs(
    all_documents,
    document_index,
    max_seq_length,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask,
):
    """Yields the instances of one document (one pass) as plain tuples:
    (tokens, num_segment_a, masked_lm_positions, masked_lm_labels,
    is_random_next), num_segment_a being len("[CLS] A [SEP]")."""
    document = all_documents[document_index]
    # [CLS], [SEP], [SEP]
    max_num_tokens = max_seq_length - 3

    # Mostly full sequences (padding is wasted compute), but sometimes shorter
    # ones so that pre-training matches the shorter fine-tuning inputs.
    target_seq_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

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
                tokens, positions, labels = create_masked_lm_predictions(
                    tokens,
                    masked_lm_prob,
                    max_predictions_per_seq,
                    vocab_words,
                    rng,
                    do_whole_word_mask,
                )
                yield tokens, len(tokens_a) + 2, positions, labels, is_random_next
            current_chunk = []
            current_length = 0
        i += 1


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
    output_tokens = list(tokens)
    num_to_predict = min(
        max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob)))
    )
    if not do_whole_word_mask:
        # Every candidate group is a single position and no two overlap, so
        # the original's selection loop takes the first num_to_predict of the
        # shuffled candidates. Shuffling bare indexes instead of one-element
        # lists makes the same RNG calls and the same permutation.
        cand_indexes = [
            i for i, token in enumerate(tokens) if token != "[CLS]" and token != "[SEP]"
        ]
        rng.shuffle(cand_indexes)
        chosen = cand_indexes[:num_to_predict]
        for index in chosen:
            output_tokens[index] = _masked_token(tokens[index], vocab_words, rng)
        chosen.sort()
        return output_tokens, chosen, [tokens[index] for index in chosen]

    cand_indexes = []
    for i, token in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            continue
        # Whole-word masking: a "##" piece belongs to the previous word, and
        # the word's pieces are masked (or not) together.
        if cand_indexes and token.startswith("##"):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])

    rng.shuffle(cand_indexes)
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
            output_tokens[index] = _masked_token(tokens[index], vocab_words, rng)
            masked.append((index, tokens[index]))
    masked.sort(key=lambda item: item[0])
    return (
        output_tokens,
        [index for index, _ in masked],
        [label for _, label in masked],
    )


def _masked_token(token, vocab_words, rng):
    # The RNG call order matters for identical output: random() for the 80%
    # test, random() for the 50/50 test, then randint.
    if rng.random() < 0.8:
        return "[MASK]"
    if rng.random() < 0.5:
        return token
    return vocab_words[rng.randint(0, len(vocab_words) - 1)]


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
# Records: tf.train.Example bytes and TFRecord framing, without TensorFlow
# --------------------------------------------------------------------------


def pretraining_feature_spec(max_seq_length, max_predictions_per_seq):
    """The ``tf.io.FixedLenFeature`` dict the original run_pretraining reads."""
    import tensorflow as tf

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
    import tensorflow as tf

    example = tf.io.parse_single_example(
        serialized, pretraining_feature_spec(max_seq_length, max_predictions_per_seq)
    )
    # tf.Example only supports tf.int64, but the TPU only supports tf.int32.
    return {
        name: tf.cast(tensor, tf.int32) if tensor.dtype == tf.int64 else tensor
        for name, tensor in example.items()
    }


def _padded_features(instance, tokenizer, max_seq_length, max_predictions_per_seq):
    """The original's padded feature lists of an instance (name → list)."""
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
    return {
        "input_ids": input_ids,
        "input_mask": input_mask,
        "segment_ids": segment_ids,
        "masked_lm_positions": masked_lm_positions,
        "masked_lm_ids": masked_lm_ids,
        "masked_lm_weights": masked_lm_weights,
        "next_sentence_labels": [int(instance.is_random_next)],
    }


def instance_to_example(instance, tokenizer, max_seq_length, max_predictions_per_seq):
    """Converts a ``TrainingInstance`` to a padded ``tf.train.Example``.

    The writer does not use it (see ``RecordEncoder``, same bytes); it is kept
    for callers that want the proto.
    """
    import tensorflow as tf

    features = collections.OrderedDict()
    for name, values in _padded_features(
        instance, tokenizer, max_seq_length, max_predictions_per_seq
    ).items():
        if name == "masked_lm_weights":
            feature = tf.train.Feature(float_list=tf.train.FloatList(value=values))
        else:
            feature = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        features[name] = feature
    return tf.train.Example(features=tf.train.Features(feature=features))


def _varint(value):
    """Protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


_SMALL_VARINTS = tuple(_varint(value) for value in range(1 << 14))


def _len_varint(value):
    return _SMALL_VARINTS[value] if value < 16384 else _varint(value)


# Feature names in the order ``SerializeToString(deterministic=True)`` writes
# the map entries (sorted keys), and each name's (key prefix, list kind tag):
# Feature.int64_list is field 3 (tag 0x1a), Feature.float_list field 2 (0x12).
_INT64_LIST = b"\x1a"
_FLOAT_LIST = b"\x12"
_SORTED_FEATURES = tuple(
    (b"\x0a" + _len_varint(len(name)) + name.encode(), kind)
    for name, kind in (
        ("input_ids", _INT64_LIST),
        ("input_mask", _INT64_LIST),
        ("masked_lm_ids", _INT64_LIST),
        ("masked_lm_positions", _INT64_LIST),
        ("masked_lm_weights", _FLOAT_LIST),
        ("next_sentence_labels", _INT64_LIST),
        ("segment_ids", _INT64_LIST),
    )
)
_FLOAT_ONE = struct.pack("<f", 1.0)


def _entry_header(key_prefix, kind, size):
    """The bytes of a Features map entry before its packed values (`size`
    bytes): entry (field 1 of Features) → key (1) and Feature (2) → the list
    (Feature field 3 for int64, 2 for float) → its packed values (field 1)."""
    values = b"\x0a" + _len_varint(size)
    feature = kind + _len_varint(len(values) + size) + values
    body = key_prefix + b"\x12" + _len_varint(len(feature) + size) + feature
    return b"\x0a" + _len_varint(len(body) + size) + body


class RecordEncoder:
    """Serializes instances to the bytes of the original's ``tf.train.Example``.

    ``encode(...)`` returns exactly what ``instance_to_example(...)
    .SerializeToString(deterministic=True)`` returns (map entries in sorted key
    order, packed lists), several times faster and without TensorFlow: each
    token's varint and each entry header (per value size) is precomputed, so
    a record is a few joins.
    """

    def __init__(self, vocab, max_seq_length, max_predictions_per_seq):
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq
        self._token_varint = {token: _varint(index) for token, index in vocab.items()}
        self._position_varint = [
            _varint(value) for value in range(max(max_seq_length, 128))
        ]
        self._headers = [{} for _ in _SORTED_FEATURES]

    def _header(self, feature_index, size):
        headers = self._headers[feature_index]
        header = headers.get(size)
        if header is None:
            header = headers[size] = _entry_header(
                *_SORTED_FEATURES[feature_index], size
            )
        return header

    def _positions(self, positions):
        table = self._position_varint
        size = len(table)
        return b"".join([table[p] if 0 <= p < size else _varint(p) for p in positions])

    def encode(self, tokens, num_segment_a, positions, labels, is_random_next):
        """Record of ``[CLS] A [SEP] B [SEP]`` tokens (num_segment_a of them in
        segment 0), the masked positions and their original tokens.

        Raises:
          KeyError: a token is not in the vocabulary (as the original).
          AssertionError: more tokens than max_seq_length (as the original).
        """
        segment_ids = b"\x00" * num_segment_a + b"\x01" * (len(tokens) - num_segment_a)
        return self._encode(tokens, segment_ids, positions, labels, is_random_next)

    def encode_instance(self, instance):
        """Record of a ``TrainingInstance`` (any segment ids)."""
        segment_ids = self._positions(instance.segment_ids)
        return self._encode(
            instance.tokens,
            segment_ids,
            instance.masked_lm_positions,
            instance.masked_lm_labels,
            instance.is_random_next,
        )

    def _encode(self, tokens, segment_ids, positions, labels, is_random_next):
        token_varint = self._token_varint.__getitem__
        num_tokens = len(tokens)
        if num_tokens > self.max_seq_length:
            raise AssertionError(f"{num_tokens} tokens > {self.max_seq_length}")
        zeros = b"\x00" * (self.max_seq_length - num_tokens)
        num_predictions = len(labels)
        num_pad = max(0, self.max_predictions_per_seq - num_predictions)
        pred_zeros = b"\x00" * num_pad
        header = self._header
        parts = []
        # In _SORTED_FEATURES order.
        for index, values in enumerate(
            (
                b"".join(map(token_varint, tokens)) + zeros,  # input_ids
                b"\x01" * num_tokens + zeros,  # input_mask
                b"".join(map(token_varint, labels)) + pred_zeros,  # masked_lm_ids
                self._positions(positions) + pred_zeros,  # masked_lm_positions
                _FLOAT_ONE * num_predictions + b"\x00" * (4 * num_pad),  # weights
                b"\x01" if is_random_next else b"\x00",  # next_sentence_labels
                segment_ids + zeros,  # segment_ids
            )
        ):
            parts.append(header(index, len(values)))
            parts.append(values)
        features = b"".join(parts)
        return b"\x0a" + _len_varint(len(features)) + features


def _read_varint(data, position):
    result = shift = 0
    while True:
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, position
        shift += 7


def _read_field(data, position):
    """One length-delimited field: (field number, payload, next position)."""
    tag, position = _read_varint(data, position)
    if tag & 7 != 2:
        raise ValueError(f"unexpected wire type {tag & 7} in a pre-training record")
    length, position = _read_varint(data, position)
    return tag >> 3, data[position : position + length], position + length


def decode_record(data):
    """A serialized pre-training record → {feature name: list of values}.

    A small protobuf reader for the records written here (int64 and float
    lists), used to log records and by the benchmark; it needs no TensorFlow.
    """
    _, features, _ = _read_field(data, 0)
    decoded = {}
    position = 0
    while position < len(features):
        _, entry, position = _read_field(features, position)
        _, key, offset = _read_field(entry, 0)
        _, feature, _ = _read_field(entry, offset)
        kind, values, _ = _read_field(feature, 0)
        _, packed, _ = _read_field(values, 0) if values else (0, b"", 0)
        if kind == 2:  # float_list
            decoded[key.decode()] = [
                value for (value,) in struct.iter_unpack("<f", bytes(packed))
            ]
        else:
            numbers = []
            offset = 0
            while offset < len(packed):
                number, offset = _read_varint(packed, offset)
                numbers.append(number)
            decoded[key.decode()] = numbers
    return decoded


def _crc32c_table():
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
        table.append(crc)
    return np.array(table, dtype=np.uint32)


_CRC32C_TABLE = _crc32c_table()
# _CRC32C_INIT[k]: the CRC register after k zero bytes from the initial
# 0xFFFFFFFF; grown on demand (see masked_crc32c).
_CRC32C_INIT = [0xFFFFFFFF]
_CRC_BATCH = 4096


def _crc32c_init_effect(max_length):
    table = _CRC32C_TABLE
    while len(_CRC32C_INIT) <= max_length:
        crc = _CRC32C_INIT[-1]
        _CRC32C_INIT.append(int(table[crc & 0xFF]) ^ (crc >> 8))
    return np.array(_CRC32C_INIT[: max_length + 1], dtype=np.uint32)


def _crc32c_columns(columns, lengths):
    """CRC-32C of n byte strings given right-aligned as a (width, n) matrix
    (zero bytes in front); lengths are the true lengths (int array)."""
    table = _CRC32C_TABLE
    crc = np.zeros(columns.shape[1], dtype=np.uint32)
    # The register update is linear: start from 0 so that the leading zero
    # padding leaves it at 0, then add the effect of the 0xFFFFFFFF start over
    # each string's own length.
    for column in columns:
        crc = table[crc.astype(np.uint8) ^ column] ^ (crc >> 8)
    crc ^= _crc32c_init_effect(int(lengths.max()) if len(lengths) else 0)[lengths]
    return crc ^ np.uint32(0xFFFFFFFF)


def _mask_crc(crc):
    # TFRecord's masked CRC: rotate right by 15 bits, add a constant (mod 2^32).
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(0xA282EAD8)


def masked_crc32c(buffers):
    """TFRecord's masked CRC-32C of each byte string, as a uint32 array.

    Vectorised over the strings with numpy (a byte-wise table CRC run on all
    strings at once), so no crc32c package is needed.
    """
    result = np.empty(len(buffers), dtype=np.uint32)
    for start in range(0, len(buffers), _CRC_BATCH):
        batch = buffers[start : start + _CRC_BATCH]
        lengths = np.fromiter(map(len, batch), dtype=np.int64, count=len(batch))
        width = int(lengths.max()) if len(batch) else 0
        matrix = np.zeros((len(batch), width), dtype=np.uint8)
        for row, (buffer, length) in enumerate(zip(batch, lengths, strict=True)):
            if length:
                matrix[row, width - length :] = np.frombuffer(buffer, dtype=np.uint8)
        columns = np.ascontiguousarray(matrix.T)
        result[start : start + len(batch)] = _mask_crc(
            _crc32c_columns(columns, lengths)
        )
    return result


def frame_records(records):
    """Frames serialized records as TFRecord: returns (bytes, framed sizes).

    Each record is: uint64 length, masked CRC-32C of the length, the data,
    masked CRC-32C of the data (all little-endian) — the bytes that
    ``tf.io.TFRecordWriter`` writes for it.
    """
    n = len(records)
    if not n:
        return b"", []
    lengths = np.fromiter(map(len, records), dtype=np.int64, count=n)
    headers = lengths.astype("<u8").view(np.uint8).reshape(n, 8)
    header_crc = np.empty(n, dtype=np.uint32)
    for start in range(0, n, _CRC_BATCH):
        block = headers[start : start + _CRC_BATCH]
        header_crc[start : start + len(block)] = _mask_crc(
            _crc32c_columns(
                np.ascontiguousarray(block.T), np.full(len(block), 8, np.int64)
            )
        )
    prefix = np.empty((n, 12), dtype=np.uint8)
    prefix[:, :8] = headers
    prefix[:, 8:] = header_crc.astype("<u4").view(np.uint8).reshape(n, 4)
    prefix = prefix.tobytes()
    suffix = masked_crc32c(records).astype("<u4").tobytes()
    pieces = []
    for i, record in enumerate(records):
        pieces.append(prefix[12 * i : 12 * i + 12])
        pieces.append(record)
        pieces.append(suffix[4 * i : 4 * i + 4])
    return b"".join(pieces), (lengths + 16).tolist()


def _open_output(path):
    if "://" in path:
        import tensorflow as tf

        directory = os.path.dirname(path)
        if directory and not tf.io.gfile.exists(directory):
            tf.io.gfile.makedirs(directory)
        return tf.io.gfile.GFile(path, "wb")
    directory = os.path.dirname(path)
    if directory:
        os.makedirs(directory, exist_ok=True)
    return open(path, "wb", buffering=1 << 20)


class _RoundRobinWriter:
    """Writes TFRecord-framed records round-robin over several files."""

    def __init__(self, output_files):
        self.files = []
        try:
            for path in output_files:
                self.files.append(_open_output(path))
        except BaseException:
            self.close()
            raise
        self.index = 0
        self.total = 0

    def write_framed(self, data, sizes):
        """Writes `data` (framed records of the given sizes, in order)."""
        if len(self.files) == 1:
            self.files[0].write(data)
        else:
            view = memoryview(data)
            offset = 0
            files = self.files
            index = self.index
            for size in sizes:
                files[index].write(view[offset : offset + size])
                offset += size
                index = (index + 1) % len(files)
            self.index = index
        self.total += len(sizes)

    def write_records(self, records):
        for start in range(0, len(records), _CRC_BATCH):
            self.write_framed(*frame_records(records[start : start + _CRC_BATCH]))

    def close(self):
        for file in self.files:
            file.close()


_FEATURE_ORDER = (
    "input_ids",
    "input_mask",
    "segment_ids",
    "masked_lm_positions",
    "masked_lm_ids",
    "masked_lm_weights",
    "next_sentence_labels",
)


def _log_record(record, inv_vocab):
    """Logs a record as the original logs an instance (tokens, then features)."""
    features = decode_record(record)
    num_tokens = sum(features["input_mask"])
    tokens = [inv_vocab[index] for index in features["input_ids"][:num_tokens]]
    logging.info("*** Example ***")
    logging.info("tokens: %s", " ".join(tokenization.printable_text(x) for x in tokens))
    for name in _FEATURE_ORDER:
        logging.info("%s: %s", name, " ".join(str(x) for x in features[name]))


def write_instance_to_example_files(
    instances, tokenizer, max_seq_length, max_predictions_per_seq, output_files
):
    """Writes instances round-robin over `output_files`; returns the count.

    The first 20 instances are logged, then "Wrote %d total instances".
    """
    encoder = RecordEncoder(tokenizer.vocab, max_seq_length, max_predictions_per_seq)
    records = [encoder.encode_instance(instance) for instance in instances]
    return _write_records(records, output_files, tokenizer.inv_vocab)


def _write_records(records, output_files, inv_vocab):
    writer = _RoundRobinWriter(output_files)
    try:
        writer.write_records(records)
    finally:
        writer.close()
    for record in records[:NUM_LOGGED_INSTANCES]:
        _log_record(record, inv_vocab)
    logging.info("Wrote %d total instances", writer.total)
    return writer.total


# --------------------------------------------------------------------------
# Driver (the original's single pass, or sharded over worker processes)
# --------------------------------------------------------------------------


def shard_seed(seed, shard_index):
    """The RNG seed of shard `shard_index` in sharded mode (stable across runs)."""
    digest = hashlib.sha256(f"{seed}/{shard_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def _check_args(
    max_seq_length,
    max_predictions_per_seq,
    dupe_factor,
    masked_lm_prob,
    num_workers,
    shard_size_mb,
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
    if shard_size_mb is not None and not shard_size_mb > 0:
        raise ValueError(f"shard_size_mb must be > 0, got {shard_size_mb}")


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


# Per-process state of the sharded mode (set by _init_worker).
_WORKER = {}
# glibc's mallopt parameter number of M_MMAP_THRESHOLD (malloc.h).
_M_MMAP_THRESHOLD = -3


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


def _init_worker(vocab_file, do_lower_case, options, own_process=True):
    if own_process:
        release_large_blocks_to_os()
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    _WORKER.update(
        tokenize=_tokenize_function(tokenizer),
        vocab_words=list(tokenizer.vocab.keys()),
        encoder=RecordEncoder(
            tokenizer.vocab,
            options["max_seq_length"],
            options["max_predictions_per_seq"],
        ),
        options=options,
    )


def _process_shard(shard_index, lines):
    """Worker: one shard's lines → (framed records, sizes, documents, dropped)."""
    options = _WORKER["options"]
    documents, num_dropped = _documents_from_lines(lines, _WORKER["tokenize"])
    del lines
    if not documents:
        return b"", [], 0, num_dropped
    rng = random.Random(shard_seed(options["random_seed"], shard_index))
    records = _generate(
        documents,
        _WORKER["encoder"].encode,
        _WORKER["vocab_words"],
        options["max_seq_length"],
        options["dupe_factor"],
        options["short_seq_prob"],
        options["masked_lm_prob"],
        options["max_predictions_per_seq"],
        rng,
        options["do_whole_word_mask"],
    )
    num_documents = len(documents)
    del documents
    data, sizes = frame_records(records)
    return data, sizes, num_documents, num_dropped


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
):
    """The sharded mode (see the module doc); returns ``ShardedRunStats``.

    Args:
      input_files, output_files, vocab_file, do_lower_case: as
        ``create_pretraining_data``.
      options: dict with random_seed, max_seq_length, dupe_factor,
        short_seq_prob, masked_lm_prob, max_predictions_per_seq and
        do_whole_word_mask.
      num_workers: worker processes (1 = in this process); the records do not
        depend on it.
      shard_size_mb: see ``iter_shards``.
    """
    stats = ShardedRunStats()
    inv_vocab = tokenization.FullTokenizer(
        vocab_file, do_lower_case=do_lower_case
    ).inv_vocab
    shards = enumerate(iter_shards(input_files, shard_size_mb))
    # Read ahead as many shards as workers: fewer shards need fewer processes.
    head = collections.deque(itertools.islice(shards, num_workers))
    num_head = len(head)
    shards = _popping_chain(head, shards)
    del head
    writer = _RoundRobinWriter(output_files)
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
            _log_record(bytes(data[offset + 12 : offset + size - 4]), inv_vocab)
            offset += size
            num_logged += 1

    try:
        if num_workers == 1 or num_head <= 1:
            _init_worker(vocab_file, do_lower_case, options, own_process=False)
            try:
                for shard_index, lines in shards:
                    stats.max_shards_in_flight = 1
                    consume(_process_shard(shard_index, lines))
            finally:
                _WORKER.clear()
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
                        pool.apply_async(_process_shard, (shard_index, lines))
                    )
                    del lines
                    stats.max_shards_in_flight = max(
                        stats.max_shards_in_flight, len(pending)
                    )
                    if len(pending) >= stats.processes:
                        consume(pending.popleft().get())
                while pending:
                    consume(pending.popleft().get())
    finally:
        writer.close()
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
    if stats.num_documents == 0:
        raise ValueError(
            f"no document with any token in the input: {', '.join(input_files)}"
        )
    logging.info("Wrote %d total instances", writer.total)
    return stats


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
      num_workers: worker processes. With 1 and no `shard_size_mb`: the
        original's algorithm over the whole corpus (held in memory). Otherwise
        sharded (see the module doc).
      shard_size_mb: shard size of the sharded mode in MiB (default
        ``DEFAULT_SHARD_SIZE_MB`` when num_workers > 1). Giving it selects the
        sharded mode even with one worker (bounded memory on one core); the
        records depend on it but not on num_workers.

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
        shard_size_mb,
    )
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    check_vocab(tokenizer)

    logging.info("*** Reading from input files ***")
    for path in input_files:
        logging.info("  %s", path)
    logging.info("*** Writing to output files ***")
    for path in output_files:
        logging.info("  %s", path)

    if num_workers == 1 and shard_size_mb is None:
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
        encoder = RecordEncoder(
            tokenizer.vocab, max_seq_length, max_predictions_per_seq
        )
        records = _generate(
            documents,
            encoder.encode,
            list(tokenizer.vocab.keys()),
            max_seq_length,
            dupe_factor,
            short_seq_prob,
            masked_lm_prob,
            max_predictions_per_seq,
            random.Random(random_seed),
            do_whole_word_mask,
        )
        del documents
        return _write_records(records, output_files, tokenizer.inv_vocab)

    options = dict(
        random_seed=random_seed,
        max_seq_length=max_seq_length,
        dupe_factor=dupe_factor,
        short_seq_prob=short_seq_prob,
        masked_lm_prob=masked_lm_prob,
        max_predictions_per_seq=max_predictions_per_seq,
        do_whole_word_mask=do_whole_word_mask,
    )
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
