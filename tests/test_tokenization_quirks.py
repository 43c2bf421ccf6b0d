"""The original tokenizer's behaviour for each quirk of the differential tests
(tests/test_tokenization_differential.py), on minimal examples.

Expected values are derived from the original algorithm (see comments), not
from our output.
"""

import unicodedata

import pytest
from original_tokenizer import category

from bert_tf.text import tokenization


def _full(tokens, text, lower=True):
    vocab = {t: i for i, t in enumerate(["[UNK]"] + tokens)}
    basic = tokenization.BasicTokenizer(do_lower_case=lower)
    wordpiece = tokenization.WordpieceTokenizer(vocab)
    return [p for w in basic.tokenize(text) for p in wordpiece.tokenize(w)]


def test_pin_wordpiece_limit_is_200_chars_not_100():
    # 101-200 characters: within max_input_chars_per_word=200, so the greedy
    # search runs ("ab" then "##ab" repeatedly); transformers says [UNK].
    assert _full(["ab", "##ab"], "ab" * 60) == ["ab"] + ["##ab"] * 59
    # tf_text counts UTF-8 bytes (100); the original counts code points: 60
    # "é" are 120 bytes but only 60 characters.
    assert (
        _full(["\u00e9", "##\u00e9"], "\u00e9" * 60, lower=False)
        == ["\u00e9"] + ["##\u00e9"] * 59
    )


def test_pin_special_token_literals_are_split():
    # "[" and "]" are ASCII punctuation (91, 93): the original has no notion
    # of special tokens in text, "[SEP]" is three tokens and lower-cased.
    vocab = ["[", "]", "sep", "SEP", "a", "b"]
    assert _full(vocab, "a[SEP]b") == ["a", "[", "sep", "]", "b"]
    assert _full(vocab, "[SEP]", lower=False) == ["[", "SEP", "]"]


def test_pin_private_use_and_unassigned_are_kept():
    # Co and Cn are neither control (only Cc/Cf) nor whitespace nor
    # punctuation, so they stay inside the word; no vocab piece contains them,
    # so the whole word becomes [UNK].
    vocab = ["a", "##b", "b"]
    assert _full(vocab, "a\ue000b") == ["[UNK]"]  # Co
    assert _full(vocab, "a\U000f0000b") == ["[UNK]"]  # Co, plane 15
    assert _full(vocab, "a\u0378b") == ["[UNK]"]  # Cn
    assert _full(vocab, "a\ue000 b") == ["[UNK]", "b"]


def test_pin_cjk_extension_e_start_is_split():
    # 0x2B820-0x2CEAF is one of the original's eight ranges (transformers'
    # Rust code starts it at 0x2B920).
    assert _full(["a", "b"], "a\U0002b820b") == ["a", "[UNK]", "b"]
    assert _full(["a", "b", "\U0002b91f"], "a\U0002b91fb") == ["a", "\U0002b91f", "b"]


def test_pin_final_sigma():
    # str.lower() on the whole whitespace token applies the final-sigma rule:
    # capital sigma after a cased letter and not before one becomes U+03C2.
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    assert basic.tokenize("\u039f\u0394\u039f\u03a3") == ["\u03bf\u03b4\u03bf\u03c2"]
    assert basic.tokenize("\u03a3") == ["\u03c3"]  # nothing cased before it
    # Lower-casing happens before punctuation splitting, and "." is
    # case-ignorable, so a cased letter after it still counts.
    assert basic.tokenize("\u0391\u03a3.\u0392") == ["\u03b1\u03c3", ".", "\u03b2"]
    assert basic.tokenize("\u0391\u03a3,") == ["\u03b1\u03c2", ","]


def test_pin_no_nfc_when_cased():
    # With do_lower_case=False the original does no normalisation at all:
    # "e" + U+0301 stays two code points (the mark is not punctuation), and a
    # CJK compatibility ideograph is not mapped to its unified equivalent.
    vocab = ["e", "##\u0301", "\u00e9"]
    assert _full(vocab, "e\u0301", lower=False) == ["e", "##\u0301"]
    assert _full(["\uf900", "\u8c48"], "\uf900", lower=False) == ["\uf900"]


def test_pin_controls_are_deleted_not_spaces():
    # _clean_text drops Cc/Cf (and NUL), joining the neighbours into one word.
    vocab = ["ab", "a", "b"]
    for char in ("\u200b", "\u00ad", "\ufeff", "\x00", "\x01", "\u2060"):
        assert _full(vocab, f"a{char}b", lower=False) == ["ab"], repr(char)


def test_pin_replacement_character_is_deleted():
    assert _full(["ab"], "a\ufffdb") == ["ab"]
    assert _full(["ab"], "\ufffd") == []


def test_pin_unicode_whitespace_splits():
    # Zs is whitespace for _clean_text; Zl/Zp survive cleaning but
    # whitespace_tokenize's str.split() splits on them.
    for char in ("\u00a0", "\u3000", "\u202f", "\u2007", "\u2028", "\u2029"):
        assert _full(["a", "b"], f"a{char}b") == ["a", "b"], repr(char)


def test_pin_lowercasing_is_lower_not_casefold():
    # str.lower() + NFD + drop Mn; no case folding and no NFKC:
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    assert basic.tokenize("STRA\u00dfE") == ["stra\u00dfe"]  # ß is not "ss"
    assert basic.tokenize("\ufb01") == ["\ufb01"]  # ligature kept
    assert basic.tokenize("x\u00b2") == ["x\u00b2"]  # superscript kept
    assert basic.tokenize("\u00aa") == ["\u00aa"]  # ordinal indicator kept
    assert basic.tokenize("\u2f00") == ["\u2f00"]  # Kangxi radical: not CJK
    # Soft hyphen is Cf, so it is removed by cleaning anyway.
    assert basic.tokenize("a\u00adb") == ["ab"]


@pytest.mark.skipif(
    tuple(map(int, unicodedata.unidata_version.split("."))) < (14, 0, 0),
    reason="needs Python's unicodedata at Unicode 14 or later",
)
def test_pin_unicode_14_characters():
    # The original relies on Python's unicodedata (14.0.0 on Python 3.11); the
    # Rust tokenizers tables predate these characters.
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    assert category("\u2e5a") == "Pe"
    assert basic.tokenize("a\u2e5ab") == ["a", "\u2e5a", "b"]  # punctuation
    assert category("\u0890") == "Cf"
    assert basic.tokenize("a\u0890b") == ["ab"]  # format char: deleted
    assert category("\u0898") == "Mn"
    assert basic.tokenize("a\u0898b") == ["ab"]  # mark: stripped when lowering
    assert tokenization.BasicTokenizer(False).tokenize("a\u0898b") == ["a\u0898b"]
