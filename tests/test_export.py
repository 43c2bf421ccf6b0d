"""SavedModel export: what TF Serving and its users see.

Small random-weight models with the real uncased BERT vocabulary (the `models`
and `vocab_file` fixtures of tests/conftest.py) are exported once per module;
the references are the Keras models fed by the Python tokenizer and the
original's packing (tests/export_references.py), and a fresh process that can
import TensorFlow and tensorflow-text but not bert_tf. Exports made by the
command-line tools are tests/test_export_commands.py.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from export_references import LABELS
from export_references import SEQ_LENGTH
from export_references import keras_probabilities
from export_references import packed
from prediction_log import serving_message_classes
from serving_process import call_in_fresh_process

from bert_tf import serving
from bert_tf.cli.command import one_line
from bert_tf.serving import saved_model_exporter as exporter
from bert_tf.serving import warmup
from bert_tf.serving.signature_module import WARMUP_TEXTS
from bert_tf.text import tokenization
from bert_tf.text.input_schema import ENCODER_INPUT_NAMES

EDGE_TEXTS = [
    "",
    "word " * 20000,  # 100,000 characters
    "Ελληνικά, русский, 中文字, العربية, हिन्दी, 🙂 Ünïcödé",
    "The quick brown fox.",
]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope="module")
def exported(models, vocab_file, tmp_path_factory):
    base = tmp_path_factory.mktemp("export")
    options = {
        "classifier": {"label_list": LABELS, "text_pair": True},
        # The 100,000-byte edge text makes 694 windows of 32 pieces.
        "span": {"max_query_length": 8, "max_answer_length": 5, "max_windows": 1000},
        "encoder": {},
    }
    exports = {
        kind: serving.export_saved_model(
            models[kind],
            str(base / kind),
            vocab_file,
            True,
            SEQ_LENGTH,
            **options[kind],
        )
        for kind in models
    }
    exports["classifier_bfloat16"] = serving.export_saved_model(
        models["classifier"],
        str(base / "classifier_bfloat16"),
        vocab_file,
        True,
        SEQ_LENGTH,
        dtype="bfloat16",
        save_keras=False,
        **options["classifier"],
    )
    return exports


@pytest.mark.slow
def test_every_signature_in_a_process_without_bert_tf(
    exported, models, vocab_file, tmp_path
):
    texts_b = ["a short second segment", "b", "", "c " * 50]
    tokens = packed(vocab_file, EDGE_TEXTS, texts_b)
    token_inputs = {k: v.tolist() for k, v in tokens.items()}
    questions = ["Who wrote it?", "", "什么?", "x " * 300]
    calls = [
        {
            "dir": exported["classifier"],
            "signature": "serving_default",
            "inputs": {"text_a": EDGE_TEXTS, "text_b": texts_b},
        },
        {
            "dir": exported["classifier"],
            "signature": "serve_tokenized",
            "inputs": token_inputs,
        },
        {
            "dir": exported["span"],
            "signature": "serving_default",
            "inputs": {"question": questions, "context": EDGE_TEXTS},
        },
        {
            "dir": exported["span"],
            "signature": "serve_tokenized",
            "inputs": token_inputs,
        },
        {
            "dir": exported["encoder"],
            "signature": "serving_default",
            "inputs": {"text_a": EDGE_TEXTS},
        },
        {
            "dir": exported["encoder"],
            "signature": "serve_tokenized",
            "inputs": token_inputs,
        },
        {
            "dir": exported["classifier_bfloat16"],
            "signature": "serving_default",
            "inputs": {"text_a": EDGE_TEXTS, "text_b": texts_b},
        },
        {
            "dir": exported["classifier_bfloat16"],
            "signature": "serve_tokenized",
            "inputs": token_inputs,
        },
    ]
    results = call_in_fresh_process(tmp_path, calls)
    classifier_text, classifier_tokens, span_text, span_tokens = results[:4]
    encoder_text, encoder_tokens, bf16_text, bf16_tokens = results[4:]

    expected = keras_probabilities(models, vocab_file, EDGE_TEXTS, texts_b)
    for outputs in (classifier_text, classifier_tokens):
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5)
        np.testing.assert_array_equal(outputs["label_ids"], expected.argmax(-1))
        assert [s.decode() for s in outputs["labels"]] == [
            LABELS[i] for i in expected.argmax(-1)
        ]

    for outputs in (bf16_text, bf16_tokens):
        assert outputs["probabilities"].dtype == np.float32
        np.testing.assert_allclose(outputs["probabilities"], expected, atol=0.02)

    keras_span = models["span"](tokens, training=False)
    np.testing.assert_allclose(
        span_tokens["start_logits"], keras_span["start_logits"], atol=1e-5
    )
    _check_answer_offsets(span_text, EDGE_TEXTS)

    single = packed(vocab_file, EDGE_TEXTS)
    keras_encoder = models["encoder"](single, training=False)
    np.testing.assert_allclose(
        encoder_text["pooled_output"], keras_encoder["pooled_output"], atol=1e-5
    )
    np.testing.assert_allclose(
        encoder_text["sequence_output"], keras_encoder["sequence_output"], atol=1e-5
    )
    paired = models["encoder"](tokens, training=False)
    np.testing.assert_allclose(
        encoder_tokens["pooled_output"], paired["pooled_output"], atol=1e-5
    )


def _check_answer_offsets(outputs, contexts):
    """Answers are the context's bytes at their offsets (whitespace runs as
    one space); n-best probabilities sum to 1; no answer means offsets -1."""
    for row, context in enumerate(contexts):
        data = context.encode("utf-8")
        start, end = outputs["answer_start"][row], outputs["answer_end"][row]
        text = outputs["answer_text"][row].decode()
        if start < 0:
            assert text == "" and end < 0
            continue
        assert text == re.sub(r"[ \t\r\n\u202f]+", " ", data[start:end].decode())
        probabilities = outputs["nbest_probability"][row]
        np.testing.assert_allclose(probabilities.sum(), 1.0, rtol=1e-5)
        pieces = outputs["token_start"][row] >= 0
        assert pieces.sum() == len(outputs["token_start"][row][pieces])


@pytest.mark.slow
def test_span_offsets_recover_the_answer_words(exported, vocab_file):
    span = tf.saved_model.load(exported["span"]).signatures["serving_default"]
    context = "Steve Smith's car, Ünïcödé-test isn't red."
    out = span(question=tf.constant(["q"]), context=tf.constant([context]))
    data = context.encode("utf-8")
    spans = [
        data[s:e].decode()
        for s, e in zip(
            out["token_start"][0].numpy(), out["token_end"][0].numpy(), strict=True
        )
        if s >= 0
    ]
    # Each word piece maps back to its own characters, also in a word whose
    # bytes change when lower-cased and stripped of accents.
    assert spans[:6] == ["Steve", "Smith", "'", "s", "car", ","]
    assert "".join(spans) == "".join(context.split())
    assert spans[-1] == "."


@pytest.mark.slow
def test_batch_sizes_one_and_256(exported, models, vocab_file):
    classifier = tf.saved_model.load(exported["classifier"])
    signature = classifier.signatures["serving_default"]
    for batch in (1, 256):
        texts_a = [f"sentence number {i} of the batch" for i in range(batch)]
        texts_b = [f"and its pair {i}" for i in range(batch)]
        out = signature(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
        assert out["probabilities"].shape == (batch, 2)
        expected = keras_probabilities(models, vocab_file, texts_a[:4], texts_b[:4])
        np.testing.assert_allclose(out["probabilities"][:4], expected, atol=1e-5)


@pytest.mark.slow
def test_wrong_dtype_is_a_clear_error(exported):
    signature = tf.saved_model.load(exported["classifier"]).signatures[
        "serve_tokenized"
    ]
    ids = tf.constant([[101, 102]], tf.int64)
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError, ValueError)) as e:
        signature(input_ids=ids, input_mask=ids, segment_ids=ids)
    assert "int32" in str(e.value) and "int64" in str(e.value)
    with pytest.raises((tf.errors.InvalidArgumentError, TypeError, ValueError)) as e:
        classifier = tf.saved_model.load(exported["classifier"])
        classifier.signatures["serving_default"](
            text_a=tf.constant([1.0]), text_b=tf.constant([2.0])
        )
    assert "string" in str(e.value)


@pytest.mark.slow
def test_saved_model_cli_show_lists_signatures(exported):
    shown = subprocess.run(
        ["saved_model_cli", "show", "--all", "--dir", exported["classifier"]],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    ).stdout
    signatures = _parse_saved_model_cli_show(shown)
    assert signatures["serving_default"]["inputs"] == {
        "text_a": ("DT_STRING", "(-1)"),
        "text_b": ("DT_STRING", "(-1)"),
    }
    assert signatures["serve_tokenized"]["inputs"] == {
        name: ("DT_INT32", "(-1, -1)") for name in ENCODER_INPUT_NAMES
    }
    for name in ("serving_default", "serve_tokenized"):
        assert signatures[name]["method"] == "tensorflow/serving/predict"
        assert signatures[name]["outputs"] == {
            "probabilities": ("DT_FLOAT", "(-1, 2)"),
            "label_ids": ("DT_INT32", "(-1)"),
            "labels": ("DT_STRING", "(-1)"),
        }


def _parse_saved_model_cli_show(text):
    """{signature: {"inputs"/"outputs": {name: (dtype, shape)}, "method": ...}}"""
    signatures = {}
    current = section = name = None
    for line in text.splitlines():
        line = line.strip()
        if match := re.match(r"signature_def\['(\w+)'\]", line):
            current = signatures.setdefault(
                match.group(1), {"inputs": {}, "outputs": {}}
            )
        elif "following input(s):" in line:
            section = "inputs"
        elif "following output(s):" in line:
            section = "outputs"
        elif line.startswith("Method name is:"):
            current["method"] = line.split(":", 1)[1].strip()
        elif match := re.match(r"\w+\['(\w+)'\] tensor_info:", line):
            name = match.group(1)
            current[section][name] = ()
        elif line.startswith(("dtype:", "shape:")) and name:
            current[section][name] += (line.split(":", 1)[1].strip(),)
    return signatures


@pytest.mark.slow
def test_saved_model_cli_run_on_raw_strings(exported, models, vocab_file, tmp_path):
    """The serving guide's saved_model_cli command (with tensorflow-text's ops loaded,
    as the model server has them) returns the Keras model's probabilities."""
    texts_a = ["The cat sat on the mat.", "Ünïcödé and 中文"]
    texts_b = ["A cat was sitting.", ""]
    outdir = tmp_path / "cli"
    subprocess.run(
        [
            *SAVED_MODEL_CLI_WITH_TEXT_OPS,
            "run",
            "--dir",
            exported["classifier"],
            "--tag_set",
            "serve",
            "--signature_def",
            "serving_default",
            "--input_exprs",
            f"text_a={texts_a!r};text_b={texts_b!r}",
            "--outdir",
            str(outdir),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    got = np.load(outdir / "probabilities.npy")
    expected = keras_probabilities(models, vocab_file, texts_a, texts_b)
    np.testing.assert_allclose(got, expected, atol=1e-5)


SAVED_MODEL_CLI_WITH_TEXT_OPS = [
    sys.executable,
    "-c",
    "import sys, tensorflow_text; from tensorflow.python.tools import saved_model_cli; "
    "sys.argv[0] = 'saved_model_cli'; saved_model_cli.main()",
]


@pytest.mark.slow
def test_layout_version_and_atomic_rename(exported, models, vocab_file, tmp_path):
    version_dir = exported["encoder"]
    base = os.path.dirname(version_dir)
    assert os.path.basename(version_dir) == "1"
    assert sorted(os.listdir(base)) == ["1", "1.keras", exporter.BATCHING_FILE]
    with open(os.path.join(base, exporter.BATCHING_FILE)) as f:
        assert "pad_variable_length_inputs: true" in f.read()
    assert os.path.exists(os.path.join(version_dir, "saved_model.pb"))
    assert os.path.exists(os.path.join(version_dir, exporter.WARMUP_FILE))
    with open(os.path.join(exported["classifier"], exporter.METADATA_FILE)) as f:
        metadata = json.load(f)
    assert metadata["model"] == "classifier" and metadata["labels"] == LABELS
    assert metadata["signatures"]["serving_default"] == ["text_a", "text_b"]

    # A newer export gets a higher version; an existing one is refused.
    newer = serving.export_saved_model(
        models["encoder"], base, vocab_file, True, SEQ_LENGTH, save_keras=False
    )
    assert os.path.basename(newer) == "2"
    with pytest.raises(ValueError, match=f"version 2 already exists .*{newer}"):
        serving.export_saved_model(
            models["encoder"],
            base,
            vocab_file,
            True,
            SEQ_LENGTH,
            version=int(os.path.basename(newer)),
        )
    # Versions TF Serving never loads, and an export_dir that is a file.
    with pytest.raises(ValueError, match="^version=-1") as error:
        exporter.check_export_dir(base, -1)
    # The tools name their flag.
    assert one_line(error.value).startswith("--export_version=-1: must be a positive")
    with pytest.raises(ValueError, match=f"^export_dir={re.escape(newer)}.*not a dir"):
        exporter.check_export_dir(newer + "/saved_model.pb")
    # A killed export's temporary folder (its pid is gone) is removed by the
    # next export; a live one's stays.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True).stdout.strip()  # fmt: skip
    host = socket.gethostname()
    debris = os.path.join(base, f".tmp-3-{host}-{dead}-{'0' * 32}")
    live = os.path.join(base, f".tmp-3-{host}-{os.getpid()}-{'1' * 32}")
    for path in (debris, live):
        os.makedirs(os.path.join(path, "variables"))
    exporter.remove_abandoned_exports(base)
    assert not os.path.exists(debris) and os.path.exists(live)
    shutil.rmtree(live)

    # A failure half-way leaves neither a version nor a temporary directory.
    failing = str(tmp_path / "failing")

    class Boom(RuntimeError):
        pass

    def fail(*args, **kwargs):
        raise Boom("disk full")

    original = warmup.write_warmup_requests
    warmup.write_warmup_requests = fail
    try:
        with pytest.raises(Boom):
            serving.export_saved_model(
                models["encoder"], failing, vocab_file, True, SEQ_LENGTH
            )
    finally:
        warmup.write_warmup_requests = original
    assert os.listdir(failing) == []


@pytest.mark.slow
def test_keras_file_in_the_export_loads_with_identical_outputs(
    exported, models, vocab_file
):
    tokens = packed(vocab_file, ["a first text", "another"], ["b", "c"])
    for kind in ("classifier", "span"):
        path = exporter.keras_path(exported[kind])
        assert path == exported[kind] + ".keras"
        revived = keras.saving.load_model(path)
        assert type(revived) is type(models[kind])
        want = models[kind](tokens, training=False)
        got = revived(tokens, training=False)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])


