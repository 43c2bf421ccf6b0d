"""WordPiece tokenization, reproducing google-research/bert's ``tokenization.py``.

The public names and their outputs match the original module (commit eedf571):

* ``FullTokenizer`` = ``BasicTokenizer`` (cleaning, CJK splitting, optional
  lower-casing with accent stripping, punctuation splitting) followed by
  ``WordpieceTokenizer`` (greedy longest-match-first, ``##`` continuation
  prefix, a whole word becomes ``[UNK]`` if any part of it cannot be matched or
  if it is longer than 200 code points).
* ``load_vocab`` / ``convert_*`` / ``whitespace_tokenize`` / ``convert_to_unicode``
  / ``printable_text`` / ``validate_case_matches_checkpoint`` and the character
  class helpers ``_is_whitespace``, ``_is_control`` and ``_is_punctuation``.

Differences from the original that do not change any output:

* Python 3 only. TensorFlow is imported only to read remote vocabulary paths
  ("gs://..."); local files are read with plain I/O that mimics the line
  reading of ``tf.gfile.GFile``.
* A missing vocabulary file raises ``FileNotFoundError`` and an undecodable
  line raises ``UnicodeDecodeError``, both naming the file (and line).
* ``BasicTokenizer.tokenize`` runs its per-character passes through cached
  ``str.translate`` tables and ``WordpieceTokenizer`` never tries candidate
  pieces longer than the longest vocabulary entry; both are several times
  faster than the character loops of the original and give identical tokens.

Extra: ``truncate_seq_pair``, the pair-truncation rule of ``run_classifier.py``,
and ``validate_case_matches_vocab``, which tells a cased vocabulary from an
uncased one by its entries (the original only knew seven checkpoint names).
"""

import collections
import re
import unicodedata

from bert_tf.errors import UserInputError
from bert_tf.text.tokenizer_json import is_tokenizer_json
from bert_tf.text.tokenizer_json import tokenizer_json_settings
from bert_tf.text.tokenizer_json import tokenizer_json_vocab

__all__ = [
    "BasicTokenizer",
    "FullTokenizer",
    "WordpieceTokenizer",
    "convert_by_vocab",
    "convert_ids_to_tokens",
    "convert_to_unicode",
    "convert_tokens_to_ids",
    "load_vocab",
    "printable_text",
    "truncate_seq_pair",
    "validate_case_matches_checkpoint",
    "validate_case_matches_vocab",
    "whitespace_tokenize",
]

