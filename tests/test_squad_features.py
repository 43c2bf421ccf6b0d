"""Tests for bert_tf.data_prep.squad's features and bert_tf.metrics.squad's
write_predictions.

Everything runs on small contexts written here with a tiny vocabulary, where
windows, max-context flags, targets and null scores were worked out by hand
from the original's rules. Reading SQuAD files and the official metrics are
tests/test_squad.py.
"""

import json
import math

import pytest
from squad_files import make_dataset
from squad_files import make_qa
from squad_files import write_json

from bert_tf.data_prep import squad
from bert_tf.metrics import squad as post
from bert_tf.text import tokenization

# ---------------------------------------------------------------------------
# Helpers

_WORDS = (
    "[PAD] [UNK] [CLS] [SEP] the author wrote when was born where what who "
    "alpha beta gamma delta epsilon zeta eta theta iota kappa "
    "( ) - . , ' 1895 1943 steve smith s ##s"
).split()


@pytest.fixture
def tokenizer(tmp_path):
    words = list(_WORDS) + [f"w{i}" for i in range(20)]
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(words) + "\n", encoding="utf-8")
    return tokenization.FullTokenizer(str(vocab), do_lower_case=True)


def _features(examples, tokenizer, is_training, max_seq_length=16, doc_stride=2):
    features = []
    squad.convert_examples_to_features(
        examples,
        tokenizer,
        max_seq_length=max_seq_length,
        doc_stride=doc_stride,
        max_query_length=4,
        is_training=is_training,
        output_fn=features.append,
    )
    return features


def _example(qid, doc, question="who", **kwargs):
    return squad.SquadExample(
        qas_id=qid, question_text=question, doc_tokens=doc.split(), **kwargs
    )


# ---------------------------------------------------------------------------
# Writing features


def test_write_features_keeps_compact_prediction_features(tokenizer, tmp_path):
    import tensorflow as tf

    doc = " ".join(f"w{i}" for i in range(10))
    examples = [_example("q", doc)]
    full = _features(examples, tokenizer, False, 8, 2)
    path = str(tmp_path / "eval.tf_record")
    count, kept = squad.write_features(examples, tokenizer, path, 8, 2, 4, False)
    assert count == len(kept) == len(full) == 4
    records = list(tf.data.TFRecordDataset(path))
    for record, small, feature in zip(records, kept, full, strict=True):
        parsed = squad.parse_squad_record(record, 8, is_training=False)
        assert parsed["input_ids"].numpy().tolist() == feature.input_ids
        assert small.input_ids is None and small.input_mask is None
        assert small.tokens == feature.tokens
        # The maps read as the dicts the original built.
        orig_map = dict(small.token_to_orig_map.items())
        assert small.token_to_orig_map == orig_map
        assert list(orig_map) == list(range(3, 3 + len(orig_map)))
        assert all(isinstance(v, bool) for v in small.token_is_max_context.values())
        assert small.token_is_max_context.get(99, False) is False
        assert 2 not in small.token_to_orig_map
        with pytest.raises(KeyError):
            small.token_to_orig_map[len(feature.tokens) - 1]  # the last [SEP]
    # Training features are written, not kept.
    count, kept = squad.write_features(
        [_example("q", doc, orig_answer_text="w4", start_position=4, end_position=4)],
        tokenizer,
        str(tmp_path / "train.tf_record"),
        8,
        2,
        4,
        True,
    )
    assert count == 4 and kept == []