def _file_bytes(directory):
    return sum(
        os.path.getsize(os.path.join(root, name))
        for root, _, names in os.walk(directory)
        for name in names
    )


@pytest.mark.slow
def test_each_weight_is_stored_once_and_no_keras_file_is_served(exported, models):
    for kind in ("classifier", "span", "encoder"):
        version_dir = exported[kind]
        weight_bytes = 4 * models[kind].count_params()
        assert not [
            name
            for _, _, names in os.walk(version_dir)
            for name in names
            if name.endswith(".keras")
        ]
        stored = _file_bytes(os.path.join(version_dir, "variables"))
        # Every weight the signatures use, once (the span head has no pooler).
        assert 0.97 * weight_bytes < stored < 1.02 * weight_bytes, (kind, stored)
        # The rest (graph with the vocabulary tables, warmup requests) is a
        # fixed cost that does not grow with the model: 2-3 MB here, where the
        # weights are 4 MB; 1.03x the weights for MiniLM's 87 MB
        # (benchmarks/export_size.py).
        assert _file_bytes(version_dir) - stored < 3.5e6, kind


@pytest.mark.slow
def test_warmup_requests_decode_as_prediction_logs(exported):
    """Decoded with message classes built here from the field numbers of
    tensorflow_serving/apis (prediction_log, predict, model .proto), then
    replayed against the loaded signatures."""
    prediction_log = serving_message_classes()
    path = os.path.join(exported["classifier"], exporter.WARMUP_FILE)
    records = list(tf.data.TFRecordDataset(path).as_numpy_iterator())
    assert len(records) == 2
    model = tf.saved_model.load(exported["classifier"])
    seen = []
    for record in records:
        log = prediction_log.FromString(record)
        request = log.predict_log.request
        name = request.model_spec.signature_name
        inputs = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}
        signature = model.signatures[name]
        expected_names = set(signature.structured_input_signature[1])
        assert set(inputs) == expected_names
        outputs = signature(**{k: tf.constant(v) for k, v in inputs.items()})
        assert outputs["probabilities"].shape[0] == len(WARMUP_TEXTS)
        seen.append(name)
    assert seen == ["serving_default", "serve_tokenized"]


