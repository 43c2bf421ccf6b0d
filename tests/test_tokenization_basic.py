"""Unit tests for bert_tf.text.tokenization's BasicTokenizer against the original
BERT behaviour: cleaning, whitespace, CJK, case and punctuation.

Expected values come from the original tokenization.py (reference spec
section 6), reasoned step by step where noted. The other tokenization tests are
tests/test_tokenization.py.
"""

import collections
import unicodedata

import pytest

from bert_tf.text import tokenization

# ---------------------------------------------------------------------------
# BasicTokenizer: cleaning, whitespace, CJK, case, punctuation
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "char",
    [
        "\u200b",  # ZERO WIDTH SPACE (Cf)
        "\u200c",  # ZERO WIDTH NON-JOINER (Cf)
        "\u200d",  # ZERO WIDTH JOINER (Cf)
        "\ufeff",  # BOM / ZERO WIDTH NO-BREAK SPACE (Cf)
        "\u00ad",  # SOFT HYPHEN (Cf)
        "\u2060",  # WORD JOINER (Cf)
        "\u202e",  # RIGHT-TO-LEFT OVERRIDE (Cf)
        "\x00",  # NUL
        "\ufffd",  # REPLACEMENT CHARACTER (So, dropped explicitly)
        "\x05",  # Cc
        "\x7f",  # DEL (Cc)
        "\x85",  # NEXT LINE: Cc, so dropped, although str.split() treats it as space
        "\x0b",  # VERTICAL TAB: Cc, dropped
        "\x0c",  # FORM FEED: Cc, dropped
        "\x1f",  # UNIT SEPARATOR: Cc, dropped
    ],
)
@pytest.mark.parametrize("lower", [True, False])
def test_control_and_format_characters_are_dropped(char, lower):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=lower)
    assert tokenizer.tokenize(f"ab{char}cd") == ["abcd"]


@pytest.mark.parametrize(
    "char",
    [
        " ",
        "\t",
        "\n",
        "\r",
        "\u00a0",  # NO-BREAK SPACE (Zs)
        "\u2002",  # EN SPACE (Zs)
        "\u202f",  # NARROW NO-BREAK SPACE (Zs)
        "\u3000",  # IDEOGRAPHIC SPACE (Zs)
        "\u1680",  # OGHAM SPACE MARK (Zs)
        # LINE/PARAGRAPH SEPARATOR are Zl/Zp: not BERT whitespace and not
        # control, so _clean_text keeps them, but str.split() then splits on
        # them, so they separate words all the same.
        "\u2028",
        "\u2029",
    ],
)
def test_whitespace_characters_split_words(char):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"ab{char}cd") == ["ab", "cd"]


def test_tab_newline_return_are_whitespace_not_control():
    for char in "\t\n\r":
        assert tokenization._is_whitespace(char)
        assert not tokenization._is_control(char)
    assert tokenization._is_whitespace("\u3000")
    assert not tokenization._is_whitespace("\u2028")  # Zl, not Zs
    assert not tokenization._is_control("\u2028")


def test_is_control_is_exactly_cc_and_cf():
    # Co (private use), Cn (unassigned) and Cs are *not* control characters for
    # the original (transformers drops them; see the differential tests).
    assert not tokenization._is_control("\ue000")  # Co
    assert not tokenization._is_control("\u0378")  # Cn
    for cp in list(range(0x0, 0x3000)) + list(range(0xE0000, 0xE0080)):
        char = chr(cp)
        expected = unicodedata.category(char) in ("Cc", "Cf") and char not in "\t\n\r"
        assert tokenization._is_control(char) == expected, hex(cp)


def test_private_use_and_unassigned_are_kept():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize("a\ue000b \u0378") == ["a\ue000b", "\u0378"]


