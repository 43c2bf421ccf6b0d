"""BertPreprocessor against the Python FullTokenizer and the original packing.

The reference is `tokenization.FullTokenizer` (itself checked against the
original's behaviour in test_tokenization*.py) and
`bert_tf.data_prep.glue.convert_single_example` (the original's packing), on the
same >= 5,000-string torture set as the tokenizer tests, per casing and
released vocabulary.
"""

import functools
import itertools
import os

import numpy as np
import pytest
import tensorflow as tf
from tokenizer_torture import generate_torture_strings
from tokenizer_torture import load_squad_sentences

from bert_tf.data_prep import glue
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import BertPreprocessor
from bert_tf.text.preprocessing import truncated_pair_lengths

N_STRINGS = 6000
VOCABS = ("bert-base-uncased", "bert-base-cased")
CONFIGS = [(v, lower) for v in VOCABS for lower in (True, False)]


def _vocab(shared_data, name):
    path = os.path.join(shared_data, "vocab", name, "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


@functools.cache
def _strings(data_dir):
    return tuple(generate_torture_strings(N_STRINGS, 0, data_dir=data_dir))


def _mismatches(preprocessor, tokenizer, strings):
    ids = preprocessor.tokenize(tf.constant(list(strings))).to_list()
    return [
        (s, tokenizer.tokenize(s), tokenizer.convert_ids_to_tokens(got))
        for s, got in zip(strings, ids, strict=True)
        if tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s)) != got
    ]


@pytest.mark.parametrize("vocab_name,lower", CONFIGS)
def test_ids_equal_full_tokenizer_on_torture_strings(shared_data, vocab_name, lower):
    vocab = _vocab(shared_data, vocab_name)
    strings = _strings(shared_data)
    assert len(strings) >= 5000
    bad = _mismatches(
        BertPreprocessor(vocab, lower, 128),
        tokenization.FullTokenizer(vocab, lower),
        strings,
    )
    assert not bad, f"{len(bad)} of {len(strings)} differ, e.g. {bad[:3]}"


@pytest.mark.slow
@pytest.mark.parametrize("vocab_name,lower", CONFIGS)
def test_packing_equals_the_original_for_singles_and_pairs(
    shared_data, vocab_name, lower
):
    vocab = _vocab(shared_data, vocab_name)
    strings = _strings(shared_data)[:1200]
    tokenizer = tokenization.FullTokenizer(vocab, lower)
    for seq_length in (5, 16, 48):
        preprocessor = BertPreprocessor(vocab, lower, seq_length)
        for pair in (False, True):
            texts_b = strings[1:] + strings[:1] if pair else [None] * len(strings)
            examples = [
                glue.InputExample(guid=str(i), text_a=a, text_b=b, label="0")
                for i, (a, b) in enumerate(zip(strings, texts_b, strict=True))
            ]
            expected = glue.convert_examples_to_features(
                examples, ["0"], seq_length, tokenizer
            )
            inputs = tf.constant(list(strings))
            if pair:
                inputs = (inputs, tf.constant(list(texts_b)))
            got = {k: v.numpy() for k, v in preprocessor(inputs).items()}
            for name in ("input_ids", "input_mask", "segment_ids"):
                want = np.array([getattr(f, name) for f in expected])
                assert got[name].dtype == np.int32
                rows = np.flatnonzero((got[name] != want).any(axis=1))
                assert rows.size == 0, (
                    f"seq {seq_length} pair={pair} {name}: {rows.size} rows differ, "
                    f"first {strings[rows[0]]!r}"
                )


def test_truncation_closed_form_equals_the_popping_loop():
    length_a, length_b, budgets = [], [], []
    expected = []
    for la, lb, budget in itertools.product(range(0, 23), range(0, 23), range(1, 21)):
        a, b = list(range(la)), list(range(lb))
        tokenization.truncate_seq_pair(a, b, budget)
        length_a.append(la)
        length_b.append(lb)
        budgets.append(budget)
        expected.append((len(a), len(b)))
    new_a, new_b = truncated_pair_lengths(
        tf.constant(length_a), tf.constant(length_b), tf.constant(budgets)
    )
    got = list(zip(new_a.numpy().tolist(), new_b.numpy().tolist(), strict=True))
    assert got == expected


def test_offsets_point_at_the_tokens_text(shared_data):
    vocab = _vocab(shared_data, "bert-base-uncased")
    sentences = load_squad_sentences(shared_data)[:400]
    preprocessor = BertPreprocessor(vocab, True, 128)
    ids, starts, ends = preprocessor.tokenize_with_offsets(tf.constant(sentences))
    inverse = {i: t for t, i in tokenization.load_vocab(vocab).items()}
    checked = 0
    for text, row_ids, row_starts, row_ends in zip(
        sentences, ids.to_list(), starts.to_list(), ends.to_list(), strict=True
    ):
        data = text.encode("utf-8")
        for token_id, start, end in zip(row_ids, row_starts, row_ends, strict=True):
            piece = inverse[token_id].removeprefix("##")
            span = data[start:end].decode("utf-8")
            if token_id == 100:  # [UNK] stands for the whole span
                continue
            # The span is the piece the token came from (or its whole word
            # when normalisation changed the word's length in bytes).
            normalized = tokenization.BasicTokenizer(True).tokenize(span)
            assert piece in "".join(normalized), (text, piece, span)
            checked += 1
    assert checked > 5000


