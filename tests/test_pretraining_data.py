"""create_pretraining_data.py: the original's algorithm, records and CLI.

The SQuAD test compares against figures measured from the original code on the
same corpus (SQuAD v1.1 dev contexts, one sentence per line). With the same seed our records are meant to equal the
original's, so the instance count is exact in practice; the tolerances below
only allow for a different Python ``random`` implementation: ±1% instances
(±229), ±0.5 point for the predicted fraction (its run-to-run spread is far
smaller: 3.4M tokens), ±1 point for the 80/10/10 split, random-next and short
fractions (binomial sd over 22,936 instances / 342k predictions is < 0.35
point), ±1 token for the mean length.

The default mode's records are pinned by a SHA-256 taken from the writer this
fast path replaced (tf.train.Example + tf.io.TFRecordWriter); the encoder and
the TFRecord framing are also compared with TensorFlow's directly. The sharded
mode is checked for records independent of the worker count, shard by shard
equal to the original algorithm run on that shard, parseable with the
original reader's feature spec, the original's statistics, and memory bounded
by the shard (checked structurally: shards in flight, records per shard).
"""

import hashlib
import json
import os
import random
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from cli_script import child_pythonpath

from bert_tf.data_prep import pretraining
from bert_tf.data_prep.pretraining.documents import MemoTokenizer
from bert_tf.text import tokenization

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SEQ = 128
MAX_PRED = 20


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def sample_text(shared_data):
    return os.path.join(shared_data, "bert_sample_text", "sample_text.txt")


@pytest.fixture(scope="module")
def tokenizer(vocab_file):
    return tokenization.FullTokenizer(vocab_file, do_lower_case=True)


def _generate(tmp_path, name, input_files, vocab_file, num_outputs=1, **kwargs):
    outputs = [str(tmp_path / f"{name}-{i}.tfrecord") for i in range(num_outputs)]
    count = pretraining.create_pretraining_data(
        input_files, outputs, vocab_file, **kwargs
    )
    return count, outputs


def _raw_records(path):
    return [r.numpy() for r in tf.data.TFRecordDataset(path)]


def _parsed(paths, seq=SEQ, max_pred=MAX_PRED):
    """All records of `paths` (file after file) as a dict of numpy arrays."""
    dataset = tf.data.TFRecordDataset(paths).map(
        lambda r: pretraining.parse_pretraining_record(r, seq, max_pred)
    )
    batches = list(dataset.batch(100_000).as_numpy_iterator())
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def _statistics(records, mask_id):
    """The original's SQuAD corpus figures, in percent (mean_real_tokens in tokens)."""
    real = records["input_mask"].sum(axis=1)
    weights = records["masked_lm_weights"]
    rows, cols = np.nonzero(weights)
    positions = records["masked_lm_positions"][rows, cols]
    shown = records["input_ids"][rows, positions]
    labels = records["masked_lm_ids"][rows, cols]
    is_mask = shown == mask_id
    is_kept = (~is_mask) & (shown == labels)
    n = len(rows)
    return {
        "instances": len(real),
        "predicted": 100.0 * weights.sum() / real.sum(),
        "mask": 100.0 * is_mask.sum() / n,
        "kept": 100.0 * is_kept.sum() / n,
        "random": 100.0 * (n - is_mask.sum() - is_kept.sum()) / n,
        "random_next": 100.0 * records["next_sentence_labels"][:, 0].mean(),
        "short": 100.0 * (real < 64).mean(),
        "mean_real_tokens": float(real.mean()),
    }


def _squad_corpus(shared_data, path, max_paragraphs=None, repeats=1):
    """Spec §12: contexts split after . ! ? + whitespace; blank line per paragraph.

    `max_paragraphs` keeps the first ones only; `repeats` writes them again
    (as new documents) that many times.
    """
    with open(
        os.path.join(shared_data, "squad", "dev-v1.1.json"), encoding="utf-8"
    ) as f:
        data = json.load(f)["data"]
    paragraphs = [p["context"] for article in data for p in article["paragraphs"]]
    num_sentences = 0
    with open(path, "w", encoding="utf-8") as out:
        for _ in range(repeats):
            for context in paragraphs[:max_paragraphs]:
                for sentence in re.split(r"(?<=[.!?])\s+", context.strip()):
                    if sentence.strip():
                        out.write(sentence.strip() + "\n")
                        num_sentences += 1
                out.write("\n")
    return num_sentences