# The eight CJK ranges of the original, with their first and last code points;
# the neighbours just outside are listed with whether they are themselves CJK
# (adjacent ranges touch at 2B740 and 2B820).
CJK_RANGES = [
    (0x4E00, 0x9FFF),
    (0x3400, 0x4DBF),
    (0x20000, 0x2A6DF),
    (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F),
    (0x2B820, 0x2CEAF),
    (0xF900, 0xFAFF),
    (0x2F800, 0x2FA1F),
]
CJK_NEIGHBOURS = {
    0x4DFF: False,  # hexagram symbol
    0xA000: False,  # Yi syllable
    0x33FF: False,  # CJK compatibility square
    0x4DC0: False,  # hexagram symbol, right after Ext A
    0x1FFFF: False,
    0x2A6E0: False,
    0x2A6FF: False,
    0x2B740: True,  # start of the next range
    0x2B73F: True,
    0x2B820: True,
    0x2B81F: True,
    0x2CEB0: False,  # CJK Ext F: not in the original's list
    0xF8FF: False,  # private use
    0xFB00: False,  # LATIN SMALL LIGATURE FF
    0x2F7FF: False,
    0x2FA20: False,
    0x30000: False,  # CJK Ext G: not in the list
    0x2E80: False,  # CJK radicals supplement
    0x2F00: False,  # Kangxi radical
    0x3005: False,  # IDEOGRAPHIC ITERATION MARK (Lm)
}


@pytest.mark.parametrize("cp", [cp for rng in CJK_RANGES for cp in rng])
@pytest.mark.parametrize("lower", [True, False])
def test_cjk_range_boundaries_are_split(cp, lower):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=lower)
    char = chr(cp)
    expected = char
    if lower:
        # Lower-casing implies NFD; the compatibility ideographs F900-FAFF have
        # canonical (singleton) decompositions to unified ideographs.
        expected = unicodedata.normalize("NFD", char)
    assert tokenizer.tokenize(f"x{char}y") == ["x", expected, "y"]


@pytest.mark.parametrize("cp,is_cjk", sorted(CJK_NEIGHBOURS.items()))
def test_cjk_range_neighbours(cp, is_cjk):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    char = chr(cp)
    expected = ["x", char, "y"] if is_cjk else [f"x{char}y"]
    assert tokenizer.tokenize(f"x{char}y") == expected


def test_cjk_compatibility_ideograph_normalised_only_when_lowercasing():
    # U+F900 has the canonical decomposition U+8C48; NFD runs only as part of
    # accent stripping, i.e. only with do_lower_case=True.
    assert tokenization.BasicTokenizer(True).tokenize("\uf900") == ["\u8c48"]
    assert tokenization.BasicTokenizer(False).tokenize("\uf900") == ["\uf900"]


@pytest.mark.parametrize(
    "word",
    [
        "\ud55c\uad6d\uc5b4",  # Hangul syllables
        "\u3072\u3089\u304c\u306a",  # Hiragana
        "\u30ab\u30bf\u30ab\u30ca",  # Katakana
        "\u1100\u1161\u11a8",  # Hangul Jamo
    ],
)
def test_hangul_and_kana_are_not_split(word):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(word) == [word]
    # Ideographs glued to kana are split off, the kana run stays together.
    assert tokenizer.tokenize(f"{word}\u4e00{word}") == [word, "\u4e00", word]


def test_accents_stripped_only_when_lowercasing():
    lower = tokenization.BasicTokenizer(do_lower_case=True)
    cased = tokenization.BasicTokenizer(do_lower_case=False)
    assert lower.tokenize("H\u00e9llo \u00c4rger na\u00efve") == [
        "hello",
        "arger",
        "naive",
    ]
    assert cased.tokenize("H\u00e9llo \u00c4rger na\u00efve") == [
        "H\u00e9llo",
        "\u00c4rger",
        "na\u00efve",
    ]
    # Decomposed input: the combining mark (Mn) is dropped when lower-casing
    # and kept (not normalised, not split off) otherwise.
    assert lower.tokenize("He\u0301llo") == ["hello"]
    assert cased.tokenize("He\u0301llo") == ["He\u0301llo"]
    # Spacing marks (Mc) and enclosing marks (Me) are not stripped.
    assert lower.tokenize("a\u0903b") == ["a\u0903b"]
    assert lower.tokenize("a\u20ddb") == ["a\u20ddb"]


def test_lowercasing_details():
    lower = tokenization.BasicTokenizer(do_lower_case=True)
    # str.lower() then NFD then drop Mn. No case folding and no compatibility
    # normalisation: sharp s and ligatures survive.
    assert lower.tokenize("STRASSE Stra\u00dfe \ufb01x") == [
        "strasse",
        "stra\u00dfe",
        "\ufb01x",
    ]
    # "İ".lower() is "i" + U+0307 COMBINING DOT ABOVE, which is then stripped.
    assert lower.tokenize("\u0130stanbul") == ["istanbul"]
    # str.lower() applies the Greek final-sigma rule within the whitespace token.
    assert lower.tokenize("\u039f\u0394\u039f\u03a3") == ["\u03bf\u03b4\u03bf\u03c2"]
    # Case folding would give U+03BC; lower() keeps MICRO SIGN.
    assert lower.tokenize("\u00b5") == ["\u00b5"]


