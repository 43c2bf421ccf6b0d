"""The fault suite's serving probes (issue 29): hostile requests to the span,
tagger and classifier signatures.

In process, on tiny random-weight models with the real uncased vocabulary
(the signature functions the SavedModels are built from; `test_export.py`
checks that the saved ones answer alike). Each probe ends in a correct
answer or a clear error:

* offsets index the bytes the client sent: NUL bytes, invalid UTF-8 and
  multi-byte characters before and inside answers and entities;
* rank-2 batches (an error naming the shape, not answers for more rows than
  were sent) and empty batches (0 rows out), contexts that are all empty or whitespace;
* the span model's request bounds (`max_context_bytes`, `max_windows`): an
  error naming the bound beyond them, and in the export metadata.
"""

import os
import re

import keras
import numpy as np
import pytest
import tensorflow as tf
from tiny_models import tiny_bert_config

import bert_tf
from bert_tf import serving
from bert_tf.serving.span_options import SpanOptions
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import BertPreprocessor

SEQ_LENGTH = 32
# A string input of another shape than [batch] (the op names the input).
SHAPE_ERROR = (
    r"Shape of tensor .*\[2,[12]\] is not compatible with expected shape \[\?\]"
)
SPAN = dict(max_query_length=8, max_answer_length=5, doc_stride=8)
# Dirty requests: NUL bytes, invalid UTF-8 (a lone continuation byte, 0xFF,
# an encoded surrogate) and multi-byte characters, before and among words.
DIRTY = [
    b"\x00\x00\x00 Alice Smith wrote the book in the garden.",
    b"Caf\xc3\xa9 \xff\xfe cr\xc3\xa8me \x00br\xc3\xbbl\xc3\xa9e is sw\x80eet.",
    "日本語\x00の Ünïcödé \U0001f642 words, and more.".encode(),
    b"\xed\xa0\x80plain text\x00\x00 without trouble",
]


def clean(data):
    """What the tokenizer reads of request bytes (the original's decoding
    with errors="ignore", NUL dropped): an independent reference."""
    return data.decode("utf-8", "ignore").replace("\x00", "")


def squad_text(data):
    """`clean`, with runs of run_squad's whitespace written as one space."""
    return re.sub(r"[ \t\r\n\u202f]+", " ", clean(data))


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    path = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="module")
def modules(vocab_file):
    keras.utils.set_random_seed(5)
    config = tiny_bert_config(30522, intermediate_size=48)
    preprocessor = BertPreprocessor(vocab_file, True, SEQ_LENGTH, padding="longest")
    tagger = bert_tf.BertTokenClassifier(config, num_labels=3)
    # Every word tagged B-X: each word is an entity of its own.
    for weight in tagger.weights:
        if weight.path.endswith("output_bias"):
            weight.assign([0.0, 10.0, 0.0])
    return {
        "span": serving.SpanSignatures(
            bert_tf.BertSpanLabeler(config), preprocessor, SpanOptions(**SPAN)
        ),
        "bounded": serving.SpanSignatures(
            bert_tf.BertSpanLabeler(config),
            preprocessor,
            SpanOptions(**SPAN, max_context_bytes=200, max_windows=4),
        ),
        "tagger": serving.TaggerSignatures(tagger, preprocessor, ["O", "B-X", "I-X"]),
        "classifier": serving.ClassifierSignatures(
            bert_tf.BertClassifier(config, num_labels=2), preprocessor, ["a", "b"]
        ),
    }


def _answers(module, questions, contexts):
    function, _ = module.text_endpoint()
    out = function(tf.constant(questions), tf.constant(contexts))
    return {name: value.numpy() for name, value in out.items()}


