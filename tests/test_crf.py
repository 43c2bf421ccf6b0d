"""The CRF layer against pytorch-crf (an independent implementation) and brute force.

pytorch-crf's chain needs a prefix mask that keeps the first step; ours skips
any masked-out step (a tagger's continuation pieces), so each row is compared
with pytorch-crf on that row's kept steps, gathered in numpy. The reference
runs in float64.
"""

import itertools
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.layers.crf import CRF
from bert_tf.layers.crf import iob2_allowed

torchcrf = pytest.importorskip("torchcrf", reason="pytorch-crf (test extra) missing")
torch = pytest.importorskip("torch")


def _random_crf(num_tags, rng, scale=1.0):
    crf = CRF(num_tags)
    crf.build()
    for variable in (crf.transitions, crf.start_transitions, crf.end_transitions):
        variable.assign(scale * rng.normal(size=variable.shape).astype(np.float32))
    return crf


def _torch_crf(crf):
    reference = torchcrf.CRF(crf.num_tags, batch_first=True).double()
    with torch.no_grad():
        for name in ("transitions", "start_transitions", "end_transitions"):
            value = getattr(crf, name).numpy().astype(np.float64)
            getattr(reference, name).copy_(torch.from_numpy(value))
    return reference


def _reference(crf, emissions, tags, mask):
    """pytorch-crf's log-likelihood and Viterbi path of each row's kept steps
    (None, [] for a row with none)."""
    reference = _torch_crf(crf)
    likelihoods, paths = [], []
    for row in range(len(emissions)):
        kept = np.flatnonzero(mask[row])
        if not len(kept):
            likelihoods.append(None)
            paths.append([])
            continue
        scores = torch.from_numpy(emissions[row : row + 1, kept].astype(np.float64))
        row_tags = torch.from_numpy(tags[row : row + 1, kept].astype(np.int64))
        with torch.no_grad():
            likelihoods.append(reference(scores, row_tags, reduction="none").item())
            paths.append(reference.decode(scores)[0])
    return likelihoods, paths


def _check_parity(crf, emissions, tags, mask):
    likelihood = crf.log_likelihood(emissions, tags, mask).numpy()
    decoded = crf.decode(emissions, mask).numpy()
    # The LiteRT export's decoder (no compaction, fixed-shape loops).
    np.testing.assert_array_equal(crf.decode_in_place(emissions, mask), decoded)
    expected, paths = _reference(crf, emissions, tags, mask)
    for row in range(len(emissions)):
        kept = np.flatnonzero(mask[row])
        if expected[row] is None:
            assert likelihood[row] == 0.0
        else:
            # 1e-5 of the magnitude: float32 sums of tens of scores.
            tolerance = 1e-5 * max(1.0, abs(expected[row]))
            assert abs(likelihood[row] - expected[row]) <= tolerance, row
        assert decoded[row, kept].tolist() == paths[row], row
        assert (decoded[row][~mask[row].astype(bool)] == 0).all()
    return likelihood, decoded


def test_random_scores_and_mixed_masks_match_pytorch_crf():
    rng = np.random.default_rng(0)
    batch, steps, num_tags = 16, 30, 7
    emissions = (3 * rng.normal(size=(batch, steps, num_tags))).astype(np.float32)
    tags = rng.integers(0, num_tags, size=(batch, steps)).astype(np.int32)
    lengths = rng.integers(1, steps + 1, size=batch)
    lengths[:3] = [1, steps, 2]
    # Prefix masks of mixed lengths (pytorch-crf's own form) ...
    mask = np.arange(steps)[None] < lengths[:, None]
    # ... and gappy ones: a tagger's word starts, [CLS] and pieces left out;
    # two rows keep nothing (windows whose words are scored elsewhere).
    gappy = mask & (rng.random((batch, steps)) < 0.6)
    gappy[:, 0] = False
    gappy[5] = gappy[6] = False
    tags = np.where(gappy | mask, tags, -1)
    for scale in (0.5, 3.0):
        crf = _random_crf(num_tags, rng, scale)
        _check_parity(crf, emissions, tags, mask)
        _check_parity(crf, emissions, tags, gappy)