@pytest.mark.slow
def test_readme_rest_request_matches_the_signature(exported, models, vocab_file):
    """The serving guide's TF Serving request bodies use our signature and input
    names; each row answers the same as the Keras model."""
    guide = os.path.join(REPO, "docs", "guides", "serving.md")
    with open(guide, encoding="utf-8") as f:
        text = f.read()
    bodies = re.findall(r"```json\n(.*?)```", text, flags=re.S)
    requests = [json.loads(b) for b in bodies if '"signature_name"' in b]
    assert requests, "docs/guides/serving.md documents no TF Serving request JSON"
    classifier = tf.saved_model.load(exported["classifier"])
    for body in requests:
        signature = classifier.signatures[body["signature_name"]]
        names = set(signature.structured_input_signature[1])
        # REST "instances" (row format): one object per example, its keys the
        # signature's inputs; the server batches them into columns.
        rows = body["instances"]
        assert all(set(row) == names for row in rows), (set(rows[0]), names)
        columns = {name: tf.constant([row[name] for row in rows]) for name in names}
        outputs = signature(**columns)
        if body["signature_name"] == "serving_default":
            expected = keras_probabilities(
                models,
                vocab_file,
                [r["text_a"] for r in rows],
                [r["text_b"] for r in rows],
            )
            np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5)