def test_span_offsets_index_the_bytes_sent(modules):
    questions = ["who wrote it?"] * len(DIRTY)
    dirty = _answers(modules["span"], questions, DIRTY)
    repaired = [clean(data).encode("utf-8") for data in DIRTY]
    reference = _answers(modules["span"], questions, repaired)
    for row, data in enumerate(DIRTY):
        # The same answers as for the repaired context ...
        np.testing.assert_array_equal(
            dirty["nbest_text"][row], reference["nbest_text"][row]
        )
        entries = 0
        for text, start, end in zip(
            dirty["nbest_text"][row],
            dirty["nbest_start"][row],
            dirty["nbest_end"][row],
            strict=True,
        ):
            if start < 0:
                continue
            entries += 1
            # ... and slicing the request where they point gives their text.
            assert squad_text(data[start:end]) == text.decode(), (row, start, end)
            assert 0 <= start < end <= len(data)
        assert entries > 0, row
        start, end = dirty["answer_start"][row], dirty["answer_end"][row]
        assert squad_text(data[start:end]) == dirty["answer_text"][row].decode()
        # Every context piece maps back to the characters it was made from.
        pieces = [
            clean(data[s:e])
            for s, e in zip(
                dirty["token_start"][row], dirty["token_end"][row], strict=True
            )
            if s >= 0
        ]
        expected = [
            repaired[row][s:e].decode()
            for s, e in zip(
                reference["token_start"][row], reference["token_end"][row], strict=True
            )
            if s >= 0
        ]
        assert pieces == expected
    # The example: after three NULs and a space, "Alice" is bytes 4-9.
    first = list(dirty["token_start"][0]).index(4)
    assert dirty["token_end"][0][first] == 9 and DIRTY[0][4:9] == b"Alice"


def test_tagger_offsets_index_the_bytes_sent(modules):
    out = modules["tagger"].serve_text(tf.constant(DIRTY))
    out = {name: value.numpy() for name, value in out.items()}
    basic = tokenization.BasicTokenizer(do_lower_case=False)
    for row, data in enumerate(DIRTY):
        count = out["num_entities"][row]
        texts = [t.decode() for t in out["entity_text"][row][:count]]
        # Each word is an entity (every word is tagged B-X) ...
        assert texts == basic.tokenize(clean(data)), row
        for text, start, end in zip(
            texts,
            out["entity_start"][row][:count],
            out["entity_end"][row][:count],
            strict=True,
        ):
            # ... found in the request's bytes at its offsets.
            assert clean(data[start:end]) == text, (row, start, end)
    assert DIRTY[0][out["entity_start"][0][0] : out["entity_end"][0][0]] == b"Alice"


def test_rank_2_and_empty_batches(modules):
    classify, _ = modules["classifier"].text_endpoint()
    assert classify(tf.constant([], tf.string))["labels"].shape == (0,)
    for shape in ([["a", "b"], ["c", "d"]], [["a fine film"], ["awful"]]):
        with pytest.raises(tf.errors.InvalidArgumentError, match=SHAPE_ERROR):
            classify(tf.constant(shape))

    span = modules["span"]
    empty = _answers(span, np.array([], bytes), np.array([], bytes))
    assert all(value.shape[0] == 0 for value in empty.values())
    with pytest.raises(tf.errors.InvalidArgumentError, match=SHAPE_ERROR):
        _answers(span, [["q"], ["q"]], [["a", "b"], ["c", "d"]])
    # Contexts that are all empty or whitespace (one alone was documented
    # to work; a batch of them failed in a gather).
    blank = _answers(span, ["who?", "what?", "why?"], ["", " \t\n ", "\x00"])
    assert list(blank["answer_text"]) == [b"", b"", b""]
    assert list(blank["answer_start"]) == [-1, -1, -1]
    assert list(blank["answer_end"]) == [-1, -1, -1]

    tagged = modules["tagger"].serve_text(tf.constant([], tf.string))
    assert tagged["num_entities"].shape == (0,)
    with pytest.raises(tf.errors.InvalidArgumentError, match=SHAPE_ERROR):
        modules["tagger"].serve_text(tf.constant([["a", "b"], ["c", "d"]]))


@pytest.fixture(scope="module")
def sentence_encoder(vocab_file):
    keras.utils.set_random_seed(6)
    return bert_tf.BertSentenceEncoder(
        tiny_bert_config(30522, intermediate_size=48),
        preprocessor=BertPreprocessor(vocab_file, True, SEQ_LENGTH, padding="longest"),
        pooling="mean",
        normalize=True,
    )


