"""Unit tests for bert_tf.text.tokenization against the original BERT behaviour.

Expected values come from the original tokenization.py / tokenization_test.py
(reference spec section 6), reasoned step by step where noted. Tests that need
the released vocabularies read them from $BERT_TF_DATA and skip without it.
"""

import collections
import os
import unicodedata

import pytest

from bert_tf.cli.command import one_line
from bert_tf.text import tokenization

# The vocabulary of the original tokenization_test.py.
TEST_VOCAB = [
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "want",
    "##want",
    "##ed",
    "wa",
    "un",
    "runn",
    "##ing",
    ",",
]


def _write_vocab(tmp_path, tokens, name="vocab.txt"):
    path = tmp_path / name
    path.write_text("".join(t + "\n" for t in tokens), encoding="utf-8")
    return str(path)


def _data_file(*parts):
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        pytest.skip("BERT_TF_DATA is not set (needs the shared data directory)")
    path = os.path.join(data, *parts)
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="module")
def uncased_vocab_file():
    return _data_file("vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def cased_vocab_file():
    return _data_file("vocab", "bert-base-cased", "vocab.txt")


def _wordpiece(tokens, **kwargs):
    vocab = {t: i for i, t in enumerate(tokens)}
    return tokenization.WordpieceTokenizer(vocab=vocab, **kwargs)


# ---------------------------------------------------------------------------
# The cases of the original tokenization_test.py
# ---------------------------------------------------------------------------


def test_full_tokenizer_original_case(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, TEST_VOCAB))
    tokens = tokenizer.tokenize("UNwant\u00e9d,running")
    assert tokens == ["un", "##want", "##ed", ",", "runn", "##ing"]
    assert tokenizer.convert_tokens_to_ids(tokens) == [7, 4, 5, 10, 8, 9]
    assert tokenizer.convert_ids_to_tokens([7, 4, 5, 10, 8, 9]) == tokens


def test_chinese_characters_are_split():
    tokenizer = tokenization.BasicTokenizer()
    assert tokenizer.tokenize("ah\u535a\u63a8zz") == ["ah", "\u535a", "\u63a8", "zz"]


def test_basic_tokenizer_lower():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=True)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "hello",
        "!",
        "how",
        "are",
        "you",
        "?",
    ]
    assert tokenizer.tokenize("H\u00e9llo") == ["hello"]


def test_basic_tokenizer_no_lower():
    tokenizer = tokenization.BasicTokenizer(do_lower_case=False)
    assert tokenizer.tokenize(" \tHeLLo!how  \n Are yoU?  ") == [
        "HeLLo",
        "!",
        "how",
        "Are",
        "yoU",
        "?",
    ]


def test_wordpiece_tokenizer_original_cases():
    tokenizer = _wordpiece(TEST_VOCAB[:-1])
    assert tokenizer.tokenize("") == []
    assert tokenizer.tokenize("unwanted running") == [
        "un",
        "##want",
        "##ed",
        "runn",
        "##ing",
    ]
    # "X" matches nothing, so the whole word (not just "X") becomes [UNK].
    assert tokenizer.tokenize("unwantedX running") == ["[UNK]", "runn", "##ing"]
    assert tokenizer.tokenize("unwantedX") == ["[UNK]"]


def test_convert_tokens_to_ids_module_functions():
    vocab = {token: i for i, token in enumerate(TEST_VOCAB[:-1])}
    tokens = ["un", "##want", "##ed", "runn", "##ing"]
    assert tokenization.convert_tokens_to_ids(vocab, tokens) == [7, 4, 5, 8, 9]
    inv = {i: t for t, i in vocab.items()}
    assert tokenization.convert_ids_to_tokens(inv, [7, 4, 5, 8, 9]) == tokens
    assert tokenization.convert_by_vocab(vocab, []) == []


def test_convert_tokens_to_ids_has_no_unk_fallback(tmp_path):
    tokenizer = tokenization.FullTokenizer(_write_vocab(tmp_path, TEST_VOCAB))
    with pytest.raises(KeyError):
        tokenizer.convert_tokens_to_ids(["un", "notinvocab"])
    with pytest.raises(KeyError):
        tokenizer.convert_ids_to_tokens([len(TEST_VOCAB)])