def _squad_args(**kwargs):
    return dict(
        max_seq_length=SEQ,
        max_predictions_per_seq=MAX_PRED,
        dupe_factor=5,
        random_seed=12345,
        masked_lm_prob=0.15,
        **kwargs,
    )


def _assert_original_statistics(stats):
    assert stats["instances"] == pytest.approx(22_936, rel=0.01)
    assert stats["predicted"] == pytest.approx(14.91, abs=0.5)
    assert stats["mask"] == pytest.approx(80.0, abs=1.0)
    assert stats["kept"] == pytest.approx(10.0, abs=1.0)
    assert stats["random"] == pytest.approx(10.0, abs=1.0)
    assert stats["random_next"] == pytest.approx(62.6, abs=1.0)
    assert stats["short"] == pytest.approx(11.9, abs=1.0)
    assert stats["mean_real_tokens"] == pytest.approx(106.5, abs=1.0)


@pytest.fixture(scope="module")
def squad_corpus(shared_data, tmp_path_factory):
    path = tmp_path_factory.mktemp("squad") / "squad.txt"
    assert _squad_corpus(shared_data, path) == 10_598
    return str(path)


@pytest.fixture(scope="module")
def small_corpus(shared_data, tmp_path_factory):
    """The first 150 SQuAD paragraphs (~120 KB): many documents, quick to run."""
    path = tmp_path_factory.mktemp("small") / "small.txt"
    _squad_corpus(shared_data, path, max_paragraphs=150)
    return str(path)


# SHA-256 of the SQuAD records of the default mode, from the tf.train.Example /
# tf.io.TFRecordWriter writer that the TensorFlow-free one replaced.
SQUAD_RECORDS_SHA256 = (
    "29ce5220fa67d094b2f36957694ad41467e3dbd53eeb9193b8c43c0392953b47"
)


@pytest.mark.slow
def test_squad_statistics_match_original(squad_corpus, vocab_file, tmp_path):
    # The full corpus: ~2 s on one core, so no subset is needed.
    count, outputs = _generate(
        tmp_path, "squad", [squad_corpus], vocab_file, **_squad_args()
    )
    with open(outputs[0], "rb") as f:
        assert hashlib.sha256(f.read()).hexdigest() == SQUAD_RECORDS_SHA256
    mask_id = tokenization.load_vocab(vocab_file)["[MASK]"]
    stats = _statistics(_parsed(outputs), mask_id)
    assert count == stats["instances"] == 22_936
    _assert_original_statistics(stats)


@pytest.mark.slow
def test_squad_statistics_sharded(squad_corpus, vocab_file, tmp_path):
    # Two workers, default shard size (1 MiB: the 1.6 MB corpus is 2 shards).
    outputs = [str(tmp_path / f"sharded-{i}.tfrecord") for i in range(2)]
    run = _write_sharded(
        [squad_corpus], outputs, vocab_file, 2, pretraining.DEFAULT_SHARD_SIZE_MB
    )
    assert run.num_shards == 2 and run.processes == 2
    assert run.max_shards_in_flight <= 2
    mask_id = tokenization.load_vocab(vocab_file)["[MASK]"]
    stats = _statistics(_parsed(outputs), mask_id)
    assert run.num_records == stats["instances"] == sum(run.shard_records)
    _assert_original_statistics(stats)


def _write_sharded(inputs, outputs, vocab_file, num_workers, shard_size_mb, **kw):
    options = dict(
        random_seed=12345,
        max_seq_length=SEQ,
        max_predictions_per_seq=MAX_PRED,
        dupe_factor=5,
        short_seq_prob=0.1,
        masked_lm_prob=0.15,
        do_whole_word_mask=False,
    )
    options.update(kw)
    options = pretraining.GenerationOptions(**options)
    return pretraining.write_sharded(
        inputs, outputs, vocab_file, True, options, num_workers, shard_size_mb
    )


