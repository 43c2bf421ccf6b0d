"""The vocabulary a MediaPipe file carries: ours, plus accented spellings.

MediaPipe's `BertPreprocessorCalculator` lower-cases ASCII only (its C++
`absl::AsciiStrToLower`), splits at ASCII whitespace, ASCII symbols, Unicode
punctuation (\\p{P}) and CJK ideographs, then runs the greedy longest-match
WordPiece of tensorflow-text on the words as they are. The uncased BERT
tokenizer lower-cases every letter and strips accents (NFD, marks dropped)
first, so "Génoise" is "gen ##oise" for BERT but [UNK] for MediaPipe.

WordPiece tries a word's prefixes longest first and keeps the first one in
the vocabulary. If the file's vocabulary holds a string exactly when its
normalisation (`normalize_character`, character by character) is one of our
entries, every prefix MediaPipe tries is found exactly when BERT finds its
normalised prefix: the segmentation is BERT's, and a constant table in the
graph (`remap`: line of the file -> our id) gives BERT's ids. A spelling the
file lacks only matters when it is the piece BERT picks (a longer piece is
never in the file, so a missing one makes MediaPipe take a shorter piece).

All spellings would be exponential in the accents per entry; the file holds
those of `SPELLINGS` (what they cover on STS-B, SST-2, the other GLUE sets
and SQuAD dev: benchmarks/mediapipe_latency.py, docs/guides/litert.md):

* one accented letter anywhere: Latin-1 lower case, Greek (with Greek
  Extended's polytonic letters) and Cyrillic, either case;
* a Latin-1 capital as a word's first letter ("École");
* every Latin-1 spelling of entries of up to 2 letters (the mojibake "Äô" of
  "’" read as Mac Roman);
* "é" twice ("fédération");
* non-ASCII punctuation and CJK compatibility ideographs that normalise to
  another entry of one character.

What no vocabulary can fix (tests/test_mediapipe_vocabulary.py checks each):
characters BERT deletes or splits at but MediaPipe keeps inside a word
(controls, format characters such as U+200B/U+FEFF, lone combining marks,
non-ASCII spaces such as U+00A0), characters that normalise to several
(Hangul syllables to jamo) or to punctuation (U+2260 "≠" to "="), a capital
sigma ending a word (BERT's "ς", here "σ"), and words over 100 bytes
(MediaPipe's [UNK]; BERT's limit is 200 characters).

Example:
>>> lines, remap = mediapipe_vocabulary("vocab.txt")
>>> remap[lines.index("École")] == remap[lines.index("ecole")]
True
"""

import itertools
import unicodedata

from bert_tf.text import tokenization

# MediaPipe looks these up by name, whatever the text (tokenization.py's
# special tokens are never produced from text by either tokenizer).
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[UNK]")
# Entries of at most this many characters (after "##") get every spelling.
SHORT_ENTRY = 2
_LATIN1 = range(0xC0, 0x100)
_ANYWHERE = (range(0x370, 0x530), range(0x1F00, 0x2000))
_TWICE = "é"


def normalize_character(char, strip_accents=True):
    """What the uncased BERT tokenizer makes of `char` inside a word: lower
    case, and with `strip_accents` NFD without non-spacing marks."""
    char = char.lower()
    if strip_accents:
        char = unicodedata.normalize("NFD", char)
        char = "".join(c for c in char if unicodedata.category(c) != "Mn")
    return char


def _is_own_token(char):
    # Both tokenizers make these a word of their own (MediaPipe's kDefault-
    # DelimRe: the ASCII symbols, \p{P}, the CJK blocks; BERT's
    # _is_punctuation and _is_chinese_char).
    return tokenization._is_punctuation(char) or tokenization._is_chinese_char(
        ord(char)
    )


def spellings(strip_accents=True):
    """{normalised character: [characters MediaPipe may see for it]}, each
    one letter (or own token) whose normalisation is one other character of
    the same kind, by `SPELLINGS` rule: "anywhere", "first", "short",
    "own"."""
    rules = {"anywhere": {}, "first": {}, "short": {}, "own": {}}
    blocks = list(_LATIN1) + [cp for block in _ANYWHERE for cp in block]
    own = [cp for cp in range(0x80, 0x30000) if _is_own_token(chr(cp))]
    for cp in blocks + own:
        char = chr(cp)
        target = normalize_character(char, strip_accents)
        if len(target) != 1 or target == char:
            continue
        if _is_own_token(char):
            if _is_own_token(target):
                rules["own"].setdefault(target, []).append(char)
            continue
        if not (char.isalpha() and target.isalpha()):
            continue
        latin1 = cp in _LATIN1
        if not latin1 or char.islower():
            rules["anywhere"].setdefault(target, []).append(char)
        else:
            rules["first"].setdefault(target, []).append(char)
        if latin1 or any(cp in block for block in _ANYWHERE):
            rules["short"].setdefault(target, []).append(char)
    return rules


SPELLINGS = ("anywhere", "first", "short", "twice", "own")


def mediapipe_vocabulary(vocab_file, strip_accents=True):
    """The file's vocabulary lines and each line's id in `vocab_file`.

    Args:
        vocab_file: our vocabulary (vocab.txt or tokenizer.json).
        strip_accents: whether the model's tokenizer strips accents (it
            always lower-cases: MediaPipe lower-cases ASCII).

    Returns: `(lines, remap)`: one entry a line, no empty or repeated line
    (MediaPipe skips empty lines, so its ids are line numbers here), and
    `remap[line]`, our id of that line's normalisation.
    """
    vocab = tokenization.load_vocab(vocab_file)
    for token in SPECIAL_TOKENS:
        if token not in vocab:
            raise ValueError(f"{vocab_file}: the vocabulary has no {token}")
    rules = spellings(strip_accents)
    ids = {}
    for token, index in vocab.items():
        # BERT's pieces are cut from normalised text: other entries are never
        # produced (and a raw "É" must give the id of "e", not of "É").
        normalized = "".join(normalize_character(c, strip_accents) for c in token)
        if token and normalized == token and token.isprintable() and " " not in token:
            ids[token] = index
    for token in SPECIAL_TOKENS:
        ids[token] = vocab[token]
    entries = list(ids.items())
    for token, index in entries:
        if token in SPECIAL_TOKENS:
            continue
        for spelling in _spellings_of(token, rules):
            ids.setdefault(spelling, index)
    return list(ids), list(ids.values())


def _spellings_of(token, rules):
    """The other spellings of one vocabulary entry (see the module doc)."""
    start = 2 if token.startswith("##") and len(token) > 2 else 0
    head, word = token[:start], token[start:]
    if len(word) == 1 and not start:
        yield from rules["own"].get(word, ())
    for position, char in enumerate(word):
        for other in rules["anywhere"].get(char, ()):
            yield head + word[:position] + other + word[position + 1 :]
    if not start:
        for other in rules["first"].get(word[0], ()):
            yield other + word[1:]
    if len(word) <= SHORT_ENTRY:
        choices = [[char, *rules["short"].get(char, ())] for char in word]
        for combination in itertools.product(*choices):
            yield head + "".join(combination)
    positions = [i for i, char in enumerate(word) if char in _TWICE_OF]
    for first, second in itertools.combinations(positions, 2):
        letters = list(word)
        letters[first] = _TWICE_OF[word[first]]
        letters[second] = _TWICE_OF[word[second]]
        yield head + "".join(letters)


# "e" -> "é" (with accent stripping; without, "é" is an entry of its own).
_TWICE_OF = {normalize_character(c): c for c in _TWICE if normalize_character(c) != c}
