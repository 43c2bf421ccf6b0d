"""Unit tests for bert_tf.text.tokenization against the original BERT behaviour.

Expected values come from the original tokenization.py / tokenization_test.py
(reference spec section 6), reasoned step by step where noted. Tests that need
the released vocabularies read them from $BERT_TF_DATA and skip without it.
BasicTokenizer's cleaning, whitespace, CJK, case and punctuation rules are
tests/test_tokenization_basic.py.
"""

import collections
import os

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