def test_features_are_written_as_each_example_is_converted(
    tokenizer, tmp_path, monkeypatch
):
    """write_features pulls one example at a time and writes its windows
    before taking the next: memory does not grow with the dataset."""
    doc = " ".join(f"w{i}" for i in range(10))  # 4 windows each (as above)
    written = []
    pulled_at = []  # records written when each example was taken
    write = squad.FeatureWriter.process_feature

    def spy(writer, feature):
        written.append(feature.example_index)
        write(writer, feature)

    monkeypatch.setattr(squad.FeatureWriter, "process_feature", spy)

    def examples():
        for index in range(3):
            pulled_at.append(len(written))
            yield _example(f"q{index}", doc)

    path = str(tmp_path / "eval.tf_record")
    count, kept = squad.write_features(examples(), tokenizer, path, 8, 2, 4, False)
    assert count == len(kept) == 12
    assert pulled_at == [0, 4, 8]
    assert written == [0] * 4 + [1] * 4 + [2] * 4
    # The generator itself is lazy: its first feature needs one example.
    taken = []
    features = squad.generate_features(
        (taken.append(i) or _example(f"q{i}", doc) for i in range(3)),
        tokenizer,
        8,
        2,
        4,
        False,
    )
    first = next(features)
    assert (first.unique_id, taken) == (squad.FIRST_UNIQUE_ID, [0])
    rest = list(features)
    assert [f.unique_id for f in rest] == list(
        range(squad.FIRST_UNIQUE_ID + 1, squad.FIRST_UNIQUE_ID + 12)
    )


# ---------------------------------------------------------------------------
# Windows and max context


def test_windows_and_max_context(tokenizer):
    # 10 doc tokens, 1 query token: max_seq_length 8 leaves 8 - 1 - 3 = 4 doc
    # tokens per window; stride 2 gives windows starting at 0, 2, 4, 6 (the
    # last reaches the end). Token 3: window 0 scores min(3, 0) + 0.04, window
    # 1 min(1, 2) + 0.04, so window 1 is its max-context window; etc.
    doc = " ".join(f"w{i}" for i in range(10))
    features = _features([_example("q", doc)], tokenizer, False, 8, 2)
    assert [f.doc_span_index for f in features] == [0, 1, 2, 3]
    expected_starts = [0, 2, 4, 6]
    expected_max = [
        [True, True, True, False],
        [False, True, True, False],
        [False, True, True, False],
        [False, True, True, True],
    ]
    for feature, start, is_max in zip(
        features, expected_starts, expected_max, strict=True
    ):
        assert feature.tokens == ["[CLS]", "who", "[SEP]"] + [
            f"w{i}" for i in range(start, start + 4)
        ] + ["[SEP]"]
        assert feature.token_to_orig_map == {3 + i: start + i for i in range(4)}
        assert [feature.token_is_max_context[3 + i] for i in range(4)] == is_max
        assert feature.segment_ids == [0, 0, 0, 1, 1, 1, 1, 1]
        assert feature.input_mask == [1] * 8
        assert feature.start_position is None
    assert [f.unique_id for f in features] == [
        squad.FIRST_UNIQUE_ID + i for i in range(4)
    ]


def test_window_stride_longer_than_window_and_padding(tokenizer):
    # Stride 10 > window 4: start += min(length, stride) = 4, no token skipped;
    # the last window is short (w8 w9) and padded.
    doc = " ".join(f"w{i}" for i in range(10))
    features = _features([_example("q", doc)], tokenizer, False, 8, 10)
    starts = [f.token_to_orig_map[3] for f in features]
    assert starts == [0, 4, 8]
    last = features[-1]
    assert last.tokens == ["[CLS]", "who", "[SEP]", "w8", "w9", "[SEP]"]
    assert last.input_mask == [1] * 6 + [0, 0]
    assert last.segment_ids == [0, 0, 0, 1, 1, 1, 0, 0]
    assert last.input_ids[-2:] == [0, 0]
    # Every token is max-context in exactly one window.
    assert all(all(f.token_is_max_context.values()) for f in features)


def test_check_is_max_context_tie_prefers_longer_window():
    spans = [squad.DocSpan(start=0, length=3), squad.DocSpan(start=0, length=4)]
    # Token 1: min(1, 1) + 0.03 vs min(1, 2) + 0.04.
    assert not squad._check_is_max_context(spans, 0, 1)
    assert squad._check_is_max_context(spans, 1, 1)
    # A full tie goes to the first window.
    spans = [squad.DocSpan(start=0, length=3), squad.DocSpan(start=0, length=3)]
    assert squad._check_is_max_context(spans, 0, 1)
    assert not squad._check_is_max_context(spans, 1, 1)


