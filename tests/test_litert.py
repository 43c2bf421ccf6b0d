"""LiteRT export: raw text in, the Keras model's answers out.

References: the Keras models fed by the original `FullTokenizer` and packing
(`bert_tf.data_prep.glue.convert_single_example`), on tiny random-weight
models with the real uncased vocabulary; the tokenizer is compared with
`FullTokenizer` on every sentence of the shared GLUE/SQuAD/WNUT data and on
the Unicode torture strings.
"""

import functools
import json
import os
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_models import tiny_bert_config
from tokenizer_torture import documented_difference
from tokenizer_torture import generate_torture_strings

import bert_tf
from bert_tf.data_prep import conll
from bert_tf.data_prep import glue
from bert_tf.text import tokenization

pytest.importorskip("ai_edge_litert", reason="ai-edge-litert ([litert]) is missing")

from bert_tf.serving.litert_exporter import export_litert  # noqa: E402
from bert_tf.serving.litert_model import LiteRTModel  # noqa: E402
from bert_tf.serving.litert_preprocessor import LiteRTPreprocessor  # noqa: E402

SEQ_LENGTH = 24
TAGS = ["O", "B-person", "I-person", "B-location", "I-location"]
TEXTS_A = [
    "The quick brown fox jumps over the lazy dog.",
    "Angela Merkel visited Paris's Louvre on Tuesday with 3 friends!",
    "Ünïcödé café, naïve résumé",
    "word " * 40,
]
TEXTS_B = ["A dog.", "", "Short.", "another " * 40]
GLUE_TASKS = (
    ("cola", "CoLA"),
    ("mrpc", "MRPC"),
    ("sst-2", "SST-2"),
    ("sts-b", "STS-B"),
)


def _vocab(shared_data):
    path = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


# --- tokenizer fidelity -------------------------------------------------------