@pytest.fixture(scope="module")
def sample_run(sample_text, vocab_file, tmp_path_factory):
    """sample_text.txt → one file and, with the same seed, two round-robin files."""
    tmp_path = tmp_path_factory.mktemp("sample")
    kwargs = dict(max_seq_length=SEQ, max_predictions_per_seq=MAX_PRED, dupe_factor=3)
    one = _generate(tmp_path, "one", [sample_text], vocab_file, **kwargs)
    two = _generate(tmp_path, "two", [sample_text], vocab_file, 2, **kwargs)
    return one, two


def test_sample_masking_rules(sample_run, tokenizer):
    (count, outputs), _ = sample_run
    records = _parsed(outputs)
    assert count == len(records["input_ids"]) > 20
    cls_id, sep_id = tokenizer.vocab["[CLS]"], tokenizer.vocab["[SEP]"]
    for i in range(count):
        n_real = int(records["input_mask"][i].sum())
        n_pred = int(records["masked_lm_weights"][i].sum())
        positions = records["masked_lm_positions"][i][:n_pred]
        labels = records["masked_lm_ids"][i][:n_pred]
        # Per-WordPiece masking always has enough candidates for the budget.
        assert n_pred == min(MAX_PRED, max(1, round(n_real * 0.15)))
        assert list(positions) == sorted(set(positions))
        assert 0 < positions.min() and positions.max() < n_real
        assert not np.isin(labels, [cls_id, sep_id]).any()
        # [CLS]/[SEP] stay in place: first token and exactly two [SEP]s.
        ids = records["input_ids"][i][:n_real]
        assert ids[0] == cls_id and ids[-1] == sep_id
        assert (ids == sep_id).sum() == 2
        assert (records["masked_lm_positions"][i][n_pred:] == 0).all()
        assert (records["masked_lm_ids"][i][n_pred:] == 0).all()
        assert (records["input_ids"][i][n_real:] == 0).all()
    labels = records["next_sentence_labels"][:, 0]
    assert set(np.unique(labels)) <= {0, 1}


def test_schema_matches_original_reader(sample_run):
    (_, outputs), _ = sample_run
    example = tf.train.Example.FromString(_raw_records(outputs[0])[0])
    feature = example.features.feature
    int_lengths = {
        "input_ids": SEQ,
        "input_mask": SEQ,
        "segment_ids": SEQ,
        "masked_lm_positions": MAX_PRED,
        "masked_lm_ids": MAX_PRED,
        "next_sentence_labels": 1,
    }
    assert set(feature) == set(int_lengths) | {"masked_lm_weights"}
    for name, length in int_lengths.items():
        assert feature[name].WhichOneof("kind") == "int64_list", name
        assert len(feature[name].int64_list.value) == length, name
    assert feature["masked_lm_weights"].WhichOneof("kind") == "float_list"
    assert len(feature["masked_lm_weights"].float_list.value) == MAX_PRED

    # The original run_pretraining's reader (FixedLenFeature, int64 → int32).
    spec = pretraining.pretraining_feature_spec(SEQ, MAX_PRED)
    assert spec["masked_lm_weights"].dtype == tf.float32
    assert spec["next_sentence_labels"].shape == [1]
    parsed = pretraining.parse_pretraining_record(
        tf.constant(_raw_records(outputs[0])[0]), SEQ, MAX_PRED
    )
    assert parsed["input_ids"].dtype == tf.int32
    assert parsed["masked_lm_weights"].dtype == tf.float32
    assert parsed["next_sentence_labels"].shape == [1]
    assert parsed["input_ids"].shape == [SEQ]


def test_round_robin_two_files(sample_run):
    (count, one), (count2, two) = sample_run
    assert count == count2
    records = _raw_records(one[0])
    assert _raw_records(two[0]) == records[0::2]
    assert _raw_records(two[1]) == records[1::2]