def test_embedding_requests_must_be_batches(sentence_encoder):
    """Issue 50: a model server hands the graph the tensor a client sent (the
    declared [batch] shape unchecked): a [2, 2] request answered 4 vectors."""
    module = serving.EmbeddingSignatures(
        sentence_encoder, sentence_encoder.preprocessor
    )
    # Traced for strings of any shape: as a loaded SavedModel runs them.
    any_shape = tf.TensorSpec(None, tf.string)
    serve_text = tf.function(module.text_endpoint()[0], input_signature=[any_shape])
    similarity = tf.function(
        module.similarity_endpoint()[0], input_signature=[any_shape, any_shape]
    )
    grid = tf.constant([["a cat", "sat"], ["on the", "mat"]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=SHAPE_ERROR):
        serve_text(grid)
    with pytest.raises(tf.errors.InvalidArgumentError, match=SHAPE_ERROR):
        similarity(grid, grid)
    texts = ["a cat sat", "on the mat"]
    embeddings = serve_text(tf.constant(texts))["embeddings"].numpy()
    np.testing.assert_allclose(embeddings, sentence_encoder.encode(texts), atol=1e-5)
    assert serve_text(tf.constant([], tf.string))["embeddings"].shape == (0, 32)


def test_pipeline_batch_sizes_and_texts(sentence_encoder, tmp_path):
    """Issue 50: a batch size of 0 or less gave an empty (0, 0) array for
    any number of texts; bytes and None were embedded as "b'...'" and
    "None", a [2, 2] array as 4 texts."""
    for size in (-1, 0, 1.5, True):
        # Before any model loads: the directory is not even looked at.
        with pytest.raises(bert_tf.UserInputError, match=r"batch_size="):
            bert_tf.pipeline("sentence-embedding", tmp_path / "none", batch_size=size)
    directory = sentence_encoder.save_sentence_transformers(str(tmp_path / "st"))
    embed = bert_tf.pipeline("sentence-embedding", directory, batch_size=1)
    texts = ["a cat sat", "on the mat", "dogs bark"]
    np.testing.assert_allclose(embed(texts), sentence_encoder.encode(texts), atol=1e-5)
    for bad, where in (
        ([b"a cat sat"], r"texts\[0\] is bytes"),
        (["fine", None], r"texts\[1\] is NoneType"),
        (np.array([["a", "b"], ["c", "d"]]), r"shape \(2, 2\)"),
    ):
        with pytest.raises(bert_tf.UserInputError, match=where):
            embed(bad)


def test_span_request_bounds(modules):
    bounded = modules["bounded"]
    metadata = bounded.metadata()
    assert metadata["max_context_bytes"] == 200 and metadata["max_windows"] == 4
    assert modules["span"].metadata()["max_windows"] == SpanOptions().max_windows
    # Within the bounds: answered.
    _answers(bounded, ["q"], ["word " * 40])
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="201 bytes.*max_context_bytes=200"
    ):
        _answers(bounded, ["q"], ["x" * 201])
    # Windows: 60 one-piece words, 28 per window (a 1-piece question) and a
    # stride of 8: 1 + ceil(32 / 8) = 5.
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="5 windows.*max_windows=4"
    ):
        _answers(bounded, ["q"], ["a " * 60])
    # The bound is per request: two contexts of 3 windows each are too many.
    with pytest.raises(
        tf.errors.InvalidArgumentError, match="6 windows.*max_windows=4"
    ):
        _answers(bounded, ["q", "q"], ["a " * 40, "a " * 40])
    with pytest.raises(bert_tf.UserInputError, match="max_windows"):
        SpanOptions(max_windows=0)


