"""Input of the pre-training data: files, lines, documents and shards.

The input is plain text, one sentence per line, a blank line ending a document
(as the original). Lines are read as strict UTF-8: a line that is not UTF-8
raises ``ValueError`` naming the file and line (the original died with a bare
UnicodeDecodeError). Local files are read without TensorFlow; remote
``gs://``-style paths and glob patterns go through ``tf.io.gfile``.
"""

import os

from bert_tf.data_prep.local_files import open_input_file
from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError
from bert_tf.text import tokenization

SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]")
# Distinct whitespace words memoised by the tokenizer before the memo is reset
# (bounds its memory at a few tens of MB on any corpus).
_MAX_CACHED_WORDS = 200_000


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
            raise UserInputError(f"input_file: {pattern!r} matches no file")
        files.extend(matches)
    if not files:
        raise UserInputError(f"input_file: no file given in {input_file!r}")
    return files


def _open_binary(path):
    # Remote paths ("gs://...") go through tf.io.gfile as in the original;
    # local ones through open(), which iterates lines without TensorFlow.
    if "://" in path:
        import tensorflow as tf

        return tf.io.gfile.GFile(path, "rb")
    return open_input_file(path)


def _iter_raw_lines(path):
    """Yields (stripped text, size in bytes) of a file's lines, strict UTF-8."""
    with _open_binary(path) as reader:
        # Lines end at "\n" as with the original's GFile.readline().
        for line_number, raw in enumerate(reader, start=1):
            yield decode_line(raw, path, line_number).strip(), len(raw)


class MemoTokenizer:
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


def tokenize_function(tokenizer):
    """The fastest equivalent of ``tokenizer.tokenize``."""
    if (
        isinstance(tokenizer, tokenization.FullTokenizer)
        and type(tokenizer).tokenize is tokenization.FullTokenizer.tokenize
    ):
        return MemoTokenizer(tokenizer).tokenize
    return tokenizer.tokenize


def documents_from_lines(lines, tokenize):
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
    return documents_from_lines(lines, tokenize_function(tokenizer))


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
    for _, lines in iter_shard_spans(input_files, shard_size_mb):
        yield lines


def iter_shard_spans(input_files, shard_size_mb):
    """``iter_shards`` with where each shard starts.

    Yields:
      (offset, lines): offset is the byte position of the shard's first line
      in the input files taken end to end (a file's size counts in full).
    """
    if not shard_size_mb > 0:
        raise UserInputError(f"shard_size_mb must be > 0, got {shard_size_mb}")
    limit = max(1, int(shard_size_mb * (1 << 20)))
    file_start = 0
    for path in input_files:
        lines = []
        size = 0
        has_text = False
        offset = start = file_start
        for line, raw_size in _iter_raw_lines(path):
            offset += raw_size
            if line:
                has_text = True
            elif size >= limit:
                if has_text:
                    yield start, lines
                lines = []
                size = 0
                has_text = False
                start = offset
                continue
            lines.append(line)
            size += raw_size
        if has_text:
            yield start, lines
        file_start = offset


def checked_tokenizer(vocab_file, do_lower_case):
    """The `FullTokenizer` of `vocab_file`, checked for pre-training data: the
    special tokens (`check_vocab`) and `do_lower_case` against the vocabulary
    (`validate_case_matches_vocab`)."""
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    check_vocab(tokenizer)
    tokenization.validate_case_matches_vocab(do_lower_case, tokenizer.vocab, vocab_file)
    return tokenizer


def check_vocab(tokenizer):
    """Raises ValueError (naming the vocab file) if a special token is missing."""
    missing = [token for token in SPECIAL_TOKENS if token not in tokenizer.vocab]
    if missing:
        raise UserInputError(
            f"{tokenizer.vocab_file}: the vocabulary has no "
            f"{', '.join(missing)} (pre-training data needs [CLS], [SEP] and [MASK])"
        )
