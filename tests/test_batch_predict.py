"""batch_predict.py: exported SavedModels over table rows through Beam RunInference.

Tiny random-weight models with the real uncased vocabulary, exported as
export_saved_model does (classifier, tagger with and without CRF, span,
embedding, reranker), predict GLUE STS-B dev rows given as TSV, JSONL and
TFRecord. The reference is the SavedModel itself, loaded with
tf.saved_model.load and called on each row alone: every row's JSON line must
carry its outputs (floats within 1e-5 where rows were batched, exactly where
the handler runs rows one at a time), and every malformed row must be in
the side output with its reason.
"""

import csv
import functools
import glob
import json
import os
import re
import subprocess
import sys

import keras
import numpy as np
import pytest

pytest.importorskip("apache_beam", reason="apache-beam ([beam] extra) is not installed")

import tensorflow as tf  # noqa: E402
from cli_script import script_env  # noqa: E402
from tiny_models import tiny_bert_config  # noqa: E402

import bert_tf  # noqa: E402
from bert_tf import serving  # noqa: E402
from bert_tf.text.preprocessing import BertPreprocessor  # noqa: E402

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEQ_LENGTH = 32
TAGS = ["O", "B-PER", "I-PER"]
NUM_ROWS = 12
TWO_WORKERS = "--direct_num_workers=2 --direct_running_mode=multi_processing"


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def stsb_rows(shared_data):
    """The first STS-B dev rows (header names: index, sentence1, sentence2, ...)."""
    path = os.path.join(shared_data, "glue", "STS-B", "dev.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return rows[:NUM_ROWS]


@pytest.fixture(scope="module")
def exports(vocab_file, tmp_path_factory):
    keras.utils.set_random_seed(11)
    config = tiny_bert_config(30522, intermediate_size=48, dropout=0.0)
    crf_tagger = bert_tf.BertTokenClassifier(config, num_labels=3, crf=True)
    rng = np.random.default_rng(11)
    # Transitions large enough that Viterbi and the per-token argmax differ.
    for variable in crf_tagger.crf.weights:
        variable.assign(3 * rng.normal(size=variable.shape).astype(np.float32))
    models = {
        "classifier": (
            bert_tf.BertClassifier(config, num_labels=2),
            {"label_list": ["no", "yes"], "text_pair": True},
        ),
        "tagger": (
            bert_tf.BertTokenClassifier(config, num_labels=3),
            {"label_list": TAGS},
        ),
        "tagger_crf": (crf_tagger, {"label_list": TAGS}),
        "span": (bert_tf.BertSpanLabeler(config), {"max_query_length": 8}),
        "embedding": (bert_tf.BertSentenceEncoder(bert_tf.BertEncoder(config)), {}),
        "reranker": (
            bert_tf.BertReranker(
                bert_tf.BertEncoder(config),
                BertPreprocessor(vocab_file, True, SEQ_LENGTH),
            ),
            {},
        ),
    }
    base = tmp_path_factory.mktemp("exports")
    return {
        kind: serving.export_saved_model(
            model,
            str(base / kind),
            vocab_file,
            True,
            SEQ_LENGTH,
            save_keras=False,
            **options,
        )
        for kind, (model, options) in models.items()
    }


@functools.cache
def _loaded(version_dir):
    return tf.saved_model.load(version_dir)


def _expected(version_dir, inputs):
    """The SavedModel's outputs for one row, called alone, as plain Python."""
    signature = _loaded(version_dir).signatures["serving_default"]
    outputs = signature(
        **{name: tf.constant([value]) for name, value in inputs.items()}
    )
    row = {}
    for name, tensor in outputs.items():
        value = tensor.numpy()[0]
        if tensor.dtype == tf.string:
            value = np.vectorize(lambda b: b.decode("utf-8"), otypes=[object])(value)
            row[name] = value.tolist() if isinstance(value, np.ndarray) else str(value)
        else:
            row[name] = np.asarray(value).tolist()
    return row


def _assert_same(actual, expected, exact, where):
    assert set(actual) == set(expected), where
    for name, value in expected.items():
        got = actual[name]
        if exact:
            assert got == value, (where, name)
        elif isinstance(value, str) or (
            isinstance(value, list) and np.asarray(value).dtype.kind in "USO"
        ):
            assert got == value, (where, name)
        else:
            np.testing.assert_allclose(
                np.asarray(got, np.float64),
                np.asarray(value, np.float64),
                atol=1e-5,
                err_msg=f"{where} {name}",
            )


def _read_jsonl(prefix):
    lines = []
    shard = re.compile(re.escape(str(prefix)) + r"-\d{5}-of-\d{5}$")
    for path in sorted(p for p in glob.glob(f"{prefix}-*-of-*") if shard.match(p)):
        with open(path, encoding="utf-8") as f:
            lines.extend(json.loads(line) for line in f if line.strip())
    return lines


def _write_tsv(path, rows, extra_lines=b""):
    header = "index\tsentence1\tsentence2\n"
    body = "".join(f"{r['index']}\t{r['sentence1']}\t{r['sentence2']}\n" for r in rows)
    path.write_bytes((header + body).encode() + extra_lines)


@pytest.mark.slow
def test_cli_classifier_over_tsv_two_workers(exports, stsb_rows, tmp_path):
    """Two TSV files (a glob), file:line keys, two malformed rows reported."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    _write_tsv(inputs / "a.tsv", stsb_rows[:6], b"7\tonly two fields\n")
    _write_tsv(inputs / "b.tsv", stsb_rows[6:], b"8\tbad \xff byte\tx\n")
    output = tmp_path / "out" / "pred"
    # An earlier run's shards, more of them than this run writes (issue
    # 61.9: a glob of the prefix read both runs), and files that only look
    # alike: the first are deleted, the others kept.
    output.parent.mkdir()
    stale = [f"{output}-{i:05d}-of-00007" for i in range(7)]
    alike = [f"{output}-notes.txt", f"{output}-00000-of-00001.bak"]
    for path in stale + alike:
        with open(path, "w") as f:
            f.write('{"key": "earlier run"}\n')
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO_ROOT, "batch_predict.py"),
            f"--saved_model={os.path.dirname(exports['classifier'])}",  # the base
            f"--input_file={inputs}/*.tsv",
            "--input_format=tsv",
            "--text_column=sentence1",
            "--text_pair_column=sentence2",
            f"--output_file={output}",
            "--batch_size=4",
            f"--beam_options={TWO_WORKERS}",
        ],
        env=script_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"{NUM_ROWS} rows predicted; 2 malformed rows" in result.stdout
    predictions = {row.pop("key"): row for row in _read_jsonl(output)}
    expected_keys = {f"{inputs}/a.tsv:{i + 2}" for i in range(6)} | {
        f"{inputs}/b.tsv:{i + 2}" for i in range(NUM_ROWS - 6)
    }
    assert set(predictions) == expected_keys
    assert not [path for path in stale if os.path.exists(path)]
    assert all(os.path.exists(path) for path in alike)
    for index, row in enumerate(stsb_rows):
        name, line = ("a", index + 2) if index < 6 else ("b", index - 4)
        key = f"{inputs}/{name}.tsv:{line}"
        expected = _expected(
            exports["classifier"],
            {"text_a": row["sentence1"], "text_b": row["sentence2"]},
        )
        _assert_same(predictions[key], expected, exact=False, where=key)
    malformed = {row["key"]: row["error"] for row in _read_jsonl(f"{output}.malformed")}
    assert malformed == {
        f"{inputs}/a.tsv:8": "2 fields, the header has 3",
        f"{inputs}/b.tsv:8": "not UTF-8 (invalid start byte: byte 0xff at column 7)",
    }


@pytest.mark.slow
def test_every_family_over_jsonl_and_tfrecord(exports, stsb_rows, tmp_path):
    """One in-process pipeline, a branch per export: taggers and span run
    row by row (exact), the embedding over TFRecord with an id column, the
    reranker over lists of passages of two sizes."""

    from bert_tf.beam import batch_prediction
    from bert_tf.beam.runner_options import new_pipeline

    jsonl = tmp_path / "rows.jsonl"
    lines = [
        json.dumps(
            {
                "id": r["index"],
                "sentence1": r["sentence1"],
                "sentence2": r["sentence2"],
                "passages": [r["sentence2"], r["sentence1"]][: 1 + i % 2],
            }
        )
        for i, r in enumerate(stsb_rows)
    ]
    lines += [
        "{not json",
        json.dumps({"sentence2": "no sentence1"}),
        '{"sentence1": 7}',
    ]
    jsonl.write_text("\n".join(lines) + "\n")
    tfrecord = tmp_path / "rows.tfrecord"
    with tf.io.TFRecordWriter(str(tfrecord)) as writer:
        for r in stsb_rows:
            features = {
                name: tf.train.Feature(
                    bytes_list=tf.train.BytesList(value=[r[name].encode()])
                )
                for name in ("index", "sentence1")
            }
            writer.write(
                tf.train.Example(
                    features=tf.train.Features(feature=features)
                ).SerializeToString()
            )

    branches = {
        # kind: (input, format, text column, pair column, id column, exact)
        "tagger": (jsonl, "jsonl", "sentence1", None, None, True),
        "tagger_crf": (jsonl, "jsonl", "sentence1", None, "id", True),
        "span": (jsonl, "jsonl", "sentence1", "sentence2", "id", True),
        "reranker": (jsonl, "jsonl", "sentence1", "passages", "id", False),
        "embedding": (tfrecord, "tfrecord", "sentence1", None, "index", False),
    }
    pipeline = new_pipeline("DirectRunner")
    for kind, (path, fmt, text, pair, key, _) in branches.items():
        inputs = batch_prediction.signature_inputs(exports[kind])
        columns = batch_prediction.columns_for(inputs, text, pair, key)
        batch_prediction.build(
            pipeline,
            [str(path)],
            fmt,
            columns,
            exports[kind],
            str(tmp_path / kind / "pred"),
            batch_size=5,
            label=kind,
        )
    pipeline.run().wait_until_finish()

    for kind, (path, fmt, _, _, key, exact) in branches.items():
        predictions = {
            row.pop("key"): row for row in _read_jsonl(tmp_path / kind / "pred")
        }
        assert len(predictions) == NUM_ROWS, kind
        for i, r in enumerate(stsb_rows):
            row_key = r["index"] if key else f"{path}:{i + 1}"
            inputs = {
                "tagger": {"text": r["sentence1"]},
                "tagger_crf": {"text": r["sentence1"]},
                "span": {"question": r["sentence1"], "context": r["sentence2"]},
                "reranker": {
                    "query": r["sentence1"],
                    "passages": [r["sentence2"], r["sentence1"]][: 1 + i % 2],
                },
                "embedding": {"text": r["sentence1"]},
            }[kind]
            _assert_same(
                predictions[row_key],
                _expected(exports[kind], inputs),
                exact,
                f"{kind} {row_key}",
            )
        malformed = _read_jsonl(tmp_path / kind / "pred.malformed")
        if fmt == "jsonl":
            reasons = {row["key"].rsplit(":", 1)[1]: row["error"] for row in malformed}
            first_bad = NUM_ROWS + 1
            assert reasons[str(first_bad)].startswith("not JSON")
            assert reasons[str(first_bad + 1)] in (
                "no column 'sentence1'",
                "no column 'id'",
            )
            assert (
                "not a string" in reasons[str(first_bad + 2)]
                or "no column" in (reasons[str(first_bad + 2)])
            )
            assert len(malformed) == 3
        else:
            assert malformed == []
    # The CRF tagger decodes with Viterbi: its tags differ from the softmax one's.
    tags = {
        kind: [row["tags"] for row in _read_jsonl(tmp_path / kind / "pred")]
        for kind in ("tagger", "tagger_crf")
    }
    assert tags["tagger"] != tags["tagger_crf"]


@pytest.mark.slow  # starts processes
def test_cli_errors_name_the_flag(exports, tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"a": "x"}\n')
    common = [
        sys.executable,
        os.path.join(REPO_ROOT, "batch_predict.py"),
        f"--input_file={rows}",
        "--input_format=jsonl",
        f"--output_file={tmp_path / 'out'}",
    ]

    def run(*flags):
        return subprocess.run(
            [*common, *flags],
            env=script_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )

    pair = run(f"--saved_model={exports['classifier']}", "--text_column=a")
    assert pair.returncode == 2
    assert "text_pair_column=" in pair.stderr.strip().splitlines()[-1]
    missing = run(f"--saved_model={tmp_path / 'nothing'}", "--text_column=a")
    assert missing.returncode == 2
    assert "--saved_model" in missing.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_bom_duplicate_keys_and_no_readable_row(exports, full_disk, tmp_path):
    """Issue 61.10: a UTF-8 BOM before the header is read as the other TSV
    readers read it; a key given to two rows, and a run with no readable
    row, are one line each (they ran to exit 0), leaving no Beam temp
    directories."""
    from bert_tf.beam.batch_prediction import run_pipeline
    from bert_tf.cli.command import one_line
    from bert_tf.errors import UserInputError

    version = exports["embedding"]
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(
        b"\xef\xbb\xbf" + b"id\ttext\nr1\tA man plays a guitar.\nr2\tDogs.\n"
    )
    run_pipeline(
        version, str(bom), "tsv", str(tmp_path / "bom"), "text", id_column="id"
    )
    rows = {row["key"]: row for row in _read_jsonl(tmp_path / "bom")}
    assert sorted(rows) == ["r1", "r2"]
    for key, text in (("r1", "A man plays a guitar."), ("r2", "Dogs.")):
        expected = _expected(version, {"text": text})
        _assert_same(
            {k: v for k, v in rows[key].items() if k != "key"}, expected, False, key
        )
    twice = tmp_path / "twice.tsv"
    twice.write_text("id\ttext\nr1\tOne.\nr1\tTwo.\nr2\tThree.\n")
    with pytest.raises(UserInputError) as error:
        run_pipeline(
            version,
            str(twice),
            "tsv",
            str(tmp_path / "o" / "p"),
            "text",
            id_column="id",
        )
    assert str(error.value).startswith("id_column=id: the value 'r1' keys 2 rows")
    assert f"{twice}:2, {twice}:3" in str(error.value)
    assert not glob.glob(str(tmp_path / "o" / "beam-temp-*"))
    with pytest.raises(UserInputError, match=r"none of its 3 rows could be read"):
        run_pipeline(version, str(twice), "tsv", str(tmp_path / "n" / "p"), "nope")
    # A full disk (61.9): one line naming the output, nothing left on it.
    many = tmp_path / "many.tsv"
    many.write_text("text\n" + "a sentence of a few words\n" * 200)
    output = str(full_disk / "pred")
    with pytest.raises(OSError) as error:
        run_pipeline(version, str(many), "tsv", output, "text")
    assert one_line(error.value) == f"{output}: No space left on device"
    assert os.listdir(full_disk) == []