def test_is_whitespace_original_cases():
    for char in (" ", "\t", "\r", "\n", "\u00a0"):
        assert tokenization._is_whitespace(char), repr(char)
    for char in ("A", "-"):
        assert not tokenization._is_whitespace(char), repr(char)


def test_is_control_original_cases():
    assert tokenization._is_control("\u0005")
    for char in ("A", " ", "\t", "\r", "\U0001f4a9"):
        assert not tokenization._is_control(char), repr(char)


def test_is_punctuation_original_cases():
    for char in ("-", "$", "`", "."):
        assert tokenization._is_punctuation(char), repr(char)
    for char in ("A", " "):
        assert not tokenization._is_punctuation(char), repr(char)


# ---------------------------------------------------------------------------
# WordPiece details
# ---------------------------------------------------------------------------


def test_wordpiece_200_char_limit():
    tokenizer = _wordpiece(["[UNK]", "ab", "##ab", "##a"])
    # 200 characters: within the limit, so greedily split into pieces.
    assert tokenizer.tokenize("ab" * 100) == ["ab"] + ["##ab"] * 99
    # 201 characters: over the limit, a single [UNK] without even trying.
    assert tokenizer.tokenize("ab" * 100 + "a") == ["[UNK]"]
    # 101-200 is where transformers (limit 100) differs from the original.
    assert tokenizer.tokenize("ab" * 60) == ["ab"] + ["##ab"] * 59


def test_wordpiece_limit_counts_code_points_not_bytes():
    tokenizer = _wordpiece(["[UNK]", "\u00e9", "##\u00e9"])
    # 200 "é" are 400 UTF-8 bytes but 200 code points: still split.
    assert tokenizer.tokenize("\u00e9" * 200) == ["\u00e9"] + ["##\u00e9"] * 199
    assert tokenizer.tokenize("\u00e9" * 201) == ["[UNK]"]


def test_wordpiece_custom_limit_and_unk():
    tokenizer = _wordpiece(["a", "##a"], unk_token="<unk>", max_input_chars_per_word=3)
    assert tokenizer.tokenize("aaa aaaa b") == ["a", "##a", "##a", "<unk>", "<unk>"]


def test_wordpiece_greedy_longest_match_first():
    # Greedy from the left: "abc" is taken even though "ab" + "##cd" would
    # cover the word; then "##d" is missing, so the whole word is [UNK].
    tokenizer = _wordpiece(["[UNK]", "ab", "abc", "##cd"])
    assert tokenizer.tokenize("abcd") == ["[UNK]"]
    tokenizer = _wordpiece(["[UNK]", "ab", "abc", "##cd", "##d"])
    assert tokenizer.tokenize("abcd") == ["abc", "##d"]


def test_wordpiece_sees_vocab_changes():
    vocab = {"[UNK]": 0, "a": 1}
    tokenizer = tokenization.WordpieceTokenizer(vocab)
    assert tokenizer.tokenize("abcdef") == ["[UNK]"]
    vocab["##bcdef"] = 2  # longer than any entry seen before
    assert tokenizer.tokenize("abcdef") == ["a", "##bcdef"]


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


# ---------------------------------------------------------------------------
# Vocabulary loading
# ---------------------------------------------------------------------------


def test_load_vocab_small(tmp_path):
    path = _write_vocab(tmp_path, ["[PAD]", "[UNK]", "hello", "##lo"])
    vocab = tokenization.load_vocab(path)
    assert isinstance(vocab, collections.OrderedDict)
    assert list(vocab.items()) == [
        ("[PAD]", 0),
        ("[UNK]", 1),
        ("hello", 2),
        ("##lo", 3),
    ]


def test_load_vocab_line_semantics(tmp_path):
    path = tmp_path / "vocab.txt"
    # Lines are stripped; a blank line still takes an index (token ""); a
    # repeated token keeps its last index; "\r" is dropped (tf.gfile.GFile
    # removes every carriage return, so "b\rc" reads as "bc"); the last line
    # needs no trailing newline; a UTF-8 BOM is not whitespace and is kept.
    path.write_bytes(b"  a \r\nb\rc\n\nd\na\n\xef\xbb\xbfz\n\xc3\xa9\t\nlast")
    vocab = tokenization.load_vocab(str(path))
    assert list(vocab.items()) == [
        ("a", 4),
        ("bc", 1),
        ("", 2),
        ("d", 3),
        ("\ufeffz", 5),
        ("\u00e9", 6),
        ("last", 7),
    ]