def test_query_truncation_and_room_check(tokenizer):
    example = _example("q", "w0 w1", question="w0 w1 w2 w3 w4 w5")
    (feature,) = _features([example], tokenizer, False, 16)
    assert feature.tokens[:6] == ["[CLS]", "w0", "w1", "w2", "w3", "[SEP]"]
    with pytest.raises(ValueError, match="leaves no room"):
        _features([example], tokenizer, False, 7)


# ---------------------------------------------------------------------------
# Training targets


def test_improve_answer_span(tokenizer, tmp_path):
    context = "The author (1895-1943). wrote"
    path = write_json(
        tmp_path / "a.json",
        make_dataset(
            (context, [make_qa("q", "when", [("1895", context.index("1895"))])])
        ),
    )
    examples = squad.read_squad_examples(path, is_training=True)
    (feature,) = _features(examples, tokenizer, True, 16)
    # Doc WordPieces: the author ( 1895 - 1943 ) . wrote; the word span is
    # "(1895-1943)." (tokens 2..7), refined to "1895" (token 3); offset 3.
    assert feature.tokens[3:12] == [
        "the",
        "author",
        "(",
        "1895",
        "-",
        "1943",
        ")",
        ".",
        "wrote",
    ]
    assert (feature.start_position, feature.end_position) == (6, 6)
    doc = ["the", "author", "(", "1895", "-", "1943", ")", "."]
    assert squad._improve_answer_span(doc, 2, 7, tokenizer, "1895") == (3, 3)
    # No sub-span matches: the input span is kept.
    assert squad._improve_answer_span(doc, 2, 7, tokenizer, "alpha") == (2, 7)


def test_training_targets_in_and_out_of_window(tokenizer):
    doc = " ".join(f"w{i}" for i in range(10))
    # Answer w4 w5 (words 4-5); windows of 4 at 0, 2, 4, 6.
    example = _example(
        "q",
        doc,
        orig_answer_text="w4 w5",
        start_position=4,
        end_position=5,
    )
    impossible = _example(
        "n", doc, orig_answer_text="", start_position=-1, end_position=-1
    )
    impossible.is_impossible = True
    features = _features([example, impossible], tokenizer, True, 8, 2)
    targets = [(f.start_position, f.end_position) for f in features]
    # Window 0 (w0-w3): out -> 0/0, kept. Window 1 (w2-w5): 4-2+3 = 5, 6.
    # Window 2 (w4-w7): 3, 4. Window 3 (w6-w9): out. Impossible: all 0/0.
    assert targets[:4] == [(0, 0), (5, 6), (3, 4), (0, 0)]
    assert targets[4:] == [(0, 0)] * 4
    assert [f.is_impossible for f in features] == [False] * 4 + [True] * 4


def test_feature_writer_round_trip(tokenizer, tmp_path):
    import tensorflow as tf

    doc = " ".join(f"w{i}" for i in range(10))
    example = _example(
        "q", doc, orig_answer_text="w4", start_position=4, end_position=4
    )
    path = str(tmp_path / "train.tf_record")
    with squad.FeatureWriter(path, is_training=True) as writer:
        count = squad.convert_examples_to_features(
            [example], tokenizer, 8, 2, 4, True, writer.process_feature
        )
    assert writer.num_features == count == 4
    features = _features([example], tokenizer, True, 8, 2)
    records = list(tf.data.TFRecordDataset(path))
    for record, feature in zip(records, features, strict=True):
        parsed = squad.parse_squad_record(record, 8, is_training=True)
        assert set(parsed) == {
            "unique_ids",
            "input_ids",
            "input_mask",
            "segment_ids",
            "start_positions",
            "end_positions",
        }
        assert all(v.dtype == tf.int32 for v in parsed.values())
        assert int(parsed["unique_ids"]) == feature.unique_id
        assert parsed["input_ids"].numpy().tolist() == feature.input_ids
        assert int(parsed["start_positions"]) == feature.start_position
        raw = tf.train.Example.FromString(record.numpy())
        assert raw.features.feature["is_impossible"].int64_list.value == [0]
    path = str(tmp_path / "eval.tf_record")
    with squad.FeatureWriter(path, is_training=False) as writer:
        writer.process_feature(features[0])
    (record,) = list(tf.data.TFRecordDataset(path))
    raw = tf.train.Example.FromString(record.numpy())
    assert set(raw.features.feature) == {
        "unique_ids",
        "input_ids",
        "input_mask",
        "segment_ids",
    }