def test_deterministic_for_seed(sample_text, vocab_file, tmp_path):
    kwargs = dict(dupe_factor=1)
    _, a = _generate(tmp_path, "a", [sample_text], vocab_file, **kwargs)
    _, b = _generate(tmp_path, "b", [sample_text], vocab_file, **kwargs)
    _, c = _generate(tmp_path, "c", [sample_text], vocab_file, random_seed=1, **kwargs)
    assert _raw_records(a[0]) == _raw_records(b[0])
    assert _raw_records(a[0]) != _raw_records(c[0])


def test_whole_word_masking_groups_pieces(sample_text, vocab_file, tokenizer, tmp_path):
    count, outputs = _generate(
        tmp_path, "wwm", [sample_text], vocab_file, do_whole_word_mask=True
    )
    records = _parsed(outputs)
    inv = tokenizer.inv_vocab
    checked = 0
    for i in range(count):
        n_pred = int(records["masked_lm_weights"][i].sum())
        n_real = int(records["input_mask"][i].sum())
        positions = records["masked_lm_positions"][i][:n_pred]
        original = records["input_ids"][i][:n_real].copy()
        original[positions] = records["masked_lm_ids"][i][:n_pred]
        tokens = [inv[int(t)] for t in original]
        masked = set(positions.tolist())
        for p in masked:
            # A masked piece's whole word is masked: "##" neighbours both ways.
            if tokens[p].startswith("##"):
                assert p - 1 in masked
                checked += 1
            if p + 1 < n_real and tokens[p + 1].startswith("##"):
                assert p + 1 in masked
    assert checked > 0


def test_masking_rng_call_order():
    """random() for 80%, random() for 50/50, then randint: as the original."""

    class ScriptedRng:
        def __init__(self):
            self.calls = []
            self.randoms = iter([0.9, 0.6])

        def shuffle(self, items):
            self.calls.append("shuffle")

        def random(self):
            self.calls.append("random")
            return next(self.randoms)

        def randint(self, a, b):
            self.calls.append(("randint", a, b))
            return 2

    rng = ScriptedRng()
    vocab_words = ["[PAD]", "x", "y", "z"]
    tokens, positions, labels = pretraining.create_masked_lm_predictions(
        ["[CLS]", "a", "b", "[SEP]"], 0.15, 20, vocab_words, rng
    )
    assert rng.calls == ["shuffle", "random", "random", ("randint", 0, 3)]
    assert tokens == ["[CLS]", "y", "b", "[SEP]"]
    assert positions == [1] and labels == ["a"]


def test_whole_word_group_skipped_when_over_budget():
    rng = random.Random(0)
    tokens = ["[CLS]", "un", "##aff", "##able", "[SEP]"]
    # Budget 1: the only group has 3 pieces, so nothing can be masked.
    out, positions, labels = pretraining.create_masked_lm_predictions(
        tokens, 0.1, 20, ["x"], rng, do_whole_word_mask=True
    )
    assert positions == [] and out == tokens
    out, positions, labels = pretraining.create_masked_lm_predictions(
        tokens, 0.1, 20, ["x"], rng, do_whole_word_mask=False
    )
    assert len(positions) == 1


@pytest.mark.slow  # starts worker processes
def test_sharded_workers_deterministic(sample_text, vocab_file, tmp_path):
    # Two shards (files); the output must not depend on the worker count.
    with open(sample_text, encoding="utf-8") as f:
        documents = f.read().split("\n\n")
    half = len(documents) // 2
    shards = []
    for i, part in enumerate((documents[:half], documents[half:])):
        path = tmp_path / f"shard{i}.txt"
        path.write_text("\n\n".join(part) + "\n", encoding="utf-8")
        shards.append(str(path))
    kwargs = dict(dupe_factor=2)
    n2, two = _generate(tmp_path, "w2", shards, vocab_file, 2, num_workers=2, **kwargs)
    n3, three = _generate(
        tmp_path, "w3", shards, vocab_file, 2, num_workers=3, **kwargs
    )
    assert n2 == n3 > 0
    for a, b in zip(two, three, strict=True):
        assert _raw_records(a) == _raw_records(b)
    assert len(_raw_records(two[0])) + len(_raw_records(two[1])) == n2