def test_load_vocab_trailing_newline_and_empty_file(tmp_path):
    path = tmp_path / "v.txt"
    path.write_bytes(b"x\ny\n")
    assert list(tokenization.load_vocab(str(path)).items()) == [("x", 0), ("y", 1)]
    path.write_bytes(b"")
    assert tokenization.load_vocab(str(path)) == {}
    # A final line consisting only of "\r" reads as EOF through tf.gfile.
    path.write_bytes(b"x\n\r")
    assert list(tokenization.load_vocab(str(path)).items()) == [("x", 0)]


def test_load_vocab_accepts_pathlike(tmp_path):
    path = tmp_path / "v.txt"
    path.write_text("a\nb\n", encoding="utf-8")
    assert list(tokenization.load_vocab(path)) == ["a", "b"]


def test_missing_vocab_file_error_names_path(tmp_path):
    missing = str(tmp_path / "no_such_dir" / "vocab.txt")
    with pytest.raises(FileNotFoundError, match="no_such_dir"):
        tokenization.load_vocab(missing)
    with pytest.raises(FileNotFoundError) as info:
        tokenization.FullTokenizer(missing)
    assert missing in str(info.value)


@pytest.mark.slow
def test_load_vocab_remote_path_goes_through_gfile():
    # The original read vocabularies with tf.gfile, so "gs://..." paths work;
    # TF's in-memory "ram://" file system exercises the same code path.
    tf = pytest.importorskip("tensorflow")
    path = "ram://bert_tf_test_vocab/vocab.txt"
    with tf.io.gfile.GFile(path, "wb") as f:
        f.write(b"[UNK]\r\nhello\n##lo")
    assert list(tokenization.load_vocab(path).items()) == [
        ("[UNK]", 0),
        ("hello", 1),
        ("##lo", 2),
    ]
    missing = "ram://bert_tf_test_vocab/missing.txt"
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        tokenization.load_vocab(missing)


def test_undecodable_vocab_line_names_file_and_line(tmp_path):
    path = tmp_path / "bad_vocab.txt"
    path.write_bytes(b"ok\nfine\n\xff\xfe\n")
    with pytest.raises(UnicodeDecodeError) as info:
        tokenization.load_vocab(str(path))
    message = str(info.value)
    assert "bad_vocab.txt" in message and "line 3" in message


def test_full_tokenizer_attributes(tmp_path):
    path = _write_vocab(tmp_path, TEST_VOCAB)
    tokenizer = tokenization.FullTokenizer(vocab_file=path, do_lower_case=False)
    assert tokenizer.vocab_file == path
    assert tokenizer.do_lower_case is False
    assert tokenizer.basic_tokenizer.do_lower_case is False
    assert tokenizer.vocab["want"] == 3
    assert tokenizer.inv_vocab[3] == "want"
    assert tokenizer.wordpiece_tokenizer.vocab is tokenizer.vocab
    assert tokenizer.wordpiece_tokenizer.max_input_chars_per_word == 200
    # Without lower-casing "UNwant" matches nothing in this vocabulary.
    assert tokenizer.tokenize("UNwanted,") == ["[UNK]", ","]
    assert tokenizer.tokenize(b"unwanted") == ["un", "##want", "##ed"]


# ---------------------------------------------------------------------------
# Other helpers
# ---------------------------------------------------------------------------


def test_convert_to_unicode_and_printable_text():
    for fn in (tokenization.convert_to_unicode, tokenization.printable_text):
        assert fn("h\u00e9") == "h\u00e9"
        assert fn("h\u00e9".encode()) == "h\u00e9"
        assert fn(b"a\xffb") == "ab"  # invalid bytes are ignored
        with pytest.raises(ValueError, match="Unsupported string type"):
            fn(3)


def test_whitespace_tokenize():
    assert tokenization.whitespace_tokenize("") == []
    assert tokenization.whitespace_tokenize(" \t\n ") == []
    assert tokenization.whitespace_tokenize(" a  b\tc\n") == ["a", "b", "c"]