@pytest.mark.parametrize(
    "char",
    [
        "_",  # Pc (ASCII)
        "\u203f",  # UNDERTIE (Pc)
        "-",  # Pd
        "\u2010",  # HYPHEN (Pd)
        "\u2014",  # EM DASH (Pd)
        "(",  # Ps
        "\u300c",  # LEFT CORNER BRACKET (Ps)
        ")",  # Pe
        "\u300d",  # RIGHT CORNER BRACKET (Pe)
        "\u00ab",  # LEFT-POINTING DOUBLE ANGLE QUOTATION MARK (Pi)
        "\u2018",  # LEFT SINGLE QUOTATION MARK (Pi)
        "\u00bb",  # RIGHT-POINTING DOUBLE ANGLE QUOTATION MARK (Pf)
        "\u2019",  # RIGHT SINGLE QUOTATION MARK (Pf)
        "\u00bf",  # INVERTED QUESTION MARK (Po)
        "\u3002",  # IDEOGRAPHIC FULL STOP (Po)
        "'",  # Po
        # ASCII symbols that are not Unicode P*: split anyway.
        "$",  # Sc
        "+",  # Sm
        "<",  # Sm
        "=",  # Sm
        ">",  # Sm
        "^",  # Sk
        "`",  # Sk
        "|",  # Sm
        "~",  # Sm
    ],
)
def test_punctuation_is_split(char):
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"ab{char}cd") == ["ab", char, "cd"]
    assert tokenizer.tokenize(f"{char}{char}") == [char, char]


@pytest.mark.parametrize(
    "char", ["\u20ac", "\u00a9", "\u00b1", "\u00b4", "\u2190", "\U0001f600"]
)
def test_non_ascii_symbols_are_not_punctuation(char):
    # Unicode S* outside ASCII stays inside the word.
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(f"ab{char}cd") == [f"ab{char}cd"]


def test_is_punctuation_covers_every_p_category():
    ascii_punct = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
    seen = collections.Counter()
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        char = chr(cp)
        cat = unicodedata.category(char)
        expected = cat.startswith("P") or char in ascii_punct
        assert tokenization._is_punctuation(char) == expected, hex(cp)
        if expected:
            seen[cat] += 1
    assert {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sc", "Sm", "Sk"} <= set(seen)


def test_basic_tokenizer_accepts_bytes_and_empty():
    tokenizer = tokenization.BasicTokenizer()
    assert tokenizer.tokenize(b"Hello, W\xc3\xb6rld\xff!") == [
        "hello",
        ",",
        "world",
        "!",
    ]
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize(" \t\u3000\u200b\n") == []


def test_fast_path_matches_step_by_step_methods():
    # tokenize() uses fused translate tables; the step-by-step methods keep the
    # original structure. They must agree, including on final sigma next to
    # punctuation (the original lower-cases whole whitespace tokens, before
    # punctuation splitting, so "ΑΣ.Β" keeps a non-final sigma).
    def stepwise(tokenizer, text):
        text = tokenizer._clean_text(text)
        text = tokenizer._tokenize_chinese_chars(text)
        pieces = []
        for token in tokenization.whitespace_tokenize(text):
            if tokenizer.do_lower_case:
                token = tokenizer._run_strip_accents(token.lower())
            pieces.extend(tokenizer._run_split_on_punc(token))
        return tokenization.whitespace_tokenize(" ".join(pieces))

    texts = [
        "\u0391\u03a3.\u0392 \u039f\u03a3, \u03a3\u2028\u0391\u03a3\u200b",
        "  Hi!! [SEP]\tthere\u00a0\u4e00\u4e01x\u0301\u0130 \u2029 \ufeff ",
        "\u1e9e\u212a\u212b \uf900\u00c5\u0344",
    ]
    for lower in (True, False):
        tokenizer = tokenization.BasicTokenizer(do_lower_case=lower)
        for text in texts:
            assert tokenizer.tokenize(text) == stepwise(tokenizer, text), (lower, text)
    assert tokenization.BasicTokenizer(True).tokenize("\u0391\u03a3.\u0392") == [
        "\u03b1\u03c3",
        ".",
        "\u03b2",
    ]