# ---------------------------------------------------------------------------
# write_predictions


def _logits(n, **at):
    values = [0.0] * n
    for index, value in at.items():
        values[int(index[1:])] = value
    return values


def test_get_final_text():
    assert post.get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert post.get_final_text("1895", "(1895-1943).", True) == "1895"
    # Not found in the tokenized original: the whole original span.
    assert post.get_final_text("zeta", "Steve Smith's", True) == "Steve Smith's"


def test_write_predictions_v1(tokenizer, tmp_path):
    examples = [_example("a", "alpha beta gamma delta")]
    (feature,) = features = _features(examples, tokenizer, False, 16)
    # Doc tokens at 3..6. Best: beta-gamma (4, 5) = 9 + 8; (4, 4) length ok;
    # end before start and query/[CLS] indexes are discarded.
    start = _logits(16, i4=9.0, i0=20.0, i1=15.0, i6=1.0)
    end = _logits(16, i5=8.0, i0=20.0, i2=30.0, i3=2.0)
    results = [post.RawResult(feature.unique_id, start, end)]
    pred_file = tmp_path / "predictions.json"
    nbest_file = tmp_path / "nbest_predictions.json"
    preds = post.write_predictions(
        examples,
        features,
        results,
        20,
        30,
        True,
        str(pred_file),
        str(nbest_file),
        str(tmp_path / "null_odds.json"),
    )
    assert preds == {"a": "beta gamma"}
    text = pred_file.read_text()
    assert text == json.dumps({"a": "beta gamma"}, indent=4) + "\n"
    assert not (tmp_path / "null_odds.json").exists()
    nbest = json.loads(nbest_file.read_text())["a"]
    assert nbest[0]["text"] == "beta gamma"
    assert nbest[0]["start_logit"] == 9.0 and nbest[0]["end_logit"] == 8.0
    assert len({e["text"] for e in nbest}) == len(nbest)  # deduplicated
    assert len(nbest) <= 20
    assert sum(e["probability"] for e in nbest) == pytest.approx(1.0)
    # Top-n indexes are taken before the discard rules: with n_best_size 2
    # they are starts 0, 1 and ends 2, 0 (all query/[CLS]), so nothing is left.
    preds = post.write_predictions(
        examples, features, results, 2, 30, True, None, None, None
    )
    assert preds == {"a": "empty"}
    # n-best is capped at n_best_size: 4 valid pairs, 2 kept, best first.
    clean = [
        post.RawResult(
            feature.unique_id,
            _logits(16, i3=1.0, i4=2.0, i5=3.0),
            _logits(16, i4=1.0, i5=2.0, i6=3.0),
        )
    ]
    preds = post.write_predictions(
        examples, features, clean, 2, 30, True, None, str(nbest_file), None
    )
    nbest = json.loads(nbest_file.read_text())["a"]
    assert [e["text"] for e in nbest] == ["gamma delta", "gamma"]
    assert nbest[0]["probability"] == pytest.approx(1 / (1 + math.exp(-1)))
    # No valid candidate (max_answer_length 0): the original's "empty".
    preds = post.write_predictions(
        examples, features, results, 20, 0, True, None, None, None
    )
    assert preds == {"a": "empty"}


