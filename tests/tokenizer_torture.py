"""Deterministic generator of hard inputs for BERT tokenizers.

``generate_torture_strings(n, seed)`` returns ``n`` strings (n >= 5,000 is the
intended size) mixing real SQuAD sentences (when ``$BERT_TF_DATA`` points at the
shared data), accents and combining marks, all CJK ideograph ranges, Hangul and
Kana, control (Cc) and format (Cf) characters, every punctuation category,
Unicode whitespace (Zs, Zl, Zp), random code points from many scripts, literal
special tokens, case-mapping oddities and 100-250 character words. No string
contains a surrogate code point.

Used by the differential tokenizer tests and reusable for in-graph tokenizer
parity checks. The output depends only on (n, seed, the data directory's
content, Python's Unicode database version).
"""

import functools
import json
import os
import random
import re
import unicodedata

# Script / block ranges sampled for "random code points from many scripts".
SCRIPT_RANGES = {
    "latin1": (0x00C0, 0x00FF),
    "latin_ext": (0x0100, 0x024F),
    "ipa": (0x0250, 0x02AF),
    "greek": (0x0370, 0x03FF),
    "greek_ext": (0x1F00, 0x1FFF),
    "cyrillic": (0x0400, 0x04FF),
    "armenian": (0x0530, 0x058F),
    "hebrew": (0x0590, 0x05FF),
    "arabic": (0x0600, 0x06FF),
    "devanagari": (0x0900, 0x097F),
    "bengali": (0x0980, 0x09FF),
    "tamil": (0x0B80, 0x0BFF),
    "thai": (0x0E00, 0x0E7F),
    "tibetan": (0x0F00, 0x0FFF),
    "georgian": (0x10A0, 0x10FF),
    "hangul_jamo": (0x1100, 0x11FF),
    "ethiopic": (0x1200, 0x137F),
    "cherokee": (0x13A0, 0x13FF),
    "mongolian": (0x1800, 0x18AF),
    "latin_ext_add": (0x1E00, 0x1EFF),
    "letterlike": (0x2100, 0x214F),
    "math_ops": (0x2200, 0x22FF),
    "box_drawing": (0x2500, 0x257F),
    "cjk_symbols": (0x3000, 0x303F),
    "hiragana": (0x3040, 0x309F),
    "katakana": (0x30A0, 0x30FF),
    "hangul": (0xAC00, 0xD7A3),
    "private_use": (0xE000, 0xF8FF),
    "alphabetic_pres": (0xFB00, 0xFB4F),
    "arabic_pres": (0xFB50, 0xFDFF),
    "halfwidth_fullwidth": (0xFF00, 0xFFEF),
    "specials": (0xFFF0, 0xFFFF),
    "gothic": (0x10330, 0x1034F),
    "math_alnum": (0x1D400, 0x1D7FF),
    "emoji": (0x1F300, 0x1FAFF),
    "supp_private_use": (0xF0000, 0xF00FF),
    "unassigned_plane3_tail": (0x323B0, 0x3247F),
}

# The eight CJK ideograph ranges of BERT's _is_chinese_char.
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

PUNCT_CATEGORIES = ("Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po")

# Characters with case-mapping or normalisation quirks that tokenizers tend to
# disagree on: sharp s, Turkish dotted/dotless i, final sigma, ligatures,
# Kelvin/Angstrom/Ohm signs, characters whose lower() is several characters,
# titlecase digraphs, fullwidth letters, Cherokee (case folds to upper).
CASE_ODDITIES = (
    "ß",
    "ẞ",
    "İ",
    "ı",
    "Σ",
    "σ",
    "ς",
    "ﬁ",
    "ﬀ",
    "ﬃ",
    "\u212a",
    "\u212b",
    "\u2126",
    "ǅ",
    "ǈ",
    "Ǆ",
    "ŉ",
    "ǰ",
    "ΐ",
    "ᾈ",
    "ᾼ",
    "Ａ",
    "ｚ",
    "Ꭰ",
    "ꭰ",
    "ǲ",
    "µ",
    "ſ",
    "ͅ",
    "Ω",
    "ϐ",
    "ẚ",
)

SPECIAL_LITERALS = (
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "[UNK]",
    "[PAD]",
    "[unused1]",
    "[unused99]",
    "[cls]",
)

# Whitespace-like characters: Zs (incl. NBSP, ideographic space, narrow NBSP),
# the Zl/Zp separators, and ASCII controls that Python's str.split() treats as
# whitespace (\x0b, \x0c, \x1c-\x1f, \x85).
EXTRA_SPACES = ("\t", "\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1f", "\x85")