# Released checkpoints whose directory name tells how their vocabulary was
# cased. The whole-word-masking and 2020 "small" models are deliberately absent
# (as in the original), so no check is made for them.
_LOWER_CASED_MODELS = (
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
)
_CASED_MODELS = (
    "cased_L-12_H-768_A-12",
    "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12",
)
# Same pattern as the original; note the unescaped "." (matches any character)
# and that re.match anchors only the start, so anything may follow.
_CHECKPOINT_NAME_RE = re.compile(r"^.*?([A-Za-z0-9_-]+)/bert_model.ckpt")


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises ValueError if `do_lower_case` contradicts a known checkpoint name.

    Only the seven original release names are checked; any other path (or an
    empty one) is accepted silently.
    """
    if not init_checkpoint:
        return
    match = _CHECKPOINT_NAME_RE.match(init_checkpoint)
    if match is None:
        return
    model_name = match.group(1)

    if model_name in _LOWER_CASED_MODELS and not do_lower_case:
        actual_flag, case_name, opposite_flag = "False", "lowercased", "True"
    elif model_name in _CASED_MODELS and do_lower_case:
        actual_flag, case_name, opposite_flag = "True", "cased", "False"
    else:
        return
    raise UserInputError(
        f"You passed in `do_lower_case={actual_flag}` with "
        f"`init_checkpoint={init_checkpoint}`. However, `{model_name}` seems to "
        f"be a {case_name} model, so you should pass in "
        f"`do_lower_case={opposite_flag}` so that the fine-tuning matches how "
        "the model was pre-training. If this error is wrong, please just comment "
        "out this check.",
        argument=("do_lower_case", "init_checkpoint"),
    )


# Vocabularies of fewer words are not judged (test and toy vocabularies).
_MIN_WORDS_TO_JUDGE_CASE = 1000
# Of bert-base-cased's 28,996 entries 8,368 (29%) change when lower-cased; of
# bert-base-uncased's 30,522 none does. Lower-cased text matches none of them.
_CASED_SHARE = 0.02


def validate_case_matches_vocab(do_lower_case, vocab, vocab_file):
    """Raises UserInputError if `do_lower_case` contradicts the vocabulary's casing.

    A cased vocabulary (many entries with capitals) under lower-casing, or an
    uncased one (no entry with a capital) without it, turns every capitalised
    word into pieces or [UNK] without a word of warning. Vocabularies of
    fewer than 1000 words are not judged.

    Args:
        do_lower_case: the do_lower_case value.
        vocab: the token -> id mapping (`load_vocab`).
        vocab_file: its path, named in the error.

    Example:
    >>> vocab = load_vocab("cased_L-12_H-768_A-12/vocab.txt")
    >>> validate_case_matches_vocab(True, vocab, "cased_L-12_H-768_A-12/vocab.txt")
    Traceback (most recent call last):
    ...
    bert_tf.errors.UserInputError: do_lower_case=true with ..., a cased vocabulary ...
    """
    words = [t for t in vocab if t and not (t.startswith("[") and t.endswith("]"))]
    if len(words) < _MIN_WORDS_TO_JUDGE_CASE:
        return
    cased = sum(1 for word in words if word != word.lower())
    caseable = sum(1 for word in words if word != word.upper())
    share = cased / len(words)
    if do_lower_case and share >= _CASED_SHARE:
        raise UserInputError(
            f"do_lower_case=true with vocab_file={vocab_file}, a cased "
            f"vocabulary ({cased} of its {len(words)} words have capitals, which "
            "lower-cased text never matches): pass do_lower_case=false",
            argument=("do_lower_case", "vocab_file"),
        )
    if not do_lower_case and cased == 0 and caseable >= _CASED_SHARE * len(words):
        raise UserInputError(
            f"do_lower_case=false with vocab_file={vocab_file}, an uncased "
            "vocabulary (none of its words has a capital, so every capitalised "
            "word would become [UNK] or pieces): pass do_lower_case=true",
            argument=("do_lower_case", "vocab_file"),
        )


def convert_to_unicode(text):
    """Returns `text` as str; bytes are decoded as UTF-8, dropping bad bytes."""
    if isinstance(text, str):
        return text
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    raise ValueError(f"Unsupported string type: {type(text)}")


def printable_text(text):
    """Returns `text` in a form suitable for print/logging (str on Python 3)."""
    return convert_to_unicode(text)


def load_vocab(vocab_file):
    """Loads a vocabulary file into an OrderedDict mapping token -> line index.

    One token per line, UTF-8, surrounding whitespace stripped. As in the
    original, a blank line still consumes an index (and maps "" to it), and a
    repeated token keeps the index of its last occurrence. A `*.json` path
    is read as a Hugging Face tokenizer.json (its WordPiece vocabulary).
    """
    vocab_file = str(vocab_file)
    if is_tokenizer_json(vocab_file):  # a Hugging Face tokenizer.json
        return tokenizer_json_vocab(vocab_file)
    data = _read_file_bytes(vocab_file)

    # tf.gfile.GFile.readline (used by the original) splits on "\n" only and
    # silently drops every "\r" byte, also inside a line. A trailing piece
    # without "\n" is a line only if something remains after that.
    lines = data.split(b"\n")
    last = lines.pop().replace(b"\r", b"")
    if last:
        lines.append(last)

    vocab = collections.OrderedDict()
    for index, raw in enumerate(lines):
        try:
            token = raw.replace(b"\r", b"").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnicodeDecodeError(
                exc.encoding,
                exc.object,
                exc.start,
                exc.end,
                f"{exc.reason} (vocabulary file {vocab_file}, line {index + 1})",
            ) from None
        vocab[token.strip()] = index
    return vocab


def _read_file_bytes(path):
    """Reads a local file, or a remote one ("gs://...") through tf.io.gfile as
    the original did; raises FileNotFoundError naming `path`."""
    if "://" in path:
        # Only remote file systems need TensorFlow; import it lazily.
        import tensorflow as tf

        if not tf.io.gfile.exists(path):
            raise FileNotFoundError(2, "Vocabulary file not found", path)
        with tf.io.gfile.GFile(path, "rb") as reader:
            return reader.read()
    try:
        with open(path, "rb") as reader:
            return reader.read()
    except FileNotFoundError as exc:
        raise FileNotFoundError(exc.errno, "Vocabulary file not found", path) from None


def convert_by_vocab(vocab, items):
    """Maps each item through `vocab` (plain lookup: KeyError if absent)."""
    return [vocab[item] for item in items]


def convert_tokens_to_ids(vocab, tokens):
    """Maps tokens to ids; there is no [UNK] fallback (KeyError on OOV)."""
    return convert_by_vocab(vocab, tokens)


def convert_ids_to_tokens(inv_vocab, ids):
    """Maps ids to tokens with a plain lookup."""
    return convert_by_vocab(inv_vocab, ids)


def whitespace_tokenize(text):
    """Strips and splits `text` on (Python) whitespace."""
    # str.split() without arguments already ignores leading/trailing space and
    # returns [] for blank text, exactly like the original strip-then-split.
    return text.split()


def truncate_seq_pair(tokens_a, tokens_b, max_length):
    """Truncates two token lists in place to a total length <= `max_length`.

    The rule of run_classifier.py / extract_features.py: repeatedly drop the last
    token of the longer list; on a tie the second list (B) loses a token. This
    keeps more of the shorter sequence than cutting both proportionally.
    """
    while len(tokens_a) + len(tokens_b) > max_length:
        if len(tokens_a) > len(tokens_b):
            tokens_a.pop()
        else:
            tokens_b.pop()


class FullTokenizer:
    """End-to-end tokenizer: BasicTokenizer then WordPiece.

    `vocab_file` may be a Hugging Face tokenizer.json: its normalizer's
    `strip_accents` and `handle_chinese_chars` then apply unless given here.
    """

    def __init__(
        self,
        vocab_file,
        do_lower_case=True,
        strip_accents=None,
        tokenize_chinese_chars=None,
    ):
        strip_accents, tokenize_chinese_chars = resolve_tokenizer_options(
            vocab_file, strip_accents, tokenize_chinese_chars
        )
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        self.vocab = load_vocab(vocab_file)
        self.inv_vocab = {index: token for token, index in self.vocab.items()}
        self.basic_tokenizer = BasicTokenizer(
            do_lower_case=do_lower_case,
            strip_accents=strip_accents,
            tokenize_chinese_chars=tokenize_chinese_chars,
        )
        self.wordpiece_tokenizer = WordpieceTokenizer(vocab=self.vocab)

    def tokenize(self, text):
        """Returns the list of WordPiece tokens of `text` (str or UTF-8 bytes)."""
        wordpiece = self.wordpiece_tokenizer.tokenize
        split_tokens = []
        for token in self.basic_tokenizer.tokenize(text):
            split_tokens.extend(wordpiece(token))
        return split_tokens

    def convert_tokens_to_ids(self, tokens):
        return convert_by_vocab(self.vocab, tokens)

    def convert_ids_to_tokens(self, ids):
        return convert_by_vocab(self.inv_vocab, ids)


class _LazyTable(dict):
    """A str.translate table that classifies each code point on first use.

    str.translate looks characters up with __getitem__, so __missing__ lets the
    C loop run over cached entries and calls back into Python only once per
    distinct character.
    """

    def __init__(self, rule):
        super().__init__()
        self._rule = rule

    def __missing__(self, code_point):
        value = self._rule(chr(code_point))
        self[code_point] = value
        return value


def _clean_and_cjk_rule(char):
    # Composition of _clean_text and _tokenize_chinese_chars, which both map
    # one character at a time: drop NUL, U+FFFD and controls; whitespace -> " ";
    # CJK ideographs get a space on each side.
    cp = ord(char)
    if cp == 0 or cp == 0xFFFD or _is_control(char):
        return None
    if _is_whitespace(char):
        return " "
    if _is_chinese_char(cp):
        return f" {char} "
    return char


def _clean_rule(char):
    # _clean_text alone (Chinese-character splitting off).
    return char if _is_chinese_char(ord(char)) else _clean_and_cjk_rule(char)


def _drop_nonspacing_mark_rule(char):
    return None if unicodedata.category(char) == "Mn" else char


def _punctuation_rule(char):
    return f" {char} " if _is_punctuation(char) else char


_CLEAN_AND_CJK_TABLE = _LazyTable(_clean_and_cjk_rule)
_CLEAN_TABLE = _LazyTable(_clean_rule)
_DROP_MN_TABLE = _LazyTable(_drop_nonspacing_mark_rule)
_PUNCTUATION_TABLE = _LazyTable(_punctuation_rule)


def resolve_tokenizer_options(vocab_file, strip_accents, tokenize_chinese_chars):
    """`(strip_accents, tokenize_chinese_chars)`: as given, else what a
    tokenizer.json `vocab_file` says, else the original's (None: strip when
    lower-casing; True)."""
    if vocab_file is not None and is_tokenizer_json(str(vocab_file)):
        settings = tokenizer_json_settings(str(vocab_file))
        if strip_accents is None:
            strip_accents = settings.get("strip_accents")
        if tokenize_chinese_chars is None:
            tokenize_chinese_chars = settings.get("tokenize_chinese_chars")
    if tokenize_chinese_chars is None:
        tokenize_chinese_chars = True
    return strip_accents, bool(tokenize_chinese_chars)


class BasicTokenizer:
    """Cleans text, splits CJK characters, punctuation and whitespace, and
    optionally lower-cases and strips accents.

    `strip_accents` and `tokenize_chinese_chars` are Hugging Face's
    `BertTokenizer` switches: accents are stripped when lower-casing unless
    `strip_accents=False`, and also without lower-casing when
    `strip_accents=True`; `tokenize_chinese_chars=False` leaves CJK
    ideographs inside their words.
    """

    def __init__(
        self, do_lower_case=True, strip_accents=None, tokenize_chinese_chars=True
    ):
        self.do_lower_case = do_lower_case
        self.strip_accents = strip_accents
        self.tokenize_chinese_chars = tokenize_chinese_chars

    def tokenize(self, text):
        """Tokenizes a piece of text.

        Equivalent to the original per-token loop (clean, CJK, split, then per
        token lower + strip accents + punctuation split, then split again):

        * every pass except lower() maps characters independently, so it can
          run on the whole string;
        * str.lower() is context-sensitive only for the Greek final sigma, whose
          context scan stops at any character that is neither cased nor
          case-ignorable. The only separators left after cleaning are " ",
          U+2028 and U+2029, which are neither, so lower-casing the whole string
          equals lower-casing each whitespace token;
        * NFD reorders only runs of combining marks, which never span a
          separator (separators are starters);
        * punctuation characters are never whitespace, so surrounding them with
          spaces and splitting once gives the same pieces as the original's
          split / join / split.
        """
        table = _CLEAN_AND_CJK_TABLE if self.tokenize_chinese_chars else _CLEAN_TABLE
        text = convert_to_unicode(text).translate(table)
        if self.do_lower_case:
            text = text.lower()
        strip = self.do_lower_case if self.strip_accents is None else self.strip_accents
        # ASCII is already NFD without marks.
        if strip and not text.isascii():
            text = unicodedata.normalize("NFD", text).translate(_DROP_MN_TABLE)
        return text.translate(_PUNCTUATION_TABLE).split()

    # The step-by-step methods of the original, kept for callers and for tests
    # that check tokenize() against their straightforward composition.

    def _run_strip_accents(self, text):
        """NFD-decomposes `text` and drops non-spacing marks (category Mn)."""
        return unicodedata.normalize("NFD", text).translate(_DROP_MN_TABLE)

    def _run_split_on_punc(self, text):
        """Splits `text` so that every punctuation character is its own piece."""
        output = []
        start_new_word = True
        for char in text:
            if _is_punctuation(char):
                output.append(char)
                start_new_word = True
            else:
                if start_new_word:
                    output.append("")
                    start_new_word = False
                output[-1] += char
        return output

    def _tokenize_chinese_chars(self, text):
        """Adds a space on both sides of every CJK ideograph."""
        return "".join(
            f" {char} " if _is_chinese_char(ord(char)) else char for char in text
        )

    def _is_chinese_char(self, cp):
        """Whether code point `cp` is in one of the CJK ideograph blocks."""
        return _is_chinese_char(cp)

    def _clean_text(self, text):
        """Drops NUL, U+FFFD and control characters; maps whitespace to " "."""
        output = []
        for char in text:
            cp = ord(char)
            if cp == 0 or cp == 0xFFFD or _is_control(char):
                continue
            output.append(" " if _is_whitespace(char) else char)
        return "".join(output)


class _VocabPieceBound:
    """Length of the longest vocabulary entry, recomputed if the vocab changes
    identity or size (no candidate piece longer than this can match)."""

    __slots__ = ("_vocab", "_size", "_longest")

    def __init__(self):
        self._vocab = None
        self._size = -1
        self._longest = 0

    def get(self, vocab):
        if vocab is not self._vocab or len(vocab) != self._size:
            self._vocab = vocab
            self._size = len(vocab)
            self._longest = max(map(len, vocab), default=0)
        return self._longest


class WordpieceTokenizer:
    """Greedy longest-match-first WordPiece tokenization."""

    def __init__(self, vocab, unk_token="[UNK]", max_input_chars_per_word=200):
        self.vocab = vocab
        self.unk_token = unk_token
        self.max_input_chars_per_word = max_input_chars_per_word
        self._bound = _VocabPieceBound()

    def tokenize(self, text):
        """Splits each whitespace token of `text` into word pieces.

        For example "unaffable" -> ["un", "##aff", "##able"]. A word longer than
        `max_input_chars_per_word` code points, or with any position that no
        vocabulary piece matches, becomes a single `unk_token`.
        """
        vocab = self.vocab
        longest = self._bound.get(vocab)
        output_tokens = []
        for token in whitespace_tokenize(convert_to_unicode(text)):
            n_chars = len(token)
            if n_chars > self.max_input_chars_per_word:
                output_tokens.append(self.unk_token)
                continue
            # The first candidate of the greedy search is the whole word.
            if token in vocab:
                output_tokens.append(token)
                continue
            sub_tokens = []
            start = 0
            while start < n_chars:
                # Candidates longer than every vocab entry cannot match, so the
                # search can begin at that length instead of the word's end.
                end = min(n_chars, start + longest)
                piece = None
                while start < end:
                    candidate = token[start:end]
                    if start > 0:
                        candidate = "##" + candidate
                    if candidate in vocab:
                        piece = candidate
                        break
                    end -= 1
                if piece is None:
                    sub_tokens = None
                    break
                sub_tokens.append(piece)
                start = end
            if sub_tokens is None:
                output_tokens.append(self.unk_token)
            else:
                output_tokens.extend(sub_tokens)
        return output_tokens


def _is_whitespace(char):
    """Whether `char` is a space, tab, newline, carriage return or Zs."""
    # \t, \n and \r are category Cc, but BERT treats them as whitespace.
    if char in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(char) == "Zs"


def _is_control(char):
    """Whether `char` is a control (Cc) or format (Cf) character."""
    # \t, \n and \r are Cc too, but they count as whitespace instead.
    if char in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(char) in ("Cc", "Cf")


def _is_punctuation(char):
    """Whether `char` is punctuation: every non-alphanumeric printable ASCII
    character, or any Unicode category P*."""
    cp = ord(char)
    # ASCII symbols such as "$", "^", "`", "+" are not Unicode P* but BERT
    # splits them off anyway.
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(char).startswith("P")


def _is_chinese_char(cp):
    """Whether code point `cp` is a CJK (Unified or Compatibility) ideograph.

    Hangul, Hiragana and Katakana are intentionally not included: those scripts
    separate words with spaces.
    """
    return (
        0x4E00 <= cp <= 0x9FFF
        or 0x3400 <= cp <= 0x4DBF
        or 0x20000 <= cp <= 0x2A6DF
        or 0x2A700 <= cp <= 0x2B73F
        or 0x2B740 <= cp <= 0x2B81F
        or 0x2B820 <= cp <= 0x2CEAF
        or 0xF900 <= cp <= 0xFAFF
        or 0x2F800 <= cp <= 0x2FA1F
    )