def test_undecodable_bytes_name_file_and_line(vocab_file, tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"Good line.\nAnother one.\nbad \xff byte\n")
    with pytest.raises(ValueError, match=re.escape(f"{path}:3:")):
        _generate(tmp_path, "bad", [str(path)], vocab_file)


@pytest.mark.parametrize("num_workers", [1, 2])
def test_empty_corpus(vocab_file, tmp_path, num_workers):
    path = tmp_path / "empty.txt"
    path.write_text("\n\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="no document"):
        _generate(tmp_path, "empty", [str(path)], vocab_file, num_workers=num_workers)


def test_vocab_without_mask(vocab_file, sample_text, tmp_path):
    with open(vocab_file, encoding="utf-8") as f:
        words = [w for w in f.read().split("\n") if w != "[MASK]"]
    bad_vocab = tmp_path / "vocab.txt"
    bad_vocab.write_text("\n".join(words), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(bad_vocab)) + ".*MASK"):
        _generate(tmp_path, "novocab", [sample_text], str(bad_vocab))


@pytest.mark.slow  # starts a process
def test_cli_end_to_end(sample_text, vocab_file, tmp_path):
    output = tmp_path / "cli.tfrecord"
    command = [
        sys.executable,
        os.path.join(REPO_ROOT, "create_pretraining_data.py"),
        f"--input_file={sample_text}",
        f"--output_file={output}",
        f"--vocab_file={vocab_file}",
        "--do_lower_case=True",
        "--max_seq_length=128",
        "--max_predictions_per_seq=20",
        "--masked_lm_prob=0.15",
        "--random_seed=12345",
        "--dupe_factor=2",
    ]
    env = dict(os.environ, PYTHONPATH=child_pythonpath(REPO_ROOT))
    result = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    match = re.search(r"Wrote (\d+) total instances", result.stderr)
    assert match, result.stderr[-3000:]
    assert "*** Example ***" in result.stderr
    records = _raw_records(str(output))
    assert len(records) == int(match.group(1)) > 0
    # Same records as the library with the same arguments.
    _, lib = _generate(tmp_path, "lib", [sample_text], vocab_file, dupe_factor=2)
    assert _raw_records(lib[0]) == records


# --------------------------------------------------------------------------
# Fast path: the same bytes as TensorFlow, without TensorFlow
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seq,max_pred,wwm", [(SEQ, MAX_PRED, False), (300, 45, True), (16, 3, False)]
)
def test_record_encoder_matches_tf_example(small_corpus, tokenizer, seq, max_pred, wwm):
    # seq 300: positions >= 128 (two-byte varints); uncased ids reach 30521
    # (three-byte varints); seq 16 with 3 predictions: heavy truncation.
    documents, _ = pretraining.read_documents([small_corpus], tokenizer)
    instances = pretraining.create_training_instances(
        documents[:60],
        list(tokenizer.vocab.keys()),
        seq,
        1,
        0.3,
        0.15,
        max_pred,
        random.Random(seq),
        do_whole_word_mask=wwm,
    )
    encoder = pretraining.RecordEncoder(tokenizer.vocab, seq, max_pred)
    assert len(instances) > 50
    for instance in instances:
        expected = pretraining.instance_to_example(
            instance, tokenizer, seq, max_pred
        ).SerializeToString(deterministic=True)
        assert encoder.encode_instance(instance) == expected
        num_a = instance.segment_ids.index(1)
        record = encoder.encode(
            instance.tokens,
            num_a,
            instance.masked_lm_positions,
            instance.masked_lm_labels,
            instance.is_random_next,
        )
        assert record == expected
        decoded = pretraining.decode_record(record)
        example = tf.train.Example.FromString(record).features.feature
        for name, values in decoded.items():
            feature = example[name]
            assert values == list(feature.int64_list.value or feature.float_list.value)


