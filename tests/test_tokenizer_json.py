"""Directories that hold a tokenizer.json and no vocab.txt (what transformers 5
and sentence-transformers 6 save), with each tokenizer switch, against
`transformers.AutoTokenizer` loaded from the same directory."""

import json
import os
import unicodedata

import numpy as np
import pytest
import tensorflow as tf
from tokenizer_torture import generate_torture_strings

from bert_tf.errors import UserInputError
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import BertPreprocessor
from bert_tf.text.tokenizer_json import read_tokenizer_files

N_STRINGS = 3000
# Where transformers' Rust tokenizer departs from the original BERT tokenizer
# on every setting (tests/test_tokenization_differential.py models each one):
# words over 100 characters, special-token literals, private-use and
# unassigned code points, its CJK Extension E typo, the final sigma.
_SPECIAL_LITERALS = ("[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]")


def _known_quirk(text):
    if any(literal in text for literal in _SPECIAL_LITERALS):
        return True
    if any(len(word) > 100 for word in text.split()):
        return True
    for char in text:
        if unicodedata.category(char) in ("Co", "Cn") or char in "Σσς":
            return True
        if 0x2B820 <= ord(char) <= 0x2B91F:
            return True
    return False


@pytest.fixture(scope="module")
def strings(shared_data, tokenizer_dirs):
    """The torture strings without the known departures, and without the
    characters on which transformers' Unicode tables already disagree with
    the original under the original's own settings (uncased and cased):
    what is left tests the switches."""
    transformers = pytest.importorskip("transformers")
    raw = [
        s
        for s in generate_torture_strings(N_STRINGS, 0, data_dir=shared_data)
        if not _known_quirk(s)
    ]
    chars = sorted({c for s in raw for c in s})
    quirky = set()
    for name, lower in (("uncased", True), ("cased", False)):
        directory = tokenizer_dirs[name]
        reference = transformers.AutoTokenizer.from_pretrained(directory)
        vocab_file = os.path.join(directory, "tokenizer.json")
        ours = tokenization.FullTokenizer(vocab_file, lower)
        for c in chars:
            probe = f"a{c}b"
            if reference.tokenize(probe) != ours.tokenize(probe):
                quirky.add(c)
    return [s for s in raw if not quirky.intersection(s)]


def _save_tokenizer(directory, tokenizer):
    tokenizer.save_pretrained(directory)
    vocab = os.path.join(directory, "vocab.txt")
    if os.path.exists(vocab):
        os.remove(vocab)
    return directory


@pytest.fixture(scope="module")
def tokenizer_dirs(tmp_path_factory, minilm_dir, shared_data):
    """name -> a tokenizer.json-only directory saved by transformers."""
    transformers = pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("tokenizers")
    auto = transformers.AutoTokenizer.from_pretrained
    cased_vocab = os.path.join(shared_data, "vocab", "bert-base-cased", "vocab.txt")
    dirs = {
        "uncased": _save_tokenizer(root / "uncased", auto(minilm_dir)),
        "cased": _save_tokenizer(
            root / "cased",
            transformers.BertTokenizer(vocab=cased_vocab, do_lower_case=False),
        ),
        "lower_no_strip": _save_tokenizer(
            root / "lower_no_strip", auto(minilm_dir, strip_accents=False)
        ),
        "strip_no_lower": _save_tokenizer(
            root / "strip_no_lower",
            transformers.BertTokenizer(
                vocab=cased_vocab, do_lower_case=False, strip_accents=True
            ),
        ),
        "no_chinese": _save_tokenizer(
            root / "no_chinese", auto(minilm_dir, tokenize_chinese_chars=False)
        ),
    }
    return {name: str(path) for name, path in dirs.items()}


SETTINGS = {
    "uncased": (True, None, True),
    "cased": (False, None, True),
    "lower_no_strip": (True, False, True),
    "strip_no_lower": (False, True, True),
    "no_chinese": (True, None, False),
}


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_directory_settings_are_read(tokenizer_dirs, name):
    files = read_tokenizer_files(tokenizer_dirs[name])
    assert os.path.basename(files.vocab_file) == "tokenizer.json"
    lower, strip, chinese = SETTINGS[name]
    assert files.do_lower_case == lower
    assert files.strip_accents == strip
    assert files.tokenize_chinese_chars == chinese