@pytest.mark.parametrize(
    "len_a,len_b,max_length,expected",
    [
        (5, 3, 6, (3, 3)),  # pop from A while it is longer
        (3, 3, 5, (3, 2)),  # tie: B loses the token
        (3, 3, 4, (2, 2)),
        (2, 7, 5, (2, 3)),
        (4, 1, 9, (4, 1)),  # already short enough: untouched
        (0, 4, 2, (0, 2)),
    ],
)
def test_truncate_seq_pair(len_a, len_b, max_length, expected):
    tokens_a = [f"a{i}" for i in range(len_a)]
    tokens_b = [f"b{i}" for i in range(len_b)]
    result = tokenization.truncate_seq_pair(tokens_a, tokens_b, max_length)
    assert result is None  # in place, like the original
    assert (len(tokens_a), len(tokens_b)) == expected
    # Tokens are removed from the end.
    assert tokens_a == [f"a{i}" for i in range(expected[0])]
    assert tokens_b == [f"b{i}" for i in range(expected[1])]


# ---------------------------------------------------------------------------
# validate_case_matches_checkpoint
# ---------------------------------------------------------------------------

LOWER_MODELS = [
    "uncased_L-24_H-1024_A-16",
    "uncased_L-12_H-768_A-12",
    "multilingual_L-12_H-768_A-12",
    "chinese_L-12_H-768_A-12",
]
CASED_MODELS = [
    "cased_L-12_H-768_A-12",
    "cased_L-24_H-1024_A-16",
    "multi_cased_L-12_H-768_A-12",
]


@pytest.mark.parametrize("name", LOWER_MODELS)
def test_validate_case_uncased_models(name):
    ckpt = f"/models/{name}/bert_model.ckpt"
    tokenization.validate_case_matches_checkpoint(True, ckpt)
    with pytest.raises(ValueError) as info:
        tokenization.validate_case_matches_checkpoint(False, ckpt)
    message = str(info.value)
    assert "`do_lower_case=False`" in message
    assert f"`{name}` seems to be a lowercased model" in message
    assert "`do_lower_case=True`" in message
    assert ckpt in message
    # The command-line tools print the original's message, naming the flags.
    assert one_line(info.value).startswith(
        f"You passed in `--do_lower_case=False` with `--init_checkpoint={ckpt}`."
    )
    assert "pass in `--do_lower_case=True`" in one_line(info.value)


@pytest.mark.parametrize("name", CASED_MODELS)
def test_validate_case_cased_models(name):
    ckpt = f"gs://bucket/{name}/bert_model.ckpt"
    tokenization.validate_case_matches_checkpoint(False, ckpt)
    with pytest.raises(ValueError, match=f"`{name}` seems to be a cased model"):
        tokenization.validate_case_matches_checkpoint(True, ckpt)


@pytest.mark.parametrize(
    "ckpt",
    [
        "",
        None,
        "/models/wwm_uncased_L-24_H-1024_A-16/bert_model.ckpt",
        "/models/wwm_cased_L-24_H-1024_A-16/bert_model.ckpt",
        "/models/uncased_L-2_H-128_A-2/bert_model.ckpt",  # 2020 small BERT
        "/models/uncased_L-12_H-768_A-12/model.ckpt-1000",  # no bert_model.ckpt
        "/models/my_uncased_L-12_H-768_A-12/bert_model.ckpt",
    ],
)
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_validate_case_silent_for_unknown_names(ckpt, do_lower_case):
    tokenization.validate_case_matches_checkpoint(do_lower_case, ckpt)


def test_validate_case_regex_quirks():
    # "^.*?" may match the empty string: a bare relative path is recognised.
    with pytest.raises(ValueError):
        tokenization.validate_case_matches_checkpoint(
            False, "uncased_L-12_H-768_A-12/bert_model.ckpt"
        )
    # The name is the longest run of [A-Za-z0-9_-] right before
    # "/bert_model.ckpt", so a dot in the directory name cuts it ...
    with pytest.raises(ValueError):
        tokenization.validate_case_matches_checkpoint(
            False, "/m/v1.uncased_L-12_H-768_A-12/bert_model.ckpt"
        )
    # ... the "." of ".ckpt" is a regex wildcard, and anything may follow.
    with pytest.raises(ValueError):
        tokenization.validate_case_matches_checkpoint(
            True, "/m/cased_L-12_H-768_A-12/bert_model_ckpt.index"
        )