def test_gradients_match_pytorch_crf():
    rng = np.random.default_rng(1)
    emissions = rng.normal(size=(5, 12, 4)).astype(np.float32)
    tags = rng.integers(0, 4, size=(5, 12)).astype(np.int32)
    mask = rng.random((5, 12)) < 0.7
    mask[:, 0] = True  # as pytorch-crf needs; then prefixes for the batch call
    mask = np.cumprod(mask, axis=1).astype(bool)
    crf = _random_crf(4, rng)
    scores = tf.Variable(emissions)
    with tf.GradientTape() as tape:
        loss = -tf.reduce_sum(crf.log_likelihood(scores, tags, mask))
    ours = tape.gradient(loss, [scores, crf.transitions, crf.start_transitions])

    reference = _torch_crf(crf)
    torch_scores = torch.tensor(emissions.astype(np.float64), requires_grad=True)
    torch_loss = -reference(
        torch_scores,
        torch.from_numpy(tags.astype(np.int64)),
        torch.from_numpy(mask),
        reduction="sum",
    )
    torch_loss.backward()
    np.testing.assert_allclose(loss.numpy(), torch_loss.item(), rtol=1e-5)
    expected = [
        torch_scores.grad,
        reference.transitions.grad,
        reference.start_transitions.grad,
    ]
    for got, want in zip(ours, expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want.numpy(), atol=1e-5)


def _word_starts(words, tokenizer, seq_length):
    """[CLS] word pieces [SEP] ids and the first-piece mask of one sentence."""
    ids, starts = [], []
    for word in words:
        pieces = tokenizer.tokenize(word) or ["[UNK]"]
        starts += [True] + [False] * (len(pieces) - 1)
        ids += tokenizer.convert_tokens_to_ids(pieces)
    ids = [101, *ids[: seq_length - 2], 102]
    starts = [False, *starts[: seq_length - 2], False]
    pad = seq_length - len(ids)
    return ids + [0] * pad, starts + [False] * pad


@pytest.mark.slow
def test_real_emissions_of_minilm_on_wnut17_match_pytorch_crf(shared_data, minilm_dir):
    """MiniLM's per-piece scores on real WNUT-17 dev sentences, the chain over
    their word starts, transitions from the gold tags' bigram counts."""
    from bert_tf.data_prep import conll
    from bert_tf.text import tokenization

    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    sentences = conll.read_conll(path)[:48]
    labels = conll.label_list_from(sentences)
    index = {label: i for i, label in enumerate(labels)}
    tokenizer = tokenization.FullTokenizer(os.path.join(minilm_dir, "vocab.txt"))
    seq_length = 48
    rows = [_word_starts(s.words, tokenizer, seq_length) for s in sentences]
    ids = np.array([r[0] for r in rows], np.int32)
    mask = np.array([r[1] for r in rows], bool)
    tags = np.full(ids.shape, -1, np.int32)
    for row, sentence in enumerate(sentences):
        kept = np.flatnonzero(mask[row])
        tags[row, kept] = [index[t] for t in sentence.tags[: len(kept)]]

    model = bert_tf.BertTokenClassifier.from_checkpoint(
        minilm_dir, num_labels=len(labels), crf=True
    )
    inputs = {
        "input_ids": ids,
        "input_mask": (ids > 0).astype(np.int32),
        "segment_ids": np.zeros_like(ids),
    }
    logits = model(inputs, training=False)["logits"].numpy()
    # Real scores, made as peaked as a trained tagger's.
    emissions = 8.0 * logits / logits.std()
    counts = np.ones([len(labels)] * 2)
    firsts = np.ones(len(labels))
    for sentence in sentences:
        row = [index[t] for t in sentence.tags]
        firsts[row[0]] += 1
        for a, b in zip(row, row[1:], strict=False):
            counts[a, b] += 1
    crf = model.crf
    crf.transitions.assign(np.log(counts / counts.sum(1, keepdims=True)))
    crf.start_transitions.assign(np.log(firsts / firsts.sum()))
    likelihood, decoded = _check_parity(crf, emissions, tags, mask)
    assert np.isfinite(likelihood).all() and (likelihood < 0).all()
    # Not a trivial chain: the paths differ from the per-word argmax somewhere.
    assert (decoded[mask] != emissions.argmax(-1)[mask]).any()


def _path_scores(crf, emissions, paths, constrained_labels=None):
    """Scores of every path [paths, steps] (-inf: IOB2 forbids it)."""
    transitions = crf.transitions.numpy()
    score = crf.start_transitions.numpy()[paths[:, 0]]
    score += crf.end_transitions.numpy()[paths[:, -1]]
    score += emissions[np.arange(paths.shape[1]), paths].sum(axis=1)
    score += transitions[paths[:, :-1], paths[:, 1:]].sum(axis=1)
    if constrained_labels:
        allowed, allowed_start = map(np.array, iob2_allowed(constrained_labels))
        valid = allowed_start[paths[:, 0]]
        valid &= allowed[paths[:, :-1], paths[:, 1:]].all(axis=1)
        score = np.where(valid, score, -np.inf)
    return score


