"""bert_tf.pipeline over checkpoint directories, SavedModel exports and the
packaged MiniLM, against independent references: the original's packing and
the model's logits, the original's basic tokenizer's words, the text itself,
and sentence-transformers (PyTorch) for the embeddings."""

import json
import os
import shutil

import keras
import numpy as np
import pytest
from tiny_models import tiny_bert_config

import bert_tf
from bert_tf.data_prep import glue
from bert_tf.errors import UserInputError
from bert_tf.text import tokenization

SEQ_LENGTH = 32
LABELS = ["negative", "positive"]
TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
SENTENCES = ["A warm, funny film.", "Zoë hated it: 李白 would too!", ""]
# Non-ASCII before the words, so byte and character offsets differ.
TAGGED = "Zoë met 李白 in Köln, 2024!"
CONTEXT = "Zoë and 李白 lived in Köln. They met Ada there in 1843."


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def models():
    keras.utils.set_random_seed(5)
    config = tiny_bert_config(30522, intermediate_size=48)
    return {
        "classifier": bert_tf.BertClassifier(config, num_labels=len(LABELS)),
        "tagger": bert_tf.BertTokenClassifier(config, num_labels=len(TAGS)),
        "span": bert_tf.BertSpanLabeler(config),
    }


def write_checkpoint(model, directory, vocab_file, labels=None, settings=None):
    """A run's output_dir: checkpoint, bert_config.json, vocab.txt, labels."""
    os.makedirs(directory, exist_ok=True)
    bert_tf.save_tf1_checkpoint(model, os.path.join(directory, "model.ckpt-7"))
    shutil.copyfile(vocab_file, os.path.join(directory, "vocab.txt"))
    if labels is not None:
        with open(os.path.join(directory, "label_list.json"), "w") as f:
            json.dump({"labels": labels}, f)
    if settings is not None:
        with open(os.path.join(directory, "run_settings.json"), "w") as f:
            json.dump(settings, f)
    return str(directory)