# ---------------------------------------------------------------------------
# Real vocabularies
# ---------------------------------------------------------------------------


def test_real_uncased_vocab(uncased_vocab_file):
    tokenizer = tokenization.FullTokenizer(uncased_vocab_file, do_lower_case=True)
    vocab = tokenizer.vocab
    assert len(vocab) == 30522
    assert [vocab[t] for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")] == [
        0,
        100,
        101,
        102,
        103,
    ]
    assert tokenizer.tokenize("Hello, World!") == ["hello", ",", "world", "!"]
    # Every piece of the original test sentence is in the real vocabulary.
    tokens = tokenizer.tokenize("UNwant\u00e9d,running")
    assert (
        "".join(t[2:] if t.startswith("##") else t for t in tokens)
        == "unwanted,running"
    )
    assert "[UNK]" not in tokens


def test_real_cased_vocab(cased_vocab_file):
    tokenizer = tokenization.FullTokenizer(cased_vocab_file, do_lower_case=False)
    assert len(tokenizer.vocab) == 28996
    assert tokenizer.vocab["[UNK]"] == 100
    assert tokenizer.tokenize("Hello, World!") == ["Hello", ",", "World", "!"]


@pytest.mark.parametrize("length", [101, 150, 200])
def test_real_vocab_long_words_are_split(uncased_vocab_file, length):
    tokenizer = tokenization.FullTokenizer(uncased_vocab_file)
    word = ("abc" * 100)[:length]
    pieces = tokenizer.tokenize(word)
    assert "[UNK]" not in pieces and len(pieces) > 1
    assert "".join(p[2:] if p.startswith("##") else p for p in pieces) == word
    assert tokenizer.tokenize(word + "x" * (201 - length)) == ["[UNK]"]


def test_squad_throughput_smoke():
    # Not a benchmark: catches accidental quadratic behaviour.
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        pytest.skip("BERT_TF_DATA is not set")
    from tokenizer_torture import load_squad_sentences

    sentences = load_squad_sentences(data)
    assert len(sentences) > 10000
    tokenizer = tokenization.FullTokenizer(
        os.path.join(data, "vocab", "bert-base-uncased", "vocab.txt")
    )
    for sentence in sentences[:3000]:
        tokenizer.tokenize(sentence)


# ---------------------------------------------------------------------------
# validate_case_matches_vocab: the casing read from the vocabulary itself
# ---------------------------------------------------------------------------


def test_cased_vocab_with_lower_casing_is_refused(cased_vocab_file):
    vocab = tokenization.load_vocab(cased_vocab_file)
    tokenization.validate_case_matches_vocab(False, vocab, cased_vocab_file)
    with pytest.raises(ValueError) as info:
        tokenization.validate_case_matches_vocab(True, vocab, cased_vocab_file)
    message = str(info.value)
    assert cased_vocab_file in message and "pass do_lower_case=false" in message
    assert one_line(info.value).startswith(
        f"--do_lower_case=true with --vocab_file={cased_vocab_file}"
    )
    # What the check prevents: lower-cased, a capitalised word loses its entry.
    lowered = tokenization.FullTokenizer(cased_vocab_file, do_lower_case=True)
    assert "Paris" in vocab and lowered.tokenize("Paris") != ["Paris"]


def test_uncased_vocab_without_lower_casing_is_refused(uncased_vocab_file):
    vocab = tokenization.load_vocab(uncased_vocab_file)
    tokenization.validate_case_matches_vocab(True, vocab, uncased_vocab_file)
    with pytest.raises(ValueError, match="pass do_lower_case=true") as info:
        tokenization.validate_case_matches_vocab(False, vocab, uncased_vocab_file)
    assert uncased_vocab_file in str(info.value)
    cased = tokenization.FullTokenizer(uncased_vocab_file, do_lower_case=False)
    assert cased.tokenize("Paris") == ["[UNK]"]


def test_small_vocab_is_not_judged():
    vocab = {t: i for i, t in enumerate(["[UNK]", "Hello", "World", "hello"])}
    tokenization.validate_case_matches_vocab(True, vocab, "small.txt")
    tokenization.validate_case_matches_vocab(False, vocab, "small.txt")