def test_constrained_decoding_is_the_best_well_formed_iob2_path():
    """Brute force over every path: the constrained decoder returns the best
    IOB2-valid one, the unconstrained the best of all; scores pushed towards
    ill-formed paths so the two differ."""
    labels = ["O", "B-A", "I-A", "B-B", "I-B"]
    rng = np.random.default_rng(2)
    free = _random_crf(len(labels), rng, 2.0)
    free.start_transitions.assign([0, 0, 3, 0, 3])  # I-* first, if allowed
    constrained = CRF(len(labels), iob2_labels=labels)
    constrained.build()
    for name in ("transitions", "start_transitions", "end_transitions"):
        getattr(constrained, name).assign(getattr(free, name))
    length = 5
    emissions = (2 * rng.normal(size=(12, length, len(labels)))).astype(np.float32)
    mask = np.ones((12, length), bool)
    mask[6:, 2] = False  # gaps: the chain links the steps on either side
    got_free = free.decode(emissions, mask).numpy()
    got_constrained = constrained.decode(emissions, mask).numpy()
    np.testing.assert_array_equal(
        constrained.decode_in_place(emissions, mask), got_constrained
    )
    differ = 0
    for row in range(12):
        kept = np.flatnonzero(mask[row])
        scores = emissions[row, kept]
        paths = np.array(list(itertools.product(range(len(labels)), repeat=len(kept))))
        best = paths[_path_scores(free, scores, paths).argmax()]
        best_valid = paths[_path_scores(free, scores, paths, labels).argmax()]
        assert got_free[row, kept].tolist() == best.tolist()
        assert got_constrained[row, kept].tolist() == best_valid.tolist()
        differ += (best != best_valid).any()
    assert differ >= 3


def test_iob2_constraints():
    allowed, starts = iob2_allowed(["O", "B-PER", "I-PER", "B-LOC", "I-LOC"])
    assert starts == [True, True, False, True, False]
    # I-PER only after B-PER or I-PER; everything else anywhere.
    assert [row[2] for row in allowed] == [False, True, True, False, False]
    assert [row[4] for row in allowed] == [False, False, False, True, True]
    assert all(row[j] for row in allowed for j in (0, 1, 3))


@pytest.mark.slow
def test_xla_and_half_precision_scores_agree_with_float32_eager():
    rng = np.random.default_rng(3)
    crf = _random_crf(6, rng)
    emissions = (2 * rng.normal(size=(8, 20, 6))).astype(np.float16)
    tags = rng.integers(0, 6, size=(8, 20)).astype(np.int32)
    mask = rng.random((8, 20)) < 0.5

    @tf.function(jit_compile=True)
    def compiled(scores, mask):
        return crf.log_likelihood(scores, tags, mask), crf.decode(scores, mask)

    likelihood, decoded = compiled(tf.constant(emissions), tf.constant(mask))
    assert likelihood.dtype == tf.float32
    wide = emissions.astype(np.float32)
    np.testing.assert_allclose(
        likelihood.numpy(), crf.log_likelihood(wide, tags, mask).numpy(), rtol=1e-6
    )
    np.testing.assert_array_equal(decoded.numpy(), crf.decode(wide, mask).numpy())


def test_serialization_and_checkpoint_names(tmp_path, tiny_config):
    labels = ["O", "B-A", "I-A"]
    model = bert_tf.BertTokenClassifier(
        tiny_config, num_labels=3, crf=True, crf_iob2_labels=labels
    )
    assert model.crf.dtype_policy.name == "float32"
    assert {v.path for v in model.crf.weights} == {
        "crf/transitions",
        "crf/start_transitions",
        "crf/end_transitions",
    }
    trainable = {v.path for v in model.trainable_variables}
    assert "crf/transitions" in trainable
    model.crf.transitions.assign(np.arange(9, dtype=np.float32).reshape(3, 3))
    path = str(tmp_path / "tagger.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert loaded.crf.iob2_labels == labels
    np.testing.assert_array_equal(loaded.crf.transitions, model.crf.transitions)

    from bert_tf.checkpoints.tf1_checkpoint import save_tf1_checkpoint

    save_tf1_checkpoint(model, str(tmp_path / "model.ckpt-1"))
    names = {n for n, _ in tf.train.list_variables(str(tmp_path / "model.ckpt-1"))}
    assert {
        "cls/crf/transitions",
        "cls/crf/start_transitions",
        "cls/crf/end_transitions",
    } <= names
    with pytest.raises(ValueError, match="crf=True"):
        bert_tf.BertTokenClassifier(tiny_config, num_labels=3, crf_iob2_labels=labels)
    plain = bert_tf.BertTokenClassifier(tiny_config, num_labels=3)
    assert plain.crf is None and "crf" not in plain.get_config()