# Words that must be split (not [UNK]) by a 200-char WordPiece limit; all their
# pieces exist in both the uncased and cased vocabularies.
MATCHABLE_UNITS = ("ab", "the", "ing", "s", "a", "xyz", "ed")


@functools.lru_cache(maxsize=1)
def _category_pools():
    """Code points (surrogates excluded) grouped by Unicode general category."""
    pools = {}
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        cat = unicodedata.category(chr(cp))
        if cat in ("Cn", "Co") and cp > 0x3FFFF and cp not in (0xF0000, 0x10FFFD):
            continue  # keep pool sizes sane; a few high ones are enough
        pools.setdefault(cat, []).append(cp)
    return {cat: tuple(cps) for cat, cps in pools.items()}


def _chars(cat):
    return _category_pools()[cat]


def _range_char(rng, lo, hi):
    cp = rng.randint(lo, hi)
    if 0xD800 <= cp <= 0xDFFF:
        cp = 0xE000
    return chr(cp)


def _pick(rng, cat):
    return chr(rng.choice(_chars(cat)))


def _space(rng):
    roll = rng.random()
    if roll < 0.55:
        return " "
    if roll < 0.8:
        return _pick(rng, "Zs")
    if roll < 0.9:
        return rng.choice(("\u2028", "\u2029"))
    return rng.choice(EXTRA_SPACES)


def load_squad_sentences(data_dir=None):
    """Sentences of SQuAD v1.1 dev contexts ([] if the data is unavailable).

    Contexts are split after ".", "!" or "?" followed by whitespace, as in the
    fidelity figures of the reference spec.
    """
    data_dir = data_dir or os.environ.get("BERT_TF_DATA")
    if not data_dir:
        return []
    path = os.path.join(data_dir, "squad", "dev-v1.1.json")
    if not os.path.exists(path):
        return []
    return list(_squad_sentences_cached(path))


@functools.lru_cache(maxsize=4)
def _squad_sentences_cached(path):
    with open(path, encoding="utf-8") as f:
        dataset = json.load(f)["data"]
    sentences = []
    for article in dataset:
        for paragraph in article["paragraphs"]:
            for sentence in re.split(r"(?<=[.!?])\s+", paragraph["context"]):
                if sentence.strip():
                    sentences.append(sentence)
    return tuple(sentences)


def _word(rng, pool, lo=1, hi=12):
    return "".join(chr(rng.choice(pool)) for _ in range(rng.randint(lo, hi)))


def _join(rng, words):
    out = []
    for i, w in enumerate(words):
        if i:
            out.append(_space(rng) if rng.random() < 0.85 else "")
        out.append(w)
    return "".join(out)


def _english_word(rng):
    letters = "abcdefghijklmnopqrstuvwxyz"
    w = "".join(rng.choice(letters) for _ in range(rng.randint(1, 9)))
    return w.capitalize() if rng.random() < 0.3 else w


# ----------------------------------------------------------------------------
# Individual generators; each takes (rng, sentences) and returns one string.
# ----------------------------------------------------------------------------


def _gen_squad(rng, sentences):
    if sentences:
        return rng.choice(sentences)
    return _join(rng, [_english_word(rng) for _ in range(rng.randint(3, 20))]) + "."


def _insert_at_random(rng, text, pieces):
    text = list(text)
    for piece in pieces:
        text.insert(rng.randint(0, len(text)), piece)
    return "".join(text)


def _gen_squad_with_controls(rng, sentences):
    base = _gen_squad(rng, sentences)
    pieces = []
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        if roll < 0.35:
            pieces.append(_pick(rng, "Cf"))
        elif roll < 0.7:
            pieces.append(_pick(rng, "Cc"))
        elif roll < 0.8:
            pieces.append(rng.choice(("\x00", "\ufffd", "\u00ad", "\u200b", "\ufeff")))
        else:
            pieces.append(
                rng.choice(("\u200c", "\u200d", "\u2060", "\u202e", "\u061c"))
            )
    return _insert_at_random(rng, base, pieces)


def _gen_squad_with_spaces(rng, sentences):
    base = _gen_squad(rng, sentences)
    return re.sub(" ", lambda _: _space(rng), base)


def _gen_squad_upper(rng, sentences):
    base = _gen_squad(rng, sentences)
    roll = rng.random()
    if roll < 0.4:
        return base.upper()
    if roll < 0.7:
        return base.title()
    return base.swapcase()