def _sst2_sentences(shared_data, count):
    path = os.path.join(shared_data, "glue", "SST-2", "dev.tsv")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    with open(path, encoding="utf-8") as f:
        return [line.split("\t")[0] for line in f.read().splitlines()[1:]][:count]


@pytest.mark.slow
def test_requests_are_padded_to_their_longest_row(
    exported, models, vocab_file, shared_data
):
    """Real sentences of mixed length: the raw-text signatures pad to the
    batch's longest row and answer as the fixed-length model does."""
    tokenizer = tokenization.FullTokenizer(vocab_file, True)
    sentences = [
        s
        for s in _sst2_sentences(shared_data, 100)
        if len(tokenizer.tokenize(s)) < SEQ_LENGTH - 6
    ][:24]
    fixed = packed(vocab_file, sentences)
    longest = int(fixed["input_mask"].sum(1).max())
    assert longest < SEQ_LENGTH and fixed["input_mask"].sum(1).min() < longest
    encoder = tf.saved_model.load(exported["encoder"]).signatures["serving_default"]
    out = encoder(text_a=tf.constant(sentences))
    assert out["sequence_output"].shape[1] == longest
    want = models["encoder"](fixed, training=False)
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=1e-5)
    mask = fixed["input_mask"][:, :longest, None] > 0
    np.testing.assert_allclose(
        np.where(mask, out["sequence_output"], 0),
        np.where(mask, want["sequence_output"][:, :longest], 0),
        atol=1e-5,
    )
    pairs = list(zip(sentences[::2], sentences[1::2], strict=True))
    classifier = tf.saved_model.load(exported["classifier"])
    got = classifier.signatures["serving_default"](
        text_a=tf.constant([a for a, _ in pairs]),
        text_b=tf.constant([b for _, b in pairs]),
    )
    expected = keras_probabilities(
        models, vocab_file, [a for a, _ in pairs], [b for _, b in pairs]
    )
    np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5)
    # serve_tokenized takes any width up to the sequence length.
    narrow = {k: tf.constant(v[:, :longest]) for k, v in packed(
        vocab_file, [a for a, _ in pairs], [b for _, b in pairs]
    ).items()}  # fmt: skip
    got = classifier.signatures["serve_tokenized"](**narrow)
    np.testing.assert_allclose(got["probabilities"], expected, atol=1e-5)