def test_fast_bert_option_matches_on_plain_text(shared_data):
    vocab = _vocab(shared_data, "bert-base-uncased")
    strings = [s for s in _strings(shared_data) if s.isascii() and s.isprintable()]
    assert len(strings) > 1000
    for lower in (True, False):
        bad = _mismatches(
            BertPreprocessor(vocab, lower, 128, tokenizer="fast_bert"),
            tokenization.FullTokenizer(vocab, lower),
            strings,
        )
        assert not bad, bad[:3]


def test_invalid_utf8_is_dropped_as_the_original(shared_data):
    vocab = _vocab(shared_data, "bert-base-uncased")
    raw = [b"caf\xc3\xa9 \xff\xfeok", b"a\x00b", b"\xe2\x82"]
    tokenizer = tokenization.FullTokenizer(vocab, True)
    got = BertPreprocessor(vocab, True, 16).tokenize(tf.constant(raw)).to_list()
    assert got == [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(r)) for r in raw]


def test_bad_inputs_are_refused(tmp_path, shared_data):
    vocab = _vocab(shared_data, "bert-base-uncased")
    preprocessor = BertPreprocessor(vocab, True, 16)
    with pytest.raises(TypeError, match="strings"):
        preprocessor(tf.constant([1, 2]))
    with pytest.raises(ValueError, match="1 or 2 segments"):
        preprocessor((tf.constant(["a"]),) * 3)
    no_cls = tmp_path / "vocab.txt"
    no_cls.write_text("[PAD]\n[UNK]\n[SEP]\nhello\n")
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[CLS\]"):
        BertPreprocessor(str(no_cls), True, 16)
    with pytest.raises(ValueError, match="tokenizer"):
        BertPreprocessor(vocab, True, 16, tokenizer="sentencepiece")


def test_config_round_trip_and_graph_mode(shared_data):
    vocab = _vocab(shared_data, "bert-base-cased")
    preprocessor = BertPreprocessor(vocab, False, 24, tokenizer="bert", name="pre")
    clone = BertPreprocessor.from_config(preprocessor.get_config())
    assert clone.get_config() == preprocessor.get_config()
    texts = tf.constant(["Hello World!", "Grüße aus Köln"])
    eager = preprocessor(texts)
    graph = tf.function(clone)(texts)
    for name in eager:
        np.testing.assert_array_equal(eager[name], graph[name])
        assert eager[name].shape == (2, 24)


def test_padding_longest_cuts_the_fixed_rows_at_the_longest(shared_data):
    vocab = _vocab(shared_data, "bert-base-uncased")
    sentences = load_squad_sentences(shared_data)[:64]
    fixed = BertPreprocessor(vocab, True, 128)(tf.constant(sentences))
    longest = BertPreprocessor(vocab, True, 128, padding="longest")
    assert longest.get_config()["padding"] == "longest"
    got = longest(tf.constant(sentences))
    width = int(fixed["input_mask"].numpy().sum(1).max())
    assert got["input_ids"].shape == (64, width) and width < 128
    for name in got:
        np.testing.assert_array_equal(got[name], fixed[name][:, :width])
        assert not fixed[name][:, width:].numpy().any()
    # Truncation is unchanged: a long row still stops at seq_length.
    long_row = longest(tf.constant(["word " * 300, "short"]))
    assert long_row["input_ids"].shape == (2, 128)
    with pytest.raises(ValueError, match="padding"):
        BertPreprocessor(vocab, True, 128, padding="right")


@pytest.mark.slow
def test_pair_batch_size_mismatch_names_both_sizes(shared_data):
    vocab = _vocab(shared_data, "bert-base-uncased")
    preprocessor = BertPreprocessor(vocab, True, 16)
    with pytest.raises(ValueError, match="has 2 rows but second segment has 1"):
        preprocessor((tf.constant(["a", "b"]), tf.constant(["c"])))
    graph = tf.function(
        preprocessor,
        input_signature=[
            (tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.string))
        ],
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="has 2 rows"):
        graph((tf.constant(["a", "b"]), tf.constant(["c"])))


def test_pack_with_given_lengths_and_empty_batches(shared_data):
    """`lengths` keeps a prefix of each row (never more than it holds) and
    ends every segment with [SEP]; an empty batch packs to [0, 2] (longest)."""
    vocab = _vocab(shared_data, "bert-base-uncased")
    preprocessor = BertPreprocessor(vocab, True, 12, padding="longest")
    cls, sep = preprocessor.cls_id, preprocessor.sep_id
    a = tf.ragged.constant([[11, 12, 13], [21]], tf.int64)
    b = tf.ragged.constant([[31, 32], [41, 42, 43, 44]], tf.int64)
    packed = preprocessor.pack(
        [a, b], lengths=[tf.constant([2, 5], tf.int64), tf.constant([9, 3], tf.int64)]
    )
    # Row 2 keeps its one token of a and 3 of b: 7 columns, as row 1.
    assert packed["input_ids"].numpy().tolist() == [
        [cls, 11, 12, sep, 31, 32, sep],
        [cls, 21, sep, 41, 42, 43, sep],
    ]
    assert packed["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 1, 1, 1],
        [0, 0, 0, 1, 1, 1, 1],
    ]
    assert packed["input_mask"].numpy().tolist() == [[1] * 7, [1] * 7]
    fixed = BertPreprocessor(vocab, True, 12).pack([a], lengths=[tf.constant([1, 1])])
    assert fixed["input_ids"].numpy().tolist() == [
        [cls, 11, sep] + [0] * 9,
        [cls, 21, sep] + [0] * 9,
    ]
    empty = preprocessor((tf.constant([], tf.string), tf.constant([], tf.string)))
    assert empty["input_ids"].shape == (0, 2)
