"""The MediaPipe file's vocabulary makes MediaPipe's tokenizer give BERT's ids.

MediaPipe's tokenizer (mediapipe/calculators/tensor/
bert_preprocessor_calculator.cc and tasks/cc/text/tokenizers/bert_tokenizer.cc)
is written out here from its C++: ASCII lower-casing, a split at ASCII
whitespace, the ASCII symbols, \\p{P} and the CJK blocks, and tensorflow-text's
greedy WordPiece with its 100-byte word limit, over the file's vocabulary
lines. The reference is the original `FullTokenizer` (uncased) on our
vocabulary. tests/test_mediapipe_export.py checks the same with MediaPipe's
own runtime.
"""

import os

import pytest
from mediapipe_models import sst2
from mediapipe_models import stsb_sentences

from bert_tf.serving.mediapipe_vocabulary import SPECIAL_TOKENS
from bert_tf.serving.mediapipe_vocabulary import mediapipe_vocabulary
from bert_tf.serving.mediapipe_vocabulary import normalize_character
from bert_tf.text import tokenization

# Accented (one or more accents, capitals), Greek (tonos, polytonic oxia,
# capitals), Cyrillic, mojibake, punctuation around and inside.
WORDS = [
    "Génoise",
    "cliché",
    "naïve",
    "naiveté",
    "amélie",
    "Fédération",
    "Québécois",
    "École",
    "Émile Zola",
    "Müller",
    "Zürich's",
    "señor",
    "Ångström",
    "maelström",
    "mollà",
    "δούλος",
    "κύριος",
    "Κύριος",
    "ΑΘΗΝΑ",
    "Αθήνα",
    "εισιτηριον",
    "Москва",
    "ПРИВЕТ мир",
    "BBC‚Äôs",
    "China‚Äôs Xi",
    "café-au-lait",
    "naïve.",
    "“Génoise,” she said",
    "Ｈｅｌｌｏ",
    "豈",
]


def _mediapipe_ids(text, lines, remap):
    """MediaPipe's word pieces of `text` over `lines`, mapped by `remap`."""
    vocab = _line_numbers(lines)
    text = "".join(c.lower() if c.isascii() else c for c in text)
    words, word = [], ""
    for char in text:
        own = tokenization._is_punctuation(char) or tokenization._is_chinese_char(
            ord(char)
        )
        if char in "\t\n\f\r " or own:
            words += [word] if word else []
            words += [char] if own else []
            word = ""
        else:
            word += char
    words += [word] if word else []
    ids = []
    for word in words:
        ids += [remap[vocab[piece]] for piece in _word_pieces(word, vocab)]
    return ids


_NUMBERED = {}


def _line_numbers(lines):
    # MediaPipe's LookupId: the line of each entry (built once per list).
    if _NUMBERED.get("lines") is not lines:
        _NUMBERED.update(lines=lines, vocab={line: i for i, line in enumerate(lines)})
    return _NUMBERED["vocab"]


def _word_pieces(word, vocab):
    """tensorflow-text's WordpieceTokenize as MediaPipe calls it: longest
    match first, "##" inside a word, [UNK] for the whole word if a part
    matches nothing or it has more than 100 bytes."""
    if len(word.encode()) > 100:
        return ["[UNK]"]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):
            piece = ("##" if start else "") + word[start:end]
            if piece in vocab:
                break
        else:
            return ["[UNK]"]
        pieces.append(piece)
        start = end
    return pieces


@pytest.fixture(scope="module")
def vocabulary(shared_data):
    vocab_file = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    lines, remap = mediapipe_vocabulary(vocab_file)
    return vocab_file, lines, remap, tokenization.FullTokenizer(vocab_file, True)


def _bert_ids(tokenizer, text):
    return tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))


def test_accented_greek_and_mixed_words_get_berts_ids(vocabulary):
    _, lines, remap, tokenizer = vocabulary
    for word in WORDS:
        assert _mediapipe_ids(word, lines, remap) == _bert_ids(tokenizer, word), word
    # Without the other spellings MediaPipe makes such words [UNK].
    plain = [line for line, i in zip(lines, remap, strict=True) if line.isascii()]
    plain_ids = [i for line, i in zip(lines, remap, strict=True) if line.isascii()]
    assert _mediapipe_ids("Génoise", plain, plain_ids) == [tokenizer.vocab["[UNK]"]]


def test_every_line_normalizes_to_the_entry_of_its_id(vocabulary):
    vocab_file, lines, remap, tokenizer = vocabulary
    inverse = {index: token for token, index in tokenizer.vocab.items()}
    assert len(set(lines)) == len(lines) and all(lines)
    assert all(line.strip() == line for line in lines)
    for token in SPECIAL_TOKENS:
        assert remap[lines.index(token)] == tokenizer.vocab[token]
    for line, index in zip(lines, remap, strict=True):
        if line not in SPECIAL_TOKENS:
            normalized = "".join(normalize_character(c) for c in line)
            assert normalized == inverse[index], line
    # Every entry BERT can produce is a line of its own.
    produced = [t for t in tokenizer.vocab if t == "".join(map(normalize_character, t))]
    assert set(produced) <= set(lines)
    assert 300_000 < len(lines) < 500_000


def test_what_no_vocabulary_fixes(vocabulary):
    """The list in docs/guides/litert.md: each still differs (if one stops differing, the
    list is out of date)."""
    _, lines, remap, tokenizer = vocabulary
    for text in [
        "zero\u200bwidth",  # format characters: BERT deletes them
        "10\u00a0km",  # a non-ASCII space: BERT splits there
        "ΟΔΟΣ",  # final capital sigma: BERT's "ς"
        "a≠b",  # U+2260 decomposes to "=" and a mark: punctuation for BERT
        "x" * 101,  # over MediaPipe's 100 bytes
        "crème brûlée",  # two accents in a piece, not both "é"
        "FRANÇAIS",  # a Latin-1 capital inside a piece
        "Dvořák",  # Latin Extended-A
    ]:
        assert _mediapipe_ids(text, lines, remap) != _bert_ids(tokenizer, text), text


def test_all_stsb_and_sst2_dev_sentences_get_berts_ids(vocabulary, shared_data):
    _, lines, remap, tokenizer = vocabulary
    texts = stsb_sentences(shared_data)[0] + sst2(shared_data, "dev")[0]
    differ = [
        text
        for text in texts
        if _mediapipe_ids(text, lines, remap) != _bert_ids(tokenizer, text)
    ]
    assert differ == []
    assert sum(not text.isascii() for text in texts) == 31


def test_without_accent_stripping_capitals_map_to_lower_case(shared_data, tmp_path):
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join([*SPECIAL_TOKENS, "é", "caf", "##é"]) + "\n")
    lines, remap = mediapipe_vocabulary(str(vocab_file), strip_accents=False)
    tokenizer = tokenization.FullTokenizer(str(vocab_file), True, strip_accents=False)
    for text in ["CAFÉ", "café", "É"]:
        assert _mediapipe_ids(text, lines, remap) == _bert_ids(tokenizer, text)
    # The accent stays: "e" is not a spelling of "é".
    assert _mediapipe_ids("cafe", lines, remap) == [tokenizer.vocab["[UNK]"]]