@pytest.mark.slow
def test_text_pair_batch_size_mismatch_names_both_sizes(exported):
    signature = tf.saved_model.load(exported["classifier"]).signatures[
        "serving_default"
    ]
    with pytest.raises(tf.errors.InvalidArgumentError) as error:
        signature(text_a=tf.constant(["a", "b", "c"]), text_b=tf.constant(["x", "y"]))
    assert "text_a has 3 rows but text_b has 2" in str(error.value)
    span = tf.saved_model.load(exported["span"]).signatures["serving_default"]
    with pytest.raises(tf.errors.InvalidArgumentError, match="question has 1 rows"):
        span(question=tf.constant(["q"]), context=tf.constant(["a", "b"]))


@pytest.mark.slow
def test_bfloat16_export_computes_in_bfloat16(exported):
    loaded = tf.saved_model.load(exported["classifier_bfloat16"])
    graph = loaded.signatures["serve_tokenized"].graph.as_graph_def()
    functions = [graph.node, *(f.node_def for f in graph.library.function)]
    matmul_types = {
        node.attr["T"].type
        for nodes in functions
        for node in nodes
        if node.op in ("MatMul", "BatchMatMulV2", "_FusedMatMul")
    }
    assert tf.bfloat16.as_datatype_enum in matmul_types
    assert tf.float32.as_datatype_enum not in matmul_types
    with open(
        os.path.join(exported["classifier_bfloat16"], exporter.METADATA_FILE)
    ) as f:
        assert json.load(f)["dtype"] == "bfloat16"