def reference_probabilities(model, vocab_file, texts_a, texts_b=None):
    """Softmax of the model's logits on the original's features."""
    tokenizer = tokenization.FullTokenizer(vocab_file, True)
    texts_b = texts_b or [None] * len(texts_a)
    examples = [
        glue.InputExample(guid=str(i), text_a=a, text_b=b, label=LABELS[0])
        for i, (a, b) in enumerate(zip(texts_a, texts_b, strict=True))
    ]
    features = glue.convert_examples_to_features(
        examples, LABELS, SEQ_LENGTH, tokenizer
    )
    inputs = {
        name: np.array([getattr(f, name) for f in features], np.int32)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    logits = model(inputs, training=False)["logits"].numpy().astype("float64")
    exp = np.exp(logits - logits.max(-1, keepdims=True))
    return exp / exp.sum(-1, keepdims=True)


def words_with_offsets(text):
    """The original's basic-tokenizer words of `text` and their character spans."""
    words, position = [], 0
    for word in tokenization.BasicTokenizer(do_lower_case=False).tokenize(text):
        start = text.index(word, position)
        position = start + len(word)
        words.append((word, start, position))
    return words


def biased_tagger(model, tag):
    """A copy of `model` whose head always picks `tag`."""
    tagger = bert_tf.BertTokenClassifier.from_config(model.get_config())
    tagger.set_weights(model.get_weights())
    bias = np.zeros(len(TAGS), np.float32)
    bias[TAGS.index(tag)] = 50.0
    tagger.head.output_bias.assign(bias)
    return tagger


# --- errors -------------------------------------------------------------------


def test_unknown_task_is_one_line_naming_the_known_ones(tmp_path):
    with pytest.raises(UserInputError) as error:
        bert_tf.pipeline("summarization", str(tmp_path))
    message = str(error.value)
    assert "\n" not in message and "'summarization'" in message
    assert "question-answering" in message and "sentence-embedding" in message


def test_unusable_directories_are_one_line_errors(tmp_path, minilm_dir):
    with pytest.raises(UserInputError, match="no such directory") as error:
        bert_tf.pipeline("ner", str(tmp_path / "missing"))
    assert "\n" not in str(error.value)
    (tmp_path / "notes.txt").write_text("not a model")
    with pytest.raises(UserInputError, match="no saved_model.pb and no checkpoint"):
        bert_tf.pipeline("text-classification", str(tmp_path))
    # The packaged MiniLM is a sentence encoder: it names no classes.
    with pytest.raises(UserInputError, match="no label_list.json") as error:
        bert_tf.pipeline("text-classification", minilm_dir)
    assert "\n" not in str(error.value)


def test_a_run_of_another_family_is_named(models, vocab_file, tmp_path):
    directory = write_checkpoint(
        models["tagger"],
        tmp_path / "ner_output",
        vocab_file,
        TAGS,
        {"script": "run_ner", "max_seq_length": SEQ_LENGTH},
    )
    with pytest.raises(UserInputError, match="holds a run_ner model") as error:
        bert_tf.pipeline("question-answering", directory)
    assert "\n" not in str(error.value)


# --- checkpoints --------------------------------------------------------------


@pytest.mark.slow
def test_classification_of_single_texts_and_pairs(models, vocab_file, tmp_path):
    model = models["classifier"]
    directory = write_checkpoint(
        model, tmp_path / "sst_output", vocab_file, LABELS, {"max_seq_length": 32}
    )
    classify = bert_tf.pipeline("text-classification", directory)
    results = classify(SENTENCES)
    expected = reference_probabilities(model, vocab_file, SENTENCES)
    assert [r["label"] for r in results] == [LABELS[i] for i in expected.argmax(-1)]
    np.testing.assert_allclose(
        [r["score"] for r in results], expected.max(-1), atol=1e-5
    )
    # One string: a list of one result, as Hugging Face's pipeline.
    assert classify(SENTENCES[1]) == [pytest.approx(results[1])]

    # A run on pairs (its run_settings.json says so) needs the pair.
    settings = {
        "script": "run_classifier",
        "task_name": "custom",
        "text_b_column": "sentence2",
        "max_seq_length": SEQ_LENGTH,
    }
    directory = write_checkpoint(
        model, tmp_path / "pairs_output", vocab_file, LABELS, settings
    )
    classify = bert_tf.pipeline("sentiment-analysis", directory)
    first, second = SENTENCES[:2], ["A film.", "She loved it."]
    results = classify(first, text_pair=second)
    expected = reference_probabilities(model, vocab_file, first, second)
    np.testing.assert_allclose(
        [r["score"] for r in results], expected.max(-1), atol=1e-5
    )
    with pytest.raises(UserInputError, match="sentence pairs: pass text_pair"):
        classify(first)


@pytest.mark.slow
def test_entities_have_character_offsets_of_the_words(models, vocab_file, tmp_path):
    tagger = biased_tagger(models["tagger"], "B-PER")
    directory = write_checkpoint(tagger, tmp_path / "ner_output", vocab_file, TAGS)
    ner = bert_tf.pipeline("ner", directory, seq_length=SEQ_LENGTH)
    words = words_with_offsets(TAGGED)

    def found(entities):
        return [(e["entity_group"], e["word"], e["start"], e["end"]) for e in entities]

    entities = ner(TAGGED)
    # Every word begins an entity.
    assert found(entities) == [("PER", *word) for word in words]
    assert all(e["score"] > 0.99 for e in entities)
    assert ner([TAGGED, "", TAGGED]) == [entities, [], entities]
    # The same pipeline with the head now always picking I-LOC: an I- after O
    # starts one entity, which every next I-LOC continues.
    bias = np.zeros(len(TAGS), np.float32)
    bias[TAGS.index("I-LOC")] = 50.0
    ner.source.model.head.output_bias.assign(bias)
    start, end = words[0][1], words[-1][2]
    assert found(ner(TAGGED)) == [("LOC", TAGGED[start:end], start, end)]


@pytest.mark.slow
def test_answers_are_character_spans_of_the_context(models, vocab_file, tmp_path):
    directory = write_checkpoint(models["span"], tmp_path / "squad_output", vocab_file)
    qa = bert_tf.pipeline(
        "question-answering", directory, seq_length=SEQ_LENGTH, max_query_length=8
    )
    questions = ["Where did they live?", "Who did they meet?", "When?"]
    answers = qa(question=questions, context=CONTEXT)
    assert len(answers) == 3
    for answer in answers:
        assert set(answer) == {"answer", "score", "start", "end"}
        assert answer["answer"] and 0 < answer["score"] <= 1
        # The context holds no whitespace runs: the text is the span itself.
        assert CONTEXT[answer["start"] : answer["end"]] == answer["answer"]
    assert qa(questions[0], CONTEXT) == answers[0]


# --- SavedModel exports and the packaged MiniLM ---------------------------------


@pytest.fixture(scope="module")
def checkpoints_and_exports(models, vocab_file, tmp_path_factory):
    """The classifier and span model as output_dirs and as exports, and a
    tiny sentence encoder's export."""
    from bert_tf import serving
    from bert_tf.text.preprocessing import BertPreprocessor

    base = tmp_path_factory.mktemp("pipeline")
    pairs = {"script": "run_classifier", "task_name": "MRPC"}
    checkpoints = {
        "classifier": write_checkpoint(
            models["classifier"], base / "mrpc", vocab_file, LABELS, pairs
        ),
        "span": write_checkpoint(
            models["span"], base / "squad", vocab_file, None, {"max_query_length": 8}
        ),
    }
    encoder = bert_tf.BertSentenceEncoder(
        models["span"].encoder, BertPreprocessor(vocab_file, True, SEQ_LENGTH)
    )
    options = {
        "classifier": {"label_list": LABELS, "text_pair": True, "version": 3},
        "span": {"max_query_length": 8},
        "embedding": {},
    }
    exports = {
        family: serving.export_saved_model(
            model,
            str(base / "serving" / family),
            vocab_file,
            True,
            SEQ_LENGTH,
            save_keras=False,
            **options[family],
        )
        for family, model in (
            ("classifier", models["classifier"]),
            ("span", models["span"]),
            ("embedding", encoder),
        )
    }
    # A lower version beside it, which the base directory must not pick (it
    # would not load).
    older = base / "serving" / "classifier" / "2"
    older.mkdir()
    (older / "saved_model.pb").write_bytes(b"not a SavedModel")
    return checkpoints, exports, encoder


@pytest.mark.slow
def test_an_export_answers_as_its_checkpoint(checkpoints_and_exports):
    checkpoints, exports, encoder = checkpoints_and_exports
    first, second = SENTENCES, ["A film.", "She loved it.", "Nothing."]
    from_checkpoint = bert_tf.pipeline("text-classification", checkpoints["classifier"])
    # The base directory: its highest version (3).
    served = bert_tf.pipeline(
        "text-classification", os.path.dirname(exports["classifier"])
    )
    expected = from_checkpoint(first, text_pair=second)
    results = served(first, text_pair=second)
    assert [r["label"] for r in results] == [r["label"] for r in expected]
    np.testing.assert_allclose(
        [r["score"] for r in results], [r["score"] for r in expected], atol=1e-5
    )
    with pytest.raises(UserInputError, match="sentence pairs"):
        served(first)

    qa = bert_tf.pipeline("question-answering", checkpoints["span"], seq_length=32)
    served_qa = bert_tf.pipeline("question-answering", exports["span"])
    questions = ["Where did they live?", "Who did they meet?"]
    for ours, theirs in zip(
        qa(question=questions, context=CONTEXT),
        served_qa(question=questions, context=CONTEXT),
        strict=True,
    ):
        assert ours["answer"] == theirs["answer"] != ""
        assert (ours["start"], ours["end"]) == (theirs["start"], theirs["end"])
        assert ours["score"] == pytest.approx(theirs["score"], abs=1e-5)

    embed = bert_tf.pipeline("feature-extraction", exports["embedding"])
    np.testing.assert_allclose(embed(SENTENCES), encoder.encode(SENTENCES), atol=1e-5)

    with pytest.raises(UserInputError, match="is a classifier export, not a span"):
        bert_tf.pipeline("question-answering", exports["classifier"])
    with pytest.raises(UserInputError, match="apply to checkpoints only"):
        bert_tf.pipeline("question-answering", exports["span"], seq_length=64)


@pytest.mark.slow
def test_minilm_embeddings_as_sentence_transformers(minilm_dir):
    from sentence_transformers import SentenceTransformer

    texts = ["A man is playing a guitar.", "Ünïcödé, 李白!", "short", ""]
    embed = bert_tf.pipeline("sentence-embedding", minilm_dir, batch_size=3)
    vectors = embed(texts)
    reference = SentenceTransformer(minilm_dir, device="cpu").encode(texts)
    assert vectors.shape == (4, 384) and vectors.dtype == np.float32
    np.testing.assert_allclose(vectors, reference, atol=2e-5)
    np.testing.assert_allclose(embed(texts[1]), reference[1], atol=2e-5)
    # No texts: no rows of the model's width, as encode([]) (issue 61.14).
    assert embed([]).shape == (0, 384) == embed.source.model.encode([]).shape


@pytest.mark.slow
def test_litert_files_answer_as_the_model(models, vocab_file, tmp_path):
    """Both kinds of .tflite (raw text; --target=mediapipe, fed by the
    original tokenizer over the vocabulary packed in the file)."""
    pytest.importorskip("ai_edge_litert", reason="ai-edge-litert ([litert])")
    from bert_tf.serving import export_litert
    from bert_tf.serving.mediapipe_exporter import export_mediapipe
    from bert_tf.text.preprocessing import BertPreprocessor

    classifier = models["classifier"]
    encoder = bert_tf.BertSentenceEncoder(
        models["span"].encoder,
        BertPreprocessor(vocab_file, True, SEQ_LENGTH),
        # Cut as encode cuts, in both kinds of file (issue 61.5).
        truncate_dim=5,
    )
    files = {}
    for kind, model, options in (
        ("classifier", classifier, {"label_list": LABELS}),
        ("embedding", encoder, {}),
    ):
        files[kind, "raw"] = str(tmp_path / f"{kind}_raw.tflite")
        export_litert(
            model,
            files[kind, "raw"],
            vocab_file,
            True,
            SEQ_LENGTH,
            quantization="none",
            **options,
        )
        files[kind, "mediapipe"] = str(tmp_path / f"{kind}_mp.tflite")
        export_mediapipe(
            model,
            files[kind, "mediapipe"],
            vocab_file,
            True,
            SEQ_LENGTH,
            quantization="none",
            **options,
        )
    long_text = "the film runs long and then longer " * 20
    # The MediaPipe file's vocabulary has other spellings (accents): the
    # pipeline's tokenizer normalises first and meets only our entries.
    texts = [*SENTENCES, long_text, "Une Génoise naïve, ΑΘΗΝΑ."]
    probabilities = reference_probabilities(classifier, vocab_file, texts)
    for target in ("raw", "mediapipe"):
        classify = bert_tf.pipeline("text-classification", files["classifier", target])
        results = classify(texts)
        assert [r["label"] for r in results] == [
            LABELS[i] for i in probabilities.argmax(-1)
        ]
        np.testing.assert_allclose(
            [r["score"] for r in results], probabilities.max(-1), atol=1e-5
        )
        embed = bert_tf.pipeline("sentence-embedding", files["embedding", target])
        np.testing.assert_allclose(embed(texts), encoder.encode(texts), atol=1e-5)
        assert embed([]).shape == (0, 5) and encoder.model_dim > 5
    with pytest.raises(UserInputError, match="is a embedding export, not a classifier"):
        bert_tf.pipeline("text-classification", files["embedding", "mediapipe"])
    with pytest.raises(UserInputError, match="LiteRT files answer"):
        bert_tf.pipeline("question-answering", files["classifier", "raw"])