def _gen_accents(rng, sentences):
    # Precomposed accented letters, decomposed (NFD) text and stray marks.
    words = []
    for _ in range(rng.randint(1, 8)):
        roll = rng.random()
        if roll < 0.3:
            words.append(_word(rng, range(0x00C0, 0x0250)))
        elif roll < 0.55:
            w = _word(rng, range(0x00C0, 0x0250))
            words.append(unicodedata.normalize("NFD", w))
        elif roll < 0.8:
            base = _english_word(rng)
            marks = [_pick(rng, "Mn") for _ in range(rng.randint(1, 3))]
            words.append(_insert_at_random(rng, base, marks))
        elif roll < 0.9:
            words.append(_pick(rng, "Mn") + _english_word(rng))  # leading mark
        else:
            words.append(_pick(rng, "Me") + _pick(rng, "Mc") + _english_word(rng))
    return _join(rng, words)


def _gen_cjk(rng, sentences):
    parts = []
    for _ in range(rng.randint(1, 10)):
        roll = rng.random()
        if roll < 0.45:
            lo, hi = rng.choice(CJK_RANGES)
            parts.append(_range_char(rng, lo, hi))
        elif roll < 0.55:
            lo, hi = rng.choice(CJK_RANGES)
            parts.append(chr(rng.choice((lo, hi, lo - 1, hi + 1))))  # boundaries
        elif roll < 0.65:
            parts.append(_word(rng, range(0xAC00, 0xD7A4), 1, 4))  # Hangul
        elif roll < 0.75:
            parts.append(_word(rng, range(0x3041, 0x3097), 1, 4))  # Hiragana
        elif roll < 0.85:
            parts.append(_word(rng, range(0x30A1, 0x30FB), 1, 4))  # Katakana
        elif roll < 0.92:
            parts.append(_english_word(rng))
        else:
            parts.append(
                rng.choice(("、", "。", "「", "」", "，", "・", "〜", " ", "\u3000"))
            )
    return "".join(parts)


def _gen_punctuation(rng, sentences):
    words = []
    for _ in range(rng.randint(1, 8)):
        roll = rng.random()
        punct = _pick(rng, rng.choice(PUNCT_CATEGORIES))
        ascii_sym = rng.choice("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
        if roll < 0.4:
            words.append(_english_word(rng) + punct + _english_word(rng))
        elif roll < 0.6:
            words.append(ascii_sym + _english_word(rng) + ascii_sym)
        elif roll < 0.8:
            words.append(punct * rng.randint(1, 3))
        else:
            # Symbols (S*) are not punctuation for BERT, except ASCII ones.
            words.append(
                _english_word(rng) + _pick(rng, rng.choice(("Sm", "Sc", "Sk", "So")))
            )
    return _join(rng, words)


def _gen_whitespace(rng, sentences):
    words = [_english_word(rng) for _ in range(rng.randint(0, 6))]
    out = [_space(rng) for _ in range(rng.randint(0, 2))]
    for w in words:
        out.append(w)
        out.extend(_space(rng) for _ in range(rng.randint(1, 3)))
    return "".join(out)


def _gen_random_script(rng, sentences):
    names = sorted(SCRIPT_RANGES)
    words = []
    for _ in range(rng.randint(1, 8)):
        lo, hi = SCRIPT_RANGES[rng.choice(names)]
        words.append(
            "".join(_range_char(rng, lo, hi) for _ in range(rng.randint(1, 8)))
        )
    return _join(rng, words)


def _gen_random_codepoints(rng, sentences):
    # Uniform over the BMP and the supplementary planes, surrogates excluded.
    chars = []
    for _ in range(rng.randint(1, 20)):
        if rng.random() < 0.7:
            chars.append(_range_char(rng, 0x20, 0xFFFF))
        else:
            chars.append(_range_char(rng, 0x10000, 0x10FFFF))
    return "".join(chars)


def _gen_category_soup(rng, sentences):
    cats = sorted(_category_pools())
    return "".join(_pick(rng, rng.choice(cats)) for _ in range(rng.randint(1, 15)))


def _gen_case_oddities(rng, sentences):
    words = []
    for _ in range(rng.randint(1, 6)):
        odd = rng.choice(CASE_ODDITIES)
        roll = rng.random()
        if roll < 0.3:
            words.append(odd)
        elif roll < 0.6:
            words.append(_english_word(rng).upper() + odd)
        elif roll < 0.8:
            words.append(odd + _english_word(rng))
        else:
            # Greek words, with capital sigma at the end or in the middle.
            words.append(rng.choice(("ΟΔΟΣ", "ΣΟΦΙΑ", "ΑΣ.Β", "ΟΔΟΣ'", "Σ", "ΌΣΟΣ")))
    return _join(rng, words)


def _gen_special_literals(rng, sentences):
    words = [_english_word(rng) for _ in range(rng.randint(0, 5))]
    for _ in range(rng.randint(1, 2)):
        lit = rng.choice(SPECIAL_LITERALS)
        if rng.random() < 0.3 and words:
            i = rng.randrange(len(words))
            words[i] = words[i] + lit  # glued to a word
        else:
            words.insert(rng.randint(0, len(words)), lit)
    return _join(rng, words)


def _gen_long_word(rng, sentences):
    length = rng.randint(100, 250)
    roll = rng.random()
    if roll < 0.45:
        unit = rng.choice(MATCHABLE_UNITS)
        word = (unit * (length // len(unit) + 1))[:length]
    elif roll < 0.6:
        word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(length))
    elif roll < 0.7:
        word = "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZ") for _ in range(length))
    elif roll < 0.8:
        word = ("é" * length)[:length]  # 2 UTF-8 bytes per character
    elif roll < 0.9:
        word = ("ab" * length)[: length - 1] + rng.choice("\u0301\u00e9X€")
    else:
        word = _word(rng, range(0x0430, 0x0450), length, length)  # Cyrillic
    if rng.random() < 0.5:
        return word
    return _join(rng, [_english_word(rng), word, _english_word(rng)])