def test_record_encoder_rejects_like_original(tokenizer):
    encoder = pretraining.RecordEncoder(tokenizer.vocab, 8, 2)
    with pytest.raises(AssertionError, match="9 tokens > 8"):
        encoder.encode(["[CLS]"] * 9, 2, [1], ["a"], False)
    with pytest.raises(KeyError):
        encoder.encode(["[CLS]", "not-a-vocab-token", "[SEP]"], 3, [], [], False)


def test_tfrecord_framing_matches_tf_writer(tmp_path):
    rng = np.random.default_rng(0)
    # More than one CRC batch, empty and long records, all byte values.
    lengths = [0, 1, 8, 255, 20_000] + rng.integers(0, 400, 4200).tolist()
    records = [rng.integers(0, 256, n, dtype=np.uint8).tobytes() for n in lengths]
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    data, sizes = pretraining.frame_records(records)
    with open(path, "rb") as f:
        assert data == f.read()
    assert sizes == [n + 16 for n in lengths]
    assert pretraining.frame_records([]) == (b"", [])


def test_memo_tokenizer_matches_full_tokenizer(small_corpus, tokenizer):
    with open(small_corpus, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    lines += ["Ünïcödé — ﬁne 東京 café's naïve", "x" * 250, "\u00ad\u200b a\u3000b"]
    # A tiny memo limit also exercises the reset.
    memo = MemoTokenizer(tokenizer, max_words=50)
    for line in lines + lines:
        assert memo.tokenize(line) == tokenizer.tokenize(line)


@pytest.mark.slow  # starts a process
def test_default_mode_does_not_import_tensorflow(sample_text, vocab_file, tmp_path):
    code = (
        "import sys\n"
        "from bert_tf.data_prep import pretraining\n"
        f"pretraining.create_pretraining_data([{sample_text!r}], "
        f"[{str(tmp_path / 'x.tfrecord')!r}], {vocab_file!r}, dupe_factor=1)\n"
        "assert 'tensorflow' not in sys.modules, 'tensorflow imported'\n"
        "assert 'keras' not in sys.modules, 'keras imported'\n"
    )
    env = dict(os.environ, PYTHONPATH=child_pythonpath(REPO_ROOT))
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]


# --------------------------------------------------------------------------
# Sharded, streaming mode
# --------------------------------------------------------------------------


def _documents_of_lines(lines):
    documents = [[]]
    for line in lines:
        if line:
            documents[-1].append(line)
        else:
            documents.append([])
    return [d for d in documents if d]


def test_iter_shards_are_runs_of_whole_documents(small_corpus, tmp_path):
    with open(small_corpus, encoding="utf-8") as f:
        lines = [line.strip() for line in f]
    documents = _documents_of_lines(lines)
    second = tmp_path / "second.txt"
    second.write_text("First doc of file two.\nNo blank line at the end.", "utf-8")
    limit_mb = 0.01
    shards = list(pretraining.iter_shards([small_corpus, str(second)], limit_mb))
    assert len(shards) > 8
    # Whole documents, in order; file two does not continue file one's last
    # document, and is a shard of its own.
    assert [d for shard in shards[:-1] for d in _documents_of_lines(shard)] == (
        documents
    )
    assert shards[-1] == ["First doc of file two.", "No blank line at the end."]
    largest_document = max(len("\n".join(d).encode()) + 1 for d in documents)
    for shard in shards[:-1]:
        size = sum(len(line.encode()) + 1 for line in shard)
        assert size < limit_mb * (1 << 20) + largest_document
    with pytest.raises(ValueError, match="shard_size_mb"):
        list(pretraining.iter_shards([small_corpus], 0))


