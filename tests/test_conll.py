"""CoNLL files: formats, tag schemes, bad input, and the tagging features."""

import collections
import os
import random

import numpy as np
import pytest

from bert_tf.data_prep import conll
from bert_tf.text import tokenization

CONLL2003 = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O
. . O O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER

-DOCSTART- -X- -X- O

Obama NNP B-NP I-PER
Clinton NNP B-NP B-PER
met VBD B-VP O
"""


def _write(tmp_path, text, name="data.txt", mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def tokenizer(minilm_dir):
    return tokenization.FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)


def test_conll2003_iob1_with_docstart(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, CONLL2003), "iob1")
    assert [s.words for s in sentences] == [
        ["EU", "rejects", "German", "call", "."],
        ["Peter", "Blackburn"],
        ["Obama", "Clinton", "met"],
    ]
    assert [s.tags for s in sentences] == [
        ["B-ORG", "O", "B-MISC", "O", "O"],
        ["B-PER", "I-PER"],
        # IOB1's B- separates two adjacent entities of one type.
        ["B-PER", "B-PER", "O"],
    ]
    assert sentences[1].source.endswith("data.txt:9")


def test_two_column_tab_and_space_and_crlf(tmp_path):
    tab = "New\tB-location\nYork\tI-location\nrocks\tO\n\nhi\tO\n"
    space = tab.replace("\t", " ").replace("\n", "\r\n")
    for text in (tab, space):
        sentences = conll.read_conll(_write(tmp_path, text), "iob2")
        assert [s.words for s in sentences] == [["New", "York", "rocks"], ["hi"]]
        assert sentences[0].tags == ["B-location", "I-location", "O"]


def test_tokens_only_file_has_no_tags(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, "a\nb\n\nc\n"))
    assert [s.words for s in sentences] == [["a", "b"], ["c"]]
    assert all(s.tags is None for s in sentences)


def test_bioes_is_read_into_iob2(tmp_path):
    text = "a S-X\nb B-Y\nc I-Y\nd E-Y\ne O\nf B-X\ng E-X\n"
    (sentence,) = conll.read_conll(_write(tmp_path, text), "bioes", strict=True)
    assert sentence.tags == ["B-X", "B-Y", "I-Y", "I-Y", "O", "B-X", "I-X"]


@pytest.mark.parametrize("scheme", conll.TAG_SCHEMES)
def test_every_scheme_keeps_the_entities(scheme):
    rng = random.Random(scheme)
    for _ in range(300):
        length = rng.randint(1, 12)
        spans, i = [], 0
        while i < length:
            if rng.random() < 0.4:
                last = min(length - 1, i + rng.randint(0, 3))
                spans.append((rng.choice("AB"), i, last))
                i = last + 1
            else:
                i += 1
        tags = conll.spans_to_tags(spans, length, scheme)
        assert conll.entity_spans(tags) == spans
        assert conll.canonical_tags(tags, scheme) == tags


def test_real_wnut_file(shared_data):
    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    sentences = conll.read_conll(path, "iob2", strict=True)
    assert len(sentences) == 1009
    assert sum(len(s.words) for s in sentences) == 15733
    # An independent count: IOB2 entities are their B- tags.
    with open(path, encoding="utf-8") as f:
        begins = collections.Counter(
            line.split("\t")[1].strip()[2:] for line in f if "\tB-" in line
        )
    found = collections.Counter(
        entity[0] for s in sentences for entity in conll.entity_spans(s.tags)
    )
    assert found == begins and len(found) == 6
    labels = conll.label_list_from(sentences)
    assert labels[0] == "O" and len(labels) == 13
    assert labels[1:3] == ["B-corporation", "I-corporation"]


def test_ill_formed_sequences(tmp_path):
    text = "a O\nb I-X\nc I-Y\n"
    path = _write(tmp_path, text)
    (sentence,) = conll.read_conll(path, "iob2")
    assert sentence.tags == ["O", "B-X", "B-Y"]  # read as conlleval does
    with pytest.raises(conll.ConllFormatError, match=r"data\.txt:2: .*'I-X' after 'O'"):
        conll.read_conll(path, "iob2", strict=True)
    with pytest.raises(conll.ConllFormatError, match=r"data\.txt:1: .*bioes"):
        conll.read_conll(_write(tmp_path, "a B-X\nb O\n"), "bioes", strict=True)


@pytest.mark.parametrize(
    "content, scheme, message",
    [
        ("a B-X\nb O extra\n", "iob2", r"data\.txt:2: 3 columns, .* has 2"),
        ("a B-X\nb E-X\n", "iob2", r"data\.txt:2: tag 'E-X' is not in the iob2"),
        ("a S-X\n", "iob1", r"data\.txt:1: tag 'S-X' is not in the iob1"),
        ("a B-\n", "iob2", r"data\.txt:1: tag 'B-' is not"),
        ("a PER\n", "bioes", r"data\.txt:1: tag 'PER' is not"),
        (b"a O\n\nb\xff O\n", "iob2", r"data\.txt:3: not UTF-8"),
        ("", "iob2", r"data\.txt:1: no token lines"),
        ("\n\n-DOCSTART- O\n\n", "iob2", r"data\.txt:1: no token lines"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, content, scheme, message):
    mode = "wb" if isinstance(content, bytes) else "w"
    path = _write(tmp_path, content, mode=mode)
    with pytest.raises(conll.ConllFormatError, match=message):
        conll.read_conll(path, scheme)


def test_label_list_fixed_by_labels_and_checked(tmp_path):
    train = conll.read_conll(_write(tmp_path, "a B-PER\nb O\nc B-LOC\n"))
    assert conll.label_list_from(train) == ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]
    assert conll.label_list_from(train, ["PER", "LOC", "ORG"]) == [
        "O",
        "B-PER",
        "I-PER",
        "B-LOC",
        "I-LOC",
        "B-ORG",
        "I-ORG",
    ]
    with pytest.raises(conll.ConllFormatError, match=r"data\.txt:1 .*'LOC' is not"):
        conll.label_list_from(train, ["PER"])
    dev = conll.read_conll(_write(tmp_path, "x O\ny B-ORG\n", "dev.txt"))
    with pytest.raises(conll.ConllFormatError, match=r"dev\.txt:1: .*'ORG'"):
        conll.check_labels(dev, conll.label_list_from(train), "dev.txt")


def test_first_word_piece_carries_the_label(tokenizer):
    sentence = conll.TaggedSentence(
        ["Redondo", "Beach", "is", "sunny", "\u200b"],
        ["B-location", "I-location", "O", "O", "O"],
        "x:1",
    )
    labels = ["O", "B-location", "I-location"]
    features = conll.convert_sentences_to_features([sentence], labels, 16, tokenizer, 7)
    pieces = [tokenizer.tokenize(w) or ["[UNK]"] for w in sentence.words]
    assert len(pieces[0]) > 1  # "redondo" is several word pieces
    tokens = ["[CLS]"] + [p for word in pieces for p in word] + ["[SEP]"]
    n = len(tokens)
    np.testing.assert_array_equal(
        features.input_ids[0, :n], tokenizer.convert_tokens_to_ids(tokens)
    )
    assert features.input_mask[0].sum() == n
    firsts = 1 + np.cumsum([0] + [len(p) for p in pieces[:-1]])
    expected = np.full(16, conll.IGNORED_LABEL)
    expected[firsts] = [1, 2, 0, 0, 0]
    np.testing.assert_array_equal(features.label_ids[0], expected)
    assert features.counts["words without tokens (given [UNK])"] == 1


def test_long_sentence_windows_score_each_word_once(tokenizer):
    words = [f"w{i}ord{'x' * (i % 3)}" for i in range(60)]
    sentence = conll.TaggedSentence(words, ["O"] * 60, "x:1")
    max_seq, stride = 16, 5
    features = conll.convert_sentences_to_features(
        [sentence], ["O"], max_seq, tokenizer, stride
    )
    pieces = [len(tokenizer.tokenize(w)) for w in words]
    first = np.concatenate([[0], np.cumsum(pieces)[:-1]])
    total = sum(pieces)
    starts = conll.window_starts(total, max_seq - 2, stride)
    assert len(starts) == len(features.input_ids) > 5
    assert starts[-1] + max_seq - 2 >= total

    # Each word is scored once, in the window where min(left, right) context
    # (then the window length) is largest — checked by brute force.
    def context(start, position):
        length = min(max_seq - 2, total - start)
        if not start <= position < start + length:
            return -1
        return min(position - start, start + length - 1 - position) + 0.01 * length

    scored = collections.Counter()
    for row, start in enumerate(starts):
        for position in np.flatnonzero(features.word_index[row] >= 0):
            word = features.word_index[row, position]
            scored[word] += 1
            assert first[word] == start + position - 1
            best = max(context(s, first[word]) for s in starts)
            assert context(start, first[word]) == best
    assert scored == {w: 1 for w in range(60)}
    predicted = conll.words_predictions(
        features, np.where(features.word_index >= 0, features.word_index, 0), [sentence]
    )
    assert predicted == [list(range(60))]


def test_doc_stride_must_not_skip_tokens(tokenizer):
    sentence = conll.TaggedSentence(["a"], ["O"], "x:1")
    for stride in (0, 15):
        with pytest.raises(ValueError, match="doc_stride"):
            conll.convert_sentences_to_features(
                [sentence], ["O"], 16, tokenizer, stride
            )


def test_predictions_file_in_the_input_scheme(tmp_path):
    sentences = conll.read_conll(_write(tmp_path, CONLL2003), "iob1")
    predicted = [["O", "I-ORG", "B-ORG", "O", "O"], ["B-PER", "I-PER"], ["O"] * 3]
    out = tmp_path / "pred.txt"
    conll.write_predictions(str(out), sentences, predicted, "iob1")
    lines = out.read_text(encoding="utf-8").split("\n")
    assert lines[:6] == [
        "EU I-ORG O",
        "rejects O I-ORG",
        "German I-MISC B-ORG",
        "call O O",
        ". O O",
        "",
    ]
    assert lines[7:9] == ["Blackburn I-PER I-PER", ""]