@functools.cache
def _real_sentences(data_dir):
    """Every text of the shared GLUE (train/dev/test), SQuAD dev (contexts and
    questions) and WNUT-17 dev sentences."""
    texts = set()
    for task, folder in GLUE_TASKS:
        processor = glue.get_processor(task)
        path = os.path.join(data_dir, "glue", folder)
        for read in (
            processor.get_train_examples,
            processor.get_dev_examples,
            processor.get_test_examples,
        ):
            for example in read(path):
                texts.update(t for t in (example.text_a, example.text_b) if t)
    with open(os.path.join(data_dir, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        for article in json.load(f)["data"]:
            for paragraph in article["paragraphs"]:
                texts.add(paragraph["context"])
                texts.update(qa["question"] for qa in paragraph["qas"])
    wnut = os.path.join(data_dir, "ner", "wnut17", "emerging.dev.conll")
    texts.update(" ".join(s.words) for s in conll.read_conll(wnut))
    return sorted(texts)


def _mismatches(vocab, lower, strings):
    preprocessor = LiteRTPreprocessor(vocab, lower, 128)
    tokenizer = tokenization.FullTokenizer(vocab, lower)
    bad = []
    for start in range(0, len(strings), 2000):
        chunk = strings[start : start + 2000]
        ids, lengths, _, _ = preprocessor.tokenize(tf.constant(chunk))
        for text, row, length in zip(chunk, ids.numpy(), lengths.numpy(), strict=True):
            want = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(text))
            if row[:length].tolist() != want:
                bad.append(text)
    return bad


@pytest.mark.slow
@pytest.mark.parametrize("lower", [True, False])
def test_fast_tokenizer_matches_full_tokenizer_on_the_shared_data(shared_data, lower):
    vocab = _vocab(shared_data)
    sentences = _real_sentences(shared_data)
    assert len(sentences) > 100_000
    bad = _mismatches(vocab, lower, sentences)
    # 29 of 117,330 (uncased) and 2 (cased) on 2026-11-25: each one holds a
    # documented character.
    assert len(bad) <= 40, bad[:5]
    unexplained = [
        s for s in bad if not any(documented_difference(c, lower) for c in s)
    ]
    assert not unexplained, unexplained[:5]


@pytest.mark.slow
def test_torture_string_differences_are_the_documented_characters(shared_data):
    vocab = _vocab(shared_data)
    strings = generate_torture_strings(6000, 0, data_dir=shared_data)
    bad = _mismatches(vocab, True, strings)
    # Without their documented characters the strings tokenize as the original.
    cleaned = ["".join(c for c in s if not documented_difference(c, True)) for s in bad]
    still = _mismatches(vocab, True, cleaned)
    assert len(still) <= 0.05 * len(strings), still[:5]


# --- export -------------------------------------------------------------------


def _original_inputs(vocab, texts_a, texts_b=None, seq_length=SEQ_LENGTH):
    """The original's packing of the Python FullTokenizer's tokens, cut to the
    longest row (the LiteRT model pads each request to its longest row)."""
    tokenizer = tokenization.FullTokenizer(vocab, True)
    rows = []
    for index, text_a in enumerate(texts_a):
        text_b = texts_b[index] if texts_b else None
        example = glue.InputExample(f"x-{index}", text_a, text_b or None, "0")
        feature = glue.convert_single_example(
            index, example, ["0"], seq_length, tokenizer
        )
        rows.append(feature)
    width = max(sum(f.input_mask) for f in rows)
    return {
        name: np.array([getattr(f, name)[:width] for f in rows], np.int32)
        for name in ("input_ids", "input_mask", "segment_ids")
    }


@pytest.fixture(scope="module")
def tiny_models():
    keras.utils.set_random_seed(5)
    config = tiny_bert_config(30522, intermediate_size=48, dropout=0.0)
    return {
        "classifier": bert_tf.BertClassifier(config, num_labels=2),
        "tagger": bert_tf.BertTokenClassifier(config, num_labels=len(TAGS)),
        "span": bert_tf.BertSpanLabeler(config),
        "encoder": bert_tf.BertEncoder(config),
        "embedding": bert_tf.BertSentenceEncoder(bert_tf.BertEncoder(config)),
    }


@pytest.fixture(scope="module")
def exported(tiny_models, shared_data, tmp_path_factory):
    vocab = _vocab(shared_data)
    directory = tmp_path_factory.mktemp("litert")
    options = {
        "classifier": {"label_list": ["no", "yes"], "text_pair": True},
        "tagger": {"label_list": TAGS},
        "span": {"max_query_length": 8},
        "encoder": {},
        "embedding": {},
    }
    paths = {}
    for kind, model in tiny_models.items():
        for quantization in (
            ("none", "dynamic_int8") if kind == "classifier" else ("none",)
        ):
            path = str(directory / f"{kind}-{quantization}.tflite")
            export_litert(
                model,
                path,
                vocab,
                True,
                SEQ_LENGTH,
                quantization=quantization,
                **options[kind],
            )
            paths[kind, quantization] = path
    return paths


@pytest.mark.slow
def test_classifier_answers_raw_text_as_the_keras_model(
    exported, tiny_models, shared_data
):
    vocab = _vocab(shared_data)
    model = LiteRTModel(exported["classifier", "none"])
    assert model.metadata["model"] == "classifier"
    assert model.metadata["labels"] == ["no", "yes"]
    assert model.input_names == ["text_a", "text_b"]
    got = model(text_a=TEXTS_A, text_b=TEXTS_B)
    inputs = _original_inputs(vocab, TEXTS_A, TEXTS_B)
    logits = tiny_models["classifier"](inputs)["logits"].numpy()
    want = tf.nn.softmax(logits).numpy()
    np.testing.assert_allclose(got["probabilities"], want, atol=2e-5)
    np.testing.assert_array_equal(got["label_ids"], want.argmax(-1))
    assert [s.decode() for s in got["labels"]] == [
        ["no", "yes"][i] for i in want.argmax(-1)
    ]
    # serve_tokenized on the original's ids gives the same probabilities.
    tokenized = model.tokenized(**inputs)
    np.testing.assert_allclose(tokenized["probabilities"], want, atol=2e-5)
    # int8 weights: about a quarter of the float32 weights (the tokenizer's
    # vocabulary, the rest of the file, stays as it is), close answers.
    int8 = LiteRTModel(exported["classifier", "dynamic_int8"])
    assert int8.metadata["quantization"] == "dynamic_int8"
    weight_bytes = sum(4 * w.numpy().size for w in tiny_models["classifier"].weights)
    rest = os.path.getsize(exported["classifier", "none"]) - weight_bytes
    assert 0 < rest < weight_bytes
    int8_weights = os.path.getsize(exported["classifier", "dynamic_int8"]) - rest
    assert int8_weights < 0.35 * weight_bytes
    np.testing.assert_allclose(
        int8(text_a=TEXTS_A, text_b=TEXTS_B)["probabilities"], want, atol=0.05
    )
    # Written with the mode of every other output (0666 less the umask).
    umask = os.umask(0)
    os.umask(umask)
    for path in exported.values():
        assert os.stat(path).st_mode & 0o777 == 0o666 & ~umask, path


@pytest.mark.slow
def test_tagger_tags_word_starts_with_byte_offsets(exported, tiny_models, shared_data):
    vocab = _vocab(shared_data)
    model = LiteRTModel(exported["tagger", "none"])
    assert model.metadata["labels"] == TAGS
    texts = TEXTS_A[:3]
    got = model(text=texts)
    inputs = _original_inputs(vocab, texts)
    logits = tiny_models["tagger"](inputs)["logits"].numpy()
    np.testing.assert_allclose(got["logits"], logits, atol=5e-5)
    np.testing.assert_array_equal(got["tag_ids"], logits.argmax(-1))
    inverse = {i: t for t, i in tokenization.load_vocab(vocab).items()}
    for row, text in enumerate(texts):
        data = text.encode("utf-8")
        for position, token_id in enumerate(inputs["input_ids"][row]):
            token = inverse[int(token_id)]
            start = got["token_start"][row, position]
            end = got["token_end"][row, position]
            tag = got["tags"][row, position].decode()
            if token in ("[CLS]", "[SEP]", "[PAD]"):
                assert (start, end, tag) == (-1, -1, "")
                continue
            span = data[start:end].decode("utf-8")
            normalized = "".join(tokenization.BasicTokenizer(True).tokenize(span))
            assert token.removeprefix("##") in normalized, (token, span)
            assert tag == (
                "" if token.startswith("##") else TAGS[logits[row, position].argmax()]
            )


@pytest.mark.slow
def test_span_and_encoder_outputs(exported, tiny_models, shared_data):
    vocab = _vocab(shared_data)
    question, context = (
        ["Who visited Paris?"],
        ["Angela Merkel visited Paris's Louvre."],
    )
    got = LiteRTModel(exported["span", "none"])(question=question, context=context)
    inputs = _original_inputs(vocab, question, context)
    want = tiny_models["span"](inputs)
    np.testing.assert_allclose(got["start_logits"], want["start_logits"], atol=5e-5)
    np.testing.assert_allclose(got["end_logits"], want["end_logits"], atol=5e-5)
    # Offsets point into the context, -1 on the question and special tokens.
    segment = inputs["segment_ids"][0]
    assert (got["token_start"][0][segment == 0] == -1).all()
    first_context = int(np.argmax(segment))
    assert got["token_start"][0, first_context] == 0
    encoder = LiteRTModel(exported["encoder", "none"])
    out = encoder(text_a=TEXTS_A[:2])
    want = tiny_models["encoder"](_original_inputs(vocab, TEXTS_A[:2]))
    np.testing.assert_allclose(out["pooled_output"], want["pooled_output"], atol=5e-5)
    np.testing.assert_allclose(
        out["sequence_output"], want["sequence_output"], atol=5e-5
    )
    embedding = LiteRTModel(exported["embedding", "none"])
    assert embedding.input_names == ["text"]
    want = tiny_models["embedding"](_original_inputs(vocab, TEXTS_A[:2]))
    np.testing.assert_allclose(
        embedding(text=TEXTS_A[:2])["embeddings"], want, atol=5e-5
    )
    with pytest.raises(ValueError, match="encoder export, not an embedding one"):
        encoder.encode(TEXTS_A[:2])


# A 20,000-character text: each family cuts it by word pieces, as the encoder's
# own preprocessing does (the original's packing of the Python tokenizer's
# pieces), not by characters, and keeps its answer to the text's head.
LONG = ("Angela Merkel visited Paris's Louvre on Tuesday; Ünïcödé café. " * 320)[:20000]


@pytest.mark.slow
def test_20000_character_texts_are_cut_by_word_pieces(
    exported, tiny_models, shared_data
):
    vocab = _vocab(shared_data)
    short = TEXTS_A[0]
    # classifier: the long text first and second of a pair, and alone.
    pairs = ([LONG, short, LONG], [short, LONG, ""])
    got = LiteRTModel(exported["classifier", "none"])(text_a=pairs[0], text_b=pairs[1])
    logits = tiny_models["classifier"](_original_inputs(vocab, *pairs))["logits"]
    want = tf.nn.softmax(logits).numpy()
    np.testing.assert_allclose(got["probabilities"], want, atol=2e-5)
    inputs = _original_inputs(vocab, [LONG, short])
    for kind, output in (("encoder", "sequence_output"), ("tagger", "logits")):
        got = LiteRTModel(exported[kind, "none"])(
            **{"text_a" if kind == "encoder" else "text": [LONG, short]}
        )
        want = tiny_models[kind](inputs)[output].numpy()
        np.testing.assert_allclose(got[output], want, atol=5e-5)
    got = LiteRTModel(exported["embedding", "none"])(text=[LONG, short])
    want = tiny_models["embedding"](inputs)
    np.testing.assert_allclose(got["embeddings"], want, atol=5e-5)
    question = ["Who visited Paris?"]
    got = LiteRTModel(exported["span", "none"])(question=question, context=[LONG])
    want = tiny_models["span"](_original_inputs(vocab, question, [LONG]))
    np.testing.assert_allclose(got["start_logits"], want["start_logits"], atol=5e-5)
    # The context's offsets stay in its first pieces' bytes.
    assert 0 < got["token_end"].max() < 200


# --- CRF tagger ---------------------------------------------------------------


def _wnut(shared_data, count=None):
    """(sentences, IOB2 tags in order of appearance) of WNUT-17 dev."""
    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    sentences = conll.read_conll(path)
    tags = list(dict.fromkeys(t for s in sentences for t in s.tags))
    return [" ".join(s.words) for s in sentences[:count]], tags


@pytest.fixture(scope="module")
def crf_checkpoint(shared_data, tmp_path_factory):
    """(directory, labels) of a tiny CRF tagger saved as run_ner.py saves it,
    with transitions large enough that Viterbi and argmax disagree."""
    from bert_tf.checkpoints.tf1_checkpoint import save_tf1_checkpoint

    _, labels = _wnut(shared_data, 0)
    keras.utils.set_random_seed(7)
    config = tiny_bert_config(30522, intermediate_size=48, dropout=0.0)
    model = bert_tf.BertTokenClassifier(config, num_labels=len(labels), crf=True)
    rng = np.random.default_rng(7)
    for variable in model.crf.weights:
        variable.assign(3 * rng.normal(size=variable.shape).astype(np.float32))
    directory = tmp_path_factory.mktemp("crf_tagger")
    save_tf1_checkpoint(model, directory / "model.ckpt-1")
    return directory, labels


def _tagger_options(directory, labels, shared_data, **crf):
    from bert_tf.options.litert_export_options import LiteRTExportOptions

    return LiteRTExportOptions(
        "tagger",
        str(directory),
        str(directory / f"tagger-{len(crf)}.tflite"),
        vocab_file=_vocab(shared_data),
        labels=labels,
        max_seq_length=64,
        quantization="none",
        **crf,
    )


def test_crf_flag_must_match_the_checkpoint(crf_checkpoint, shared_data, tmp_path):
    from bert_tf.checkpoints.tf1_checkpoint import save_tf1_checkpoint
    from bert_tf.tasks import litert_export

    directory, labels = crf_checkpoint
    # --nouse_crf would drop the transitions: argmax tags.
    with pytest.raises(bert_tf.UserInputError, match="CRF tagger.*add use_crf"):
        litert_export.run(
            _tagger_options(directory, labels, shared_data, use_crf=False)
        )
    # Left out, with no run recorded beside it: the checkpoint's own CRF.
    path = litert_export.run(_tagger_options(directory, labels, shared_data))
    assert LiteRTModel(path).metadata["decoding"] == "viterbi"
    softmax = bert_tf.BertTokenClassifier(
        tiny_bert_config(30522, intermediate_size=48), num_labels=len(labels)
    )
    save_tf1_checkpoint(softmax, tmp_path / "model.ckpt-1")
    with pytest.raises(bert_tf.UserInputError, match="no CRF transitions"):
        litert_export.run(_tagger_options(tmp_path, labels, shared_data, use_crf=True))
    with pytest.raises(bert_tf.UserInputError, match="add --use_crf"):
        _tagger_options(
            directory, labels, shared_data, crf_constrained=True, use_crf=False
        )


@pytest.mark.slow
def test_crf_tagger_decodes_with_viterbi(crf_checkpoint, shared_data):
    """Constrained (the unconstrained decoder is the same function: test_crf
    checks both against `CRF.decode` and pytorch-crf)."""
    from bert_tf.tasks import litert_export

    constrained = True
    directory, labels = crf_checkpoint
    path = litert_export.run(
        _tagger_options(
            directory,
            labels,
            shared_data,
            use_crf=True,
            crf_constrained=constrained,
        )
    )
    litert = LiteRTModel(path)
    assert litert.metadata["decoding"] == ("viterbi_iob2" if constrained else "viterbi")
    keras_model = bert_tf.BertTokenClassifier.from_checkpoint(
        str(directory),
        num_labels=len(labels),
        crf=True,
        crf_iob2_labels=labels if constrained else None,
    )
    vocab = _vocab(shared_data)
    sentences, _ = _wnut(shared_data, 64)
    # Raw text: those the fast tokenizer splits as the original (one does not).
    sentences = [
        s for s in sentences if not any(documented_difference(c, True) for c in s)
    ][:48]
    inverse = {i: t for t, i in tokenization.load_vocab(vocab).items()}
    differs_from_argmax = 0
    for start in range(0, len(sentences), 16):
        texts = sentences[start : start + 16]
        got = litert(text=texts)
        inputs = _original_inputs(vocab, texts, seq_length=64)
        tokens = np.vectorize(inverse.get)(inputs["input_ids"])
        word_start = (inputs["input_mask"] > 0) & ~np.isin(tokens, ["[CLS]", "[SEP]"])
        word_start &= ~np.char.startswith(tokens.astype(str), "##")
        logits = keras_model(inputs)["logits"]
        want = keras_model.crf.decode(logits, word_start).numpy()
        np.testing.assert_array_equal(np.where(word_start, got["tag_ids"], 0), want)
        names = np.array([*labels, ""])[np.where(word_start, want, len(labels))]
        np.testing.assert_array_equal(got["tags"].astype(str), names)
        tokenized = litert.tokenized(**inputs)
        np.testing.assert_array_equal(
            np.where(word_start, tokenized["tag_ids"], 0), want
        )
        argmax = logits.numpy().argmax(-1)
        differs_from_argmax += int((want != argmax)[word_start].sum())
    assert differs_from_argmax > 0


FRESH_PROCESS = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class Only(importlib.abc.MetaPathFinder):
        # The file must run with ai-edge-litert and tensorflow-text alone.
        # (TensorFlow, under tensorflow-text, probes for keras: let it.)
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("bert_tf",):
                raise ImportError("the LiteRT file must not need " + name)

    sys.meta_path.insert(0, Only())
    import numpy as np
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    interpreter = InterpreterWithCustomOps(
        custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS,
        model_path=sys.argv[1],
    )
    runner = interpreter.get_signature_runner("serving_default")
    out = runner(text_a=np.array([b"He left."]), text_b=np.array([b"He is gone."]))
    print(json.dumps(out["probabilities"].tolist()))
    """
)


@pytest.mark.slow
def test_file_runs_in_a_fresh_process_without_bert_tf(exported, tmp_path):
    script = tmp_path / "run.py"
    script.write_text(FRESH_PROCESS)
    env = {**os.environ, "PYTHONPATH": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(script), exported["classifier", "none"]],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    want = LiteRTModel(exported["classifier", "none"])(
        text_a=["He left."], text_b=["He is gone."]
    )["probabilities"]
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_missing_runtime_names_the_package(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    with pytest.raises(ImportError, match=r'pip install "\.\[litert\]"'):
        LiteRTModel(str(tmp_path / "model.tflite"))


@pytest.mark.slow
def test_embedding_export_takes_the_encoders_own_length_and_casing(
    shared_data, tmp_path
):
    """As the SavedModel export: a sentence-transformers directory's
    max_seq_length (here 24, not the flag's default 128) and casing win."""
    from bert_tf.options.litert_export_options import LiteRTExportOptions
    from bert_tf.serving.embedding_signatures import EmbeddingSignatures
    from bert_tf.tasks import litert_export
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(3)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    encoder = bert_tf.BertSentenceEncoder(
        tiny_bert_config(30522, max_position_embeddings=64, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 24, padding="longest"),
        pooling="mean",
        normalize=True,
    )
    directory = encoder.save_sentence_transformers(str(tmp_path / "st"))
    path = litert_export.run(
        LiteRTExportOptions(
            model_type="embedding",
            init_checkpoint=directory,
            output_file=str(tmp_path / "embedding.tflite"),
            quantization="none",
        )
    )
    model = LiteRTModel(path)
    assert model.metadata["seq_length"] == 24
    assert model.metadata["do_lower_case"] is True
    texts = ["A Long sentence " * 20, "short one"]
    np.testing.assert_allclose(
        model(text=texts)["embeddings"], encoder.encode(texts), atol=5e-5
    )
    # encode: length-sorted batches back in the callers' order, as the Keras
    # model's encode (real STS-B sentences, three batches of unequal widths).
    with open(os.path.join(shared_data, "glue/STS-B/dev.tsv"), encoding="utf-8") as f:
        sentences = [line.split("\t")[7] for line in f.readlines()[1:40]]
    done = []
    vectors = model.encode(
        sentences, batch_size=16, progress=lambda d, t: done.append(d)
    )
    assert done == [16, 32, 39]
    # Issue 48: sorted by word pieces (the file's `tokenize` signature).
    assert model.metadata["signatures"]["tokenize"] == ["text"]
    assert model.metadata["embedding_dim"] == 32
    np.testing.assert_allclose(vectors, encoder.encode(sentences), atol=5e-5)
    np.testing.assert_allclose(model.encode(sentences[5]), vectors[5], atol=1e-6)
    assert model.encode([]).shape == (0, 32)
    # Issue 50: an empty batch answers no rows (the file's kernels failed on
    # it); invalid UTF-8 embeds as the SavedModel's signature embeds it (it
    # differed by 0.43).
    assert model(text=[])["embeddings"].shape == (0, 32)
    dirty = [
        b"Caf\xc3\xa9 \xff\xfe cr\xc3\xa8me \x00br\xc3\xbbl\xc3\xa9e is sw\x80eet.",
        b"\xed\xa0\x80plain text\x00\x00 without trouble",
    ]
    serve_text = EmbeddingSignatures(encoder, encoder.preprocessor).text_endpoint()[0]
    saved = serve_text(tf.constant(dirty))["embeddings"].numpy()
    np.testing.assert_allclose(model.encode(dirty), saved, atol=5e-5)
    # --max_seq_length given: honoured (it exported the encoder's 24 silently).
    shorter = litert_export.run(
        LiteRTExportOptions(
            model_type="embedding",
            init_checkpoint=directory,
            output_file=str(tmp_path / "embedding_16.tflite"),
            quantization="none",
            max_seq_length=16,
        )
    )
    assert LiteRTModel(shorter).metadata["seq_length"] == 16


@pytest.mark.slow
def test_tagger_entities_equal_the_saved_models(exported, tiny_models, shared_data):
    """`LiteRTModel.entities` reads the tags as the tagger SavedModel's
    `entity_*` outputs do (conlleval's chunks, byte offsets, mean score)."""
    from bert_tf.serving.tagger_signatures import TaggerSignatures
    from bert_tf.text.preprocessing import BertPreprocessor

    model = LiteRTModel(exported["tagger", "none"])
    texts = TEXTS_A[:6] + ["Ünïcode wörds in Zürich, 東京 and São Paulo."]
    got = model.entities(texts)
    preprocessor = BertPreprocessor(
        _vocab(shared_data), True, SEQ_LENGTH, padding="longest"
    )
    module = TaggerSignatures(tiny_models["tagger"], preprocessor, TAGS)
    want = module.serve_text(tf.constant(texts))
    assert sum(len(row) for row in got) > 3  # a random tagger tags plenty
    for row, entities in enumerate(got):
        assert len(entities) == int(want["num_entities"][row])
        for index, entity in enumerate(entities):
            assert entity["type"] == want["entity_type"][row, index].numpy().decode()
            assert entity["text"] == want["entity_text"][row, index].numpy().decode()
            assert entity["start"] == int(want["entity_start"][row, index])
            assert entity["end"] == int(want["entity_end"][row, index])
            assert abs(entity["score"] - float(want["entity_score"][row, index])) < 1e-4
            data = texts[row].encode("utf-8")
            assert data[entity["start"] : entity["end"]].decode() == entity["text"]


def _stsb_dev_sentences(shared_data, count):
    with open(os.path.join(shared_data, "glue/STS-B/dev.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f.readlines()[1:]]
    return [sentence for row in rows for sentence in row[7:9]][:count]


def test_embedding_with_a_prompt_encodes_through_serving_default(shared_data, tmp_path):
    """A prompt left out of pooling needs serving_default: such a file has
    no `tokenize` signature and `encode` sorts by characters, equal to the
    Keras model's encode."""
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(5)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    encoder = bert_tf.BertSentenceEncoder(
        tiny_bert_config(30522, max_position_embeddings=64, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 32, padding="longest"),
        pooling="mean",
        include_prompt=False,
        prompts={"query": "query: "},
        default_prompt_name="query",
    )
    path = str(tmp_path / "prompted.tflite")
    export_litert(encoder, path, vocab, True, 32, quantization="none")
    model = LiteRTModel(path)
    assert "tokenize" not in model.signature_names()
    assert "tokenize" not in model.metadata["signatures"]
    sentences = _stsb_dev_sentences(shared_data, 40)
    np.testing.assert_allclose(
        model.encode(sentences, batch_size=16), encoder.encode(sentences), atol=5e-5
    )


@pytest.mark.slow
def test_int8_minilm_encode_by_word_pieces_keeps_float32_quality(
    minilm_dir, shared_data, tmp_path
):
    """Issue 48: the real MiniLM, dynamic int8, 600 STS-B dev sentences:
    `encode` (batches sorted by word pieces through `tokenize` and
    `serve_tokenized`) gives each sentence's vector as the raw-text signature
    does alone, and stays at cosine >= 0.995 to the float32 Keras encode."""
    encoder = bert_tf.BertSentenceEncoder.from_checkpoint(minilm_dir)
    pre = encoder.preprocessor
    path = str(tmp_path / "minilm_int8.tflite")
    export_litert(encoder, path, pre.vocab_file, pre.do_lower_case, pre.seq_length)
    model = LiteRTModel(path, num_threads=2)
    sentences = _stsb_dev_sentences(shared_data, 600)
    vectors = model.encode(sentences, batch_size=32)
    alone = np.concatenate(
        [model(text=[text])["embeddings"] for text in sentences[::10]]
    )
    np.testing.assert_allclose(vectors[::10], alone, atol=2e-3)
    reference = encoder.encode(sentences, batch_size=32)
    cosines = (vectors * reference).sum(-1) / (
        np.linalg.norm(vectors, axis=-1) * np.linalg.norm(reference, axis=-1)
    )
    assert cosines.mean() >= 0.995, cosines.mean()
    assert cosines.min() >= 0.98, cosines.min()


LITERT_MODEL_WITHOUT_TENSORFLOW = textwrap.dedent(
    """
    import json, sys
    from bert_tf.serving.litert_model import LiteRTModel

    model = LiteRTModel(sys.argv[1])
    out = model(text_a=["He left."], text_b=["He is gone."])
    imported = sorted(
        name for name in ("tensorflow", "tensorflow_text", "keras") if name in sys.modules
    )
    print(json.dumps([imported, out["probabilities"].tolist()]))
    """
)


@pytest.mark.slow
def test_litert_model_runs_without_importing_tensorflow(exported, tmp_path):
    """LiteRTModel takes tensorflow-text's kernels from its extension, without
    the tensorflow_text package (which imports TensorFlow, seconds a process)."""
    from cli_script import script_env

    script = tmp_path / "no_tf.py"
    script.write_text(LITERT_MODEL_WITHOUT_TENSORFLOW)
    done = subprocess.run(
        [sys.executable, str(script), exported["classifier", "none"]],
        capture_output=True,
        text=True,
        env=script_env(),
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert not [line for line in done.stderr.splitlines() if "] " in line]  # no C++ log
    imported, got = json.loads(done.stdout.strip().splitlines()[-1])
    assert imported == []
    want = LiteRTModel(exported["classifier", "none"])(
        text_a=["He left."], text_b=["He is gone."]
    )["probabilities"]
    np.testing.assert_allclose(got, want, atol=1e-6)