@pytest.mark.slow
def test_sharded_output_independent_of_workers(
    small_corpus, vocab_file, tokenizer, tmp_path
):
    runs = {}
    for workers in (1, 2, 3):
        outputs = [str(tmp_path / f"w{workers}-{i}.tfrecord") for i in range(2)]
        stats = _write_sharded(
            [small_corpus], outputs, vocab_file, workers, 0.02, dupe_factor=2
        )
        runs[workers] = (stats, [_raw_records(p) for p in outputs], outputs)
    stats, records, outputs = runs[1]
    assert stats.num_shards >= 5 and stats.processes == 0
    for workers in (2, 3):
        other, other_records, _ = runs[workers]
        assert other.processes == workers
        # Bounded memory: never more shards submitted and unwritten than workers.
        assert other.max_shards_in_flight <= workers
        assert other.shard_records == stats.shard_records
        assert other_records == records
    assert len(records[0]) + len(records[1]) == stats.num_records

    # Every record parses with the original reader's FixedLenFeature spec.
    parsed = _parsed(outputs)
    assert len(parsed["input_ids"]) == stats.num_records

    # Shard 0 is the original algorithm run on shard 0 alone, with its seed.
    shard0 = next(iter(pretraining.iter_shards([small_corpus], 0.02)))
    path = tmp_path / "shard0.txt"
    path.write_text("\n".join(shard0) + "\n", encoding="utf-8")
    documents, _ = pretraining.read_documents([str(path)], tokenizer)
    instances = pretraining.create_training_instances(
        documents,
        list(tokenizer.vocab.keys()),
        SEQ,
        2,
        0.1,
        0.15,
        MAX_PRED,
        random.Random(pretraining.shard_seed(12345, 0)),
    )
    encoder = pretraining.RecordEncoder(tokenizer.vocab, SEQ, MAX_PRED)
    expected = [encoder.encode_instance(instance) for instance in instances]
    assert len(expected) == stats.shard_records[0]
    # Round-robin over the two files (file 0 may hold one record more).
    interleaved = [r for pair in zip(*records, strict=False) for r in pair]
    assert interleaved[: len(expected)] == expected


def test_sharded_memory_bounded_by_shard(shared_data, vocab_file, tmp_path):
    # The same text 1x and 4x (repeated as new documents): 4x the shards, not
    # larger ones, so the records in memory (shards in flight x records per
    # shard) do not grow with the corpus.
    stats = {}
    for repeats in (1, 4):
        corpus = tmp_path / f"x{repeats}.txt"
        _squad_corpus(shared_data, corpus, max_paragraphs=100, repeats=repeats)
        stats[repeats] = _write_sharded(
            [str(corpus)],
            [str(tmp_path / f"x{repeats}.tfrecord")],
            vocab_file,
            1,
            0.02,
            dupe_factor=1,
        )
    one, four = stats[1], stats[4]
    assert one.num_shards >= 3
    assert four.num_shards >= 3 * one.num_shards
    assert four.num_records == pytest.approx(4 * one.num_records, rel=0.05)
    assert four.max_shards_in_flight == one.max_shards_in_flight == 1
    assert four.max_shard_records <= 1.25 * one.max_shard_records