@pytest.mark.slow
def test_request_shapes_as_a_model_server_passes_them(exported):
    """A model server hands the graph the tensor a client sent, whatever the
    signature declares: a [2, 2] (or [2, 1]) text is an error naming the
    input and shape, not answers for 4 rows; an empty batch gives 0 rows;
    the span model's request bounds are in its metadata."""
    classifier = tf.saved_model.load(exported["classifier"])
    signature = classifier.signatures["serving_default"]
    # A loaded signature, like a model server, passes the tensor on as sent.
    with pytest.raises(
        tf.errors.InvalidArgumentError, match=r"text_a.*\[2,2\] is not compatible"
    ):
        signature(
            text_a=tf.constant([["a", "b"], ["c", "d"]]), text_b=tf.constant(["x", "y"])
        )
    empty = tf.constant([], tf.string)
    assert signature(text_a=empty, text_b=empty)["labels"].shape == (0,)
    span = tf.saved_model.load(exported["span"]).signatures["serving_default"]
    assert span(question=empty, context=empty)["answer_text"].shape == (0,)
    path = os.path.join(exported["span"], "assets.extra", "bert_tf_export.json")
    with open(path) as f:
        metadata = json.load(f)
    assert metadata["max_context_bytes"] > 0 and metadata["max_windows"] == 1000