def test_write_predictions_v2_null_scores(tokenizer, tmp_path):
    doc = " ".join(f"w{i}" for i in range(10))
    examples = [
        _example("has", "alpha beta gamma delta"),
        _example("none", "alpha beta gamma delta"),
        _example("multi", doc),
    ]
    features = _features(examples, tokenizer, False, 8, 2)
    by_example = {}
    for feature in features:
        by_example.setdefault(feature.example_index, []).append(feature)
    results = []
    # "has" (max_seq 8: windows of 4 doc tokens; one window): null 1 + 1 = 2,
    # best "beta" 5 + 5 -> score_diff -8 -> "beta".
    (f_has,) = by_example[0]
    results.append(
        post.RawResult(
            f_has.unique_id, _logits(8, i0=1.0, i4=5.0), _logits(8, i0=1.0, i4=5.0)
        )
    )
    # "none": null 6 + 6 = 12, best "gamma" 3 + 3 -> score_diff 6 -> "".
    (f_none,) = by_example[1]
    results.append(
        post.RawResult(
            f_none.unique_id, _logits(8, i0=6.0, i5=3.0), _logits(8, i0=6.0, i5=3.0)
        )
    )
    # "multi": 4 windows with null scores 8, 2, 10, 10: score_null = min = 2
    # (window 1). Best span w3 (window 1, position 4, its max-context
    # window): 2 + 2 -> score_diff 2 - 4 = -2 -> "w3".
    nulls = [4.0, 1.0, 5.0, 5.0]
    for feature, null in zip(by_example[2], nulls, strict=True):
        start = _logits(8, i0=null)
        end = _logits(8, i0=null)
        if feature.doc_span_index == 1:
            start[4] = end[4] = 2.0
        results.append(post.RawResult(feature.unique_id, start, end))

    odds_file = tmp_path / "null_odds.json"
    nbest_file = tmp_path / "nbest.json"
    preds = post.write_predictions(
        examples,
        features,
        results,
        20,
        30,
        True,
        str(tmp_path / "p.json"),
        str(nbest_file),
        str(odds_file),
        version_2_with_negative=True,
    )
    assert preds == {"has": "beta", "none": "", "multi": "w3"}
    odds = json.loads(odds_file.read_text())
    assert odds == {"has": -8.0, "none": 6.0, "multi": -2.0}
    assert odds_file.read_text().endswith("}\n")
    nbest = json.loads(nbest_file.read_text())
    for qid in preds:
        assert "" in [e["text"] for e in nbest[qid]]  # null always listed
    null_entry = next(e for e in nbest["multi"] if e["text"] == "")
    assert (null_entry["start_logit"], null_entry["end_logit"]) == (1.0, 1.0)

    # Threshold: predict "" only when score_diff > threshold.
    preds = post.write_predictions(
        examples,
        features,
        results,
        20,
        30,
        True,
        None,
        None,
        None,
        version_2_with_negative=True,
        null_score_diff_threshold=6.0,
    )
    assert preds == {"has": "beta", "none": "gamma", "multi": "w3"}
    preds = post.write_predictions(
        examples,
        features,
        results,
        20,
        30,
        True,
        None,
        None,
        None,
        version_2_with_negative=True,
        null_score_diff_threshold=-3.0,
    )
    assert preds == {"has": "beta", "none": "", "multi": ""}


def test_write_predictions_v2_all_null_no_crash(tokenizer, tmp_path):
    """The original raised AttributeError here (issues #211/#417/#476)."""
    examples = [_example("q", "alpha beta gamma delta")]
    features = _features(examples, tokenizer, False, 8)
    (feature,) = features
    results = [
        post.RawResult(
            feature.unique_id, _logits(8, i0=3.0, i4=1.0), _logits(8, i0=2.0, i4=1.0)
        )
    ]
    odds_file = tmp_path / "null_odds.json"
    nbest_file = tmp_path / "nbest.json"
    # n_best_size 1: the null (3 + 2) is the only n-best entry.
    preds = post.write_predictions(
        examples,
        features,
        results,
        1,
        30,
        True,
        None,
        str(nbest_file),
        str(odds_file),
        version_2_with_negative=True,
    )
    assert preds == {"q": ""}
    assert json.loads(odds_file.read_text()) == {"q": 5.0}
    assert json.loads(nbest_file.read_text())["q"] == [
        {"text": "", "probability": 1.0, "start_logit": 3.0, "end_logit": 2.0}
    ]
    # No non-null candidate at all (max_answer_length 0): same.
    preds = post.write_predictions(
        examples,
        features,
        results,
        20,
        0,
        True,
        None,
        None,
        str(odds_file),
        version_2_with_negative=True,
    )
    assert preds == {"q": ""}