@pytest.mark.slow  # starts a process
def test_cli_sharded_matches_library(small_corpus, vocab_file, tmp_path):
    # The CLI forks its workers (no TensorFlow loaded); this process spawns.
    output = tmp_path / "cli.tfrecord"
    command = [
        sys.executable,
        os.path.join(REPO_ROOT, "create_pretraining_data.py"),
        f"--input_file={small_corpus}",
        f"--output_file={output}",
        f"--vocab_file={vocab_file}",
        "--dupe_factor=1",
        "--num_workers=2",
        "--shard_size_mb=0.03",
    ]
    env = dict(os.environ, PYTHONPATH=child_pythonpath(REPO_ROOT))
    result = subprocess.run(
        command, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "*** Example ***" in result.stderr
    assert re.search(
        r"in \d+ shards of up to 0.03 MiB; 2 worker processes", result.stderr
    )
    _, lib = _generate(
        tmp_path,
        "lib",
        [small_corpus],
        vocab_file,
        dupe_factor=1,
        num_workers=3,
        shard_size_mb=0.03,
    )
    assert _raw_records(lib[0]) == _raw_records(str(output))

    help_text = subprocess.run(
        [command[0], command[1], "--help"], env=env, capture_output=True, text=True
    ).stdout
    assert "--shard_size_mb" in help_text and "--num_workers" in help_text


def test_expand_input_files_like_tf_glob(tmp_path):
    for name in ("b.txt", "a.txt", "c.txt"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    literal = str(tmp_path / "a.txt")
    pattern = str(tmp_path / "*.txt")
    # Literal local paths skip TensorFlow; patterns keep tf.io.gfile.glob's order.
    assert pretraining.expand_input_files(literal) == tf.io.gfile.glob(literal)
    assert pretraining.expand_input_files(f"{pattern},{literal}") == (
        tf.io.gfile.glob(pattern) + [literal]
    )
    with pytest.raises(ValueError, match="matches no file"):
        pretraining.expand_input_files(str(tmp_path / "missing.txt"))


# --------------------------------------------------------------------------
# One sharded run divided between machines (--num_tasks / --task_index)
# --------------------------------------------------------------------------


@pytest.mark.slow  # starts a process
def test_tasks_concatenated_equal_the_one_machine_output(
    small_corpus, sample_text, vocab_file, tmp_path
):
    """Two CLI task runs, their files concatenated in task order, are byte for
    byte the one-machine sharded output (two input files, several shards)."""
    inputs = f"{small_corpus},{sample_text}"
    common = [
        f"--input_file={inputs}",
        f"--vocab_file={vocab_file}",
        "--dupe_factor=1",
        "--shard_size_mb=0.02",
    ]
    env = dict(os.environ, PYTHONPATH=child_pythonpath(REPO_ROOT))
    script = os.path.join(REPO_ROOT, "create_pretraining_data.py")
    one = tmp_path / "one" / "records.tfrecord"
    tasks = tmp_path / "tasks" / "records.tfrecord"
    runs = [[f"--output_file={one}", "--num_workers=2"]] + [
        [f"--output_file={tasks}", "--num_tasks=2", f"--task_index={index}"]
        for index in (0, 1)
    ]
    for flags in runs:
        result = subprocess.run(
            [sys.executable, script, *common, *flags],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-3000:]
    parts = sorted((tmp_path / "tasks").glob("records.tfrecord-*"))
    assert [p.name for p in parts] == [
        "records.tfrecord-00000-of-00002",
        "records.tfrecord-00001-of-00002",
    ]
    data = [p.read_bytes() for p in parts]
    assert all(data), "each task has shards"
    assert b"".join(data) == one.read_bytes()
    # The glob run_pretraining.py takes reads them all.
    pattern = str(tmp_path / "tasks" / "records.tfrecord-*")
    assert pretraining.expand_input_files(pattern) == [str(p) for p in parts]


def test_more_tasks_than_shards_and_task_index_checks(
    small_corpus, vocab_file, tmp_path
):
    """Four tasks over the library on ~2 shards: the concatenation still
    equals one run; a task without a shard writes an empty file, no error."""
    common = dict(dupe_factor=1, shard_size_mb=0.05)
    _, one = _generate(tmp_path, "one", [small_corpus], vocab_file, **common)
    counts = []
    for index in range(4):
        counts.append(
            pretraining.create_pretraining_data(
                [small_corpus],
                [str(tmp_path / "part.tfrecord")],
                vocab_file,
                num_tasks=4,
                task_index=index,
                **common,
            )
        )
    parts = [tmp_path / f"part.tfrecord-{i:05d}-of-00004" for i in range(4)]
    with open(one[0], "rb") as f:
        assert b"".join(p.read_bytes() for p in parts) == f.read()
    assert sum(counts) == len(_raw_records(one[0]))
    assert 0 in counts
    with pytest.raises(ValueError, match="task_index must be in"):
        pretraining.create_pretraining_data(
            [small_corpus], [str(tmp_path / "x")], vocab_file, num_tasks=2, task_index=2
        )