def _gen_tiny(rng, sentences):
    roll = rng.random()
    if roll < 0.2:
        return ""
    if roll < 0.4:
        return _space(rng) * rng.randint(1, 3)
    cats = sorted(_category_pools())
    return _pick(rng, rng.choice(cats))


_GENERATORS = (
    (_gen_squad, 20),
    (_gen_squad_with_controls, 8),
    (_gen_squad_with_spaces, 6),
    (_gen_squad_upper, 5),
    (_gen_accents, 8),
    (_gen_cjk, 7),
    (_gen_punctuation, 7),
    (_gen_whitespace, 4),
    (_gen_random_script, 8),
    (_gen_random_codepoints, 6),
    (_gen_category_soup, 6),
    (_gen_case_oddities, 5),
    (_gen_special_literals, 3),
    (_gen_long_word, 6),
    (_gen_tiny, 1),
)


def _fixed_strings():
    """Strings always included: edge cases and one of every punctuation
    category, CJK boundary, whitespace and control character of interest."""
    fixed = ["", " ", "\t\n\r", "\u3000", "\u00a0", "\u202f", "\u2028", "\u2029"]
    fixed += [
        "a" + chr(cp) + "b" for cp in (0x00AD, 0x200B, 0x200D, 0xFEFF, 0x0000, 0xFFFD)
    ]
    fixed += [" \tHeLLo!how  \n Are yoU?  ", "H\u00e9llo", "ah\u535a\u63a8zz"]
    fixed += ["UNwant\u00e9d,running", "unwantedX", "unwanted running"]
    for lo, hi in CJK_RANGES:
        fixed += [f"x{chr(lo - 1)}{chr(lo)}{chr(hi)}{chr(hi + 1)}y"]
    for cat in PUNCT_CATEGORIES:
        fixed += [
            f"a{chr(cp)}b" for cp in _chars(cat)[:: max(1, len(_chars(cat)) // 8)]
        ]
    fixed += [f"a{c}b" for c in "$^`+<=>|~"]
    fixed += ["ab" * 50, "ab" * 50 + "a", "ab" * 100, "ab" * 100 + "a", "the" * 67]
    return fixed


def generate_torture_strings(n=6000, seed=0, data_dir=None):
    """Returns `n` deterministic test strings (see module docstring).

    `data_dir` defaults to $BERT_TF_DATA; without it the SQuAD share of the
    strings is replaced by synthetic English-like sentences.
    """
    rng = random.Random(seed)
    sentences = load_squad_sentences(data_dir)
    out = _fixed_strings()[:n]
    generators = [g for g, _ in _GENERATORS]
    weights = [w for _, w in _GENERATORS]
    while len(out) < n:
        gen = rng.choices(generators, weights)[0]
        text = gen(rng, sentences)
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
        out.append(text)
    return out


def documented_difference(char, lower):
    """Whether `char` is one the fast tokenizer is documented to treat
    differently from the original (docs/guides/litert.md): control, format,
    private-use, unassigned and line/paragraph-separator characters, and when
    lower-casing, characters whose compatibility decomposition or full case
    folding (ß -> ss, final sigma, ligatures, ´ °) differ from the original's
    lower() + NFD."""
    if unicodedata.category(char) in ("Cc", "Cf", "Co", "Cn", "Cs", "Zl", "Zp"):
        return True
    if not lower:
        return False
    return unicodedata.normalize("NFKD", char.casefold()) != unicodedata.normalize(
        "NFD", char.lower()
    )


if __name__ == "__main__":
    import collections
    import sys

    strings = generate_torture_strings(int(sys.argv[1]) if len(sys.argv) > 1 else 6000)
    cats = collections.Counter(unicodedata.category(c) for s in strings for c in s)
    print(len(strings), "strings;", sum(map(len, strings)), "chars")
    print(sorted(cats.items()))