@pytest.mark.parametrize("name", sorted(SETTINGS))
def test_tokens_equal_transformers_on_torture_strings(tokenizer_dirs, strings, name):
    """FullTokenizer (Python) and BertPreprocessor (in the graph) built from
    the directory give transformers' ids for every string."""
    transformers = pytest.importorskip("transformers")
    directory = tokenizer_dirs[name]
    reference = transformers.AutoTokenizer.from_pretrained(directory)
    files = read_tokenizer_files(directory)
    ours = tokenization.FullTokenizer(
        files.vocab_file, files.do_lower_case, **files.options()
    )
    expected = [reference(s, add_special_tokens=False)["input_ids"] for s in strings]
    python_ids = [ours.convert_tokens_to_ids(ours.tokenize(s)) for s in strings]
    wrong = [s for s, a, b in zip(strings, python_ids, expected, strict=True) if a != b]
    assert not wrong, f"{len(wrong)} of {len(strings)} differ, e.g. {wrong[:3]!r}"

    layer = BertPreprocessor(files.vocab_file, files.do_lower_case, 512)
    graph_ids = layer.tokenize(tf.constant(strings)).to_list()
    wrong = [s for s, a, b in zip(strings, graph_ids, expected, strict=True) if a != b]
    assert not wrong, f"{len(wrong)} of {len(strings)} differ, e.g. {wrong[:3]!r}"
    assert len(strings) > 0.5 * N_STRINGS


def test_settings_change_tokens(tokenizer_dirs):
    """The switches matter on these words (so the test above can fail)."""
    text = "Café 北京 naïve"
    tokens = {
        name: tokenization.FullTokenizer(
            read_tokenizer_files(d).vocab_file,
            read_tokenizer_files(d).do_lower_case,
        ).tokenize(text)
        for name, d in tokenizer_dirs.items()
    }
    assert tokens["uncased"] == ["cafe", "北", "京", "naive"]
    assert tokens["lower_no_strip"][0] != "cafe"  # the accent stays
    assert "##京" in tokens["no_chinese"]  # 北京 stays one word
    assert tokens["strip_no_lower"][:2] != tokens["cased"][:2]


def test_vocabulary_equals_vocab_txt(minilm_dir, tokenizer_dirs):
    json_vocab = tokenization.load_vocab(
        os.path.join(tokenizer_dirs["uncased"], "tokenizer.json")
    )
    assert json_vocab == tokenization.load_vocab(os.path.join(minilm_dir, "vocab.txt"))
    layer = BertPreprocessor(
        os.path.join(tokenizer_dirs["uncased"], "tokenizer.json"), True, 16
    )
    with open(os.path.join(minilm_dir, "vocab.txt"), "rb") as f:
        assert layer._require_vocabulary().split() == f.read().split()


def test_keras_file_keeps_the_settings(tokenizer_dirs, tmp_path):
    import keras

    directory = tokenizer_dirs["lower_no_strip"]
    files = read_tokenizer_files(directory)
    layer = BertPreprocessor(files.vocab_file, True, 16)
    inputs = keras.Input(shape=(), dtype="string")
    model = keras.Model(inputs, layer(inputs)["input_ids"])
    model.save(tmp_path / "m.keras")
    restored = keras.saving.load_model(tmp_path / "m.keras")
    texts = tf.constant(["Café naïve 北京"])
    np.testing.assert_array_equal(restored(texts), model(texts))
    assert restored.layers[-1].strip_accents is False


@pytest.mark.parametrize(
    "model_type, name",
    [("BPE", "a BPE tokenizer"), ("Unigram", "a Unigram tokenizer")],
)
def test_non_wordpiece_is_one_clear_line(tmp_path, model_type, name):
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps({"model": {"type": model_type, "vocab": {}}}))
    with pytest.raises(UserInputError, match=f"{path}: {name}; bert_tf reads"):
        read_tokenizer_files(tmp_path)
    with pytest.raises(UserInputError, match="WordPiece tokenizers only"):
        tokenization.load_vocab(path)
