"""A step-by-step transcription of the original BERT tokenizer
(tokenization.py), with switchable parameters.

`simulate(text, vocab, lower)` with the default `Pipeline()` is the original
algorithm. tests/test_tokenization_differential.py models each third-party
tokenizer's deviations from it (quirks) as changes to the `Pipeline`;
tests/test_tokenization_quirks.py reads `category` (unicodedata.category,
cached) too.
"""

import dataclasses
import functools
import re
import unicodedata

CJK_RANGES = (
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
)


# Character predicates are cached: the classification runs the step-by-step
# model tens of thousands of times.
_cache = functools.cache


@_cache
def category(char):
    return unicodedata.category(char)


@_cache
def _orig_drop(char):
    # Original _clean_text: NUL, U+FFFD and Cc/Cf except \t \n \r are removed.
    return ord(char) in (0, 0xFFFD) or (
        char not in "\t\n\r" and category(char) in ("Cc", "Cf")
    )


@_cache
def _orig_space(char):
    return char in " \t\n\r" or category(char) == "Zs"


@_cache
def _orig_cjk(cp):
    return any(lo <= cp <= hi for lo, hi in CJK_RANGES)


@_cache
def orig_punct(char):
    cp = ord(char)
    return (
        33 <= cp <= 47
        or 58 <= cp <= 64
        or 91 <= cp <= 96
        or 123 <= cp <= 126
        or category(char).startswith("P")
    )


@_cache
def _orig_mn(char):
    return category(char) == "Mn"


@dataclasses.dataclass(frozen=True)
class Pipeline:
    """Parameters of a BERT-style tokenizer; the defaults are the original."""

    specials: tuple = ()  # literals cut out of the raw text and kept whole
    first_map: object = None  # whole-text lower-casing before cleaning (tf_text)
    drop: object = _orig_drop  # removed by cleaning
    space: object = _orig_space  # turned into " " by cleaning
    cjk: object = _orig_cjk  # surrounded by spaces
    nfc: bool = False  # NFC after cleaning (transformers legacy)
    split: object = str.split  # whitespace splitting
    context_lower: bool = True  # str.lower() on the whole token (final sigma)
    lower_char: object = str.lower  # per-character lower-casing otherwise
    is_mn: object = _orig_mn  # stripped after NFD when lower-casing
    punct: object = orig_punct
    max_chars: int = 200
    max_bytes: int = None


def _wordpiece(word, vocab, p):
    if len(word) > p.max_chars or (p.max_bytes and len(word.encode()) > p.max_bytes):
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while start < end:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
            end -= 1
        else:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


def _basic(text, p, lower):
    if lower and p.first_map is not None:
        text = p.first_map(text)
    out = []
    for char in text:
        if p.drop(char):
            continue
        if p.space(char):
            out.append(" ")
        elif p.cjk(ord(char)):
            out.append(f" {char} ")
        else:
            out.append(char)
    text = "".join(out)
    if p.nfc:
        text = unicodedata.normalize("NFC", text)
    pieces = []
    for token in p.split(text):
        if lower and p.first_map is None:
            if p.context_lower:
                token = token.lower()
            else:
                token = "".join(p.lower_char(c) for c in token)
            token = unicodedata.normalize("NFD", token)
            token = "".join(c for c in token if not p.is_mn(c))
        current = ""
        for char in token:
            if p.punct(char):
                pieces += [current, char]
                current = ""
            else:
                current += char
        pieces.append(current)
    if p.split is str.split:
        return " ".join(pieces).split()
    return [piece for piece in pieces if piece]


def simulate(text, vocab, lower, p=Pipeline()):
    """Tokenizes `text` step by step; `Pipeline()` is the original algorithm."""
    chunks = [text]
    if p.specials:
        chunks = re.split("(" + "|".join(map(re.escape, p.specials)) + ")", text)
    tokens = []
    for i, chunk in enumerate(chunks):
        if i % 2:  # a special-token literal
            tokens.append(chunk)
            continue
        for word in _basic(chunk, p, lower):
            tokens += _wordpiece(word, vocab, p)
    return tuple(tokens)