def test_concurrent_exports_never_share_a_version(tmp_path):
    """Exports to one export_dir choose and publish their version under a
    lock on the directory: one holding it makes the others wait; two never
    take one version; an explicit version taken meanwhile is a clear error."""
    import fcntl
    import threading

    from bert_tf.serving.saved_model_exporter import publish_version

    base = tmp_path / "export"
    base.mkdir()

    def finished_export(name):
        path = base / f".tmp-0-host-1-{name * 32}"
        path.mkdir()
        (path / "saved_model.pb").write_text(name)
        return str(path)

    held = os.open(base, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # another export is publishing
    published = []
    threads = [
        threading.Thread(
            target=lambda n=n: published.append(
                publish_version(str(base), finished_export(n))
            )
        )
        for n in "ab"
    ]
    for thread in threads:
        thread.start()
    threads[0].join(timeout=1)
    assert threads[0].is_alive() and not published  # waiting for the lock
    os.close(held)
    for thread in threads:
        thread.join(timeout=30)
    assert sorted(os.path.basename(p) for p in published) == ["1", "2"]
    contents = {(base / v / "saved_model.pb").read_text() for v in ("1", "2")}
    assert contents == {"a", "b"}
    with pytest.raises(bert_tf.UserInputError, match=r"version 2 already exists"):
        publish_version(str(base), finished_export("c"), version=2)


def test_preprocessor_from_an_untrusted_config_opens_no_path(vocab_file, tmp_path):
    """A `.keras` file's config names the vocabulary's path when saved; a
    hostile one may name a FIFO or a device. Loading opens the assets only."""
    keras.utils.set_random_seed(2)
    path = tmp_path / "fifo"
    os.mkfifo(path)  # opening it for reading would block
    config = BertPreprocessor(vocab_file, True, 16).get_config()
    config["vocab_file"] = str(path)
    import threading

    made = []
    # In a daemon thread: opening the FIFO would hang it, not the suite.
    thread = threading.Thread(
        target=lambda: made.append(BertPreprocessor.from_config(config)), daemon=True
    )
    thread.start()
    thread.join(timeout=20)
    assert made, f"from_config opened {path}"
    (restored,) = made
    restored.load_assets(os.path.dirname(_asset_copy(vocab_file, tmp_path)))
    ids = restored(tf.constant(["hello world"]))["input_ids"][0, :4]
    assert list(ids.numpy()) == [101, 7592, 2088, 102]
    # Outside a load, a config's path is read on first use (a clone).
    config["vocab_file"] = vocab_file
    clone = BertPreprocessor.from_config(config)
    assert clone.cls_id == 101 and clone.vocab_size == 30522


def _asset_copy(vocab_file, tmp_path):
    """The vocabulary as a `.keras` file's assets hold it."""
    directory = tmp_path / "assets"
    directory.mkdir()
    target = directory / "vocab.txt"
    target.write_bytes(open(vocab_file, "rb").read())
    return str(target)


def test_reranker_requests_must_be_a_batch_of_queries_and_lists(shared_data):
    """Issue 50: the reranker's `query` took any shape (a [2, 2] query was 4
    queries, checked against the passages' rows only)."""
    from bert_tf.models.bert_reranker import BertReranker

    keras.utils.set_random_seed(3)
    vocab_file = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    model = BertReranker(
        tiny_bert_config(30522, intermediate_size=48, max_position_embeddings=64),
        preprocessor=BertPreprocessor(vocab_file, True, SEQ_LENGTH, padding="longest"),
    )
    module = serving.RerankerSignatures(model, model.preprocessor)
    any_shape = tf.TensorSpec(None, tf.string)
    serve_text = tf.function(
        module.text_endpoint()[0], input_signature=[any_shape, any_shape]
    )
    passages = tf.constant([["a cat sat", "on the mat"], ["a dog", ""]])
    with pytest.raises(tf.errors.InvalidArgumentError, match=SHAPE_ERROR):
        serve_text(tf.constant([["who sat", "where"], ["who", "what"]]), passages)
    with pytest.raises(tf.errors.InvalidArgumentError, match="passages_must_be"):
        serve_text(tf.constant(["who sat", "what"]), tf.constant(["a", "b"]))
    scores = serve_text(tf.constant(["who sat", "what ran"]), passages)["scores"]
    want = model.predict([("who sat", "a cat sat"), ("who sat", "on the mat")])
    np.testing.assert_allclose(scores.numpy()[0], want, atol=1e-5)
