"""export_litert --target=mediapipe: MediaPipe Tasks runs our files unmodified.

The files are read by MediaPipe's own `TextEmbedder` and `TextClassifier`
(the `mediapipe` package's C++ runtime, in its own process: see
tests/mediapipe_tasks.py), which tokenize from the file's metadata; the
reference is our float32 SavedModel of the same model, on 400 STS-B dev
pairs plus every pair with a non-ASCII sentence (benchmarks/mediapipe_latency.py
takes all 1,500), and all SST-2 dev sentences (accented, Greek and mojibake ones
included: the file's vocabulary carries their spellings, see
bert_tf/serving/mediapipe_vocabulary.py).
"""

import json
import os
import subprocess

import numpy as np
import pytest
from mediapipe_models import SST2_LABELS
from mediapipe_models import id_echo_file
from mediapipe_models import saved_model_outputs
from mediapipe_models import sst2
from mediapipe_models import sst2_classifier
from mediapipe_models import stsb_sentences
from mediapipe_tasks import mediapipe_python
from mediapipe_tasks import run_task
from test_mediapipe_vocabulary import WORDS

from bert_tf import serving
from bert_tf.metrics.similarity import spearman
from bert_tf.serving import mediapipe_metadata
from bert_tf.serving.mediapipe_exporter import export_mediapipe


@pytest.fixture(scope="module")
def python():
    found = mediapipe_python()
    if found is None:
        pytest.skip(
            "no interpreter with mediapipe: set BERT_TF_MEDIAPIPE_PYTHON "
            "(see tests/mediapipe_tasks.py)"
        )
    return found


@pytest.fixture(scope="module")
def embedder(minilm_dir, tmp_path_factory):
    from bert_tf.models import BertSentenceEncoder

    base = tmp_path_factory.mktemp("mediapipe_embedder")
    model = BertSentenceEncoder.from_checkpoint(minilm_dir)
    pre = model.preprocessor
    files = {
        quantization: str(base / f"minilm_{quantization}.tflite")
        for quantization in ("none", "dynamic_int8")
    }
    for quantization, path in files.items():
        export_mediapipe(
            model, path, pre.vocab_file, True, pre.seq_length, quantization=quantization
        )
    saved_model = serving.export_saved_model(
        model, str(base / "sm"), pre.vocab_file, True, pre.seq_length, save_keras=False
    )
    return files, saved_model, pre.seq_length


def _cosines(a, b):
    return (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)


@pytest.mark.slow
def test_text_embedder_vectors_equal_the_saved_models(python, embedder, shared_data):
    files, saved_model, _ = embedder
    texts, gold = stsb_sentences(shared_data)
    # The first 400 pairs and every pair with a non-ASCII side (the texts
    # where a tokenizer difference would show); all 1,500 pairs are in
    # benchmarks/mediapipe_latency.py.
    pairs = len(gold)
    keep = [
        i
        for i in range(pairs)
        if i < 400 or not (texts[i] + texts[pairs + i]).isascii()
    ]
    texts = [texts[i] for i in keep] + [texts[pairs + i] for i in keep]
    gold, pairs = gold[keep], len(keep)
    ours = saved_model_outputs(saved_model, "text", texts, "embeddings")
    float32 = run_task(python, files["none"], "embed", texts)["embeddings"]
    int8 = run_task(python, files["dynamic_int8"], "embed", texts)["embeddings"]
    assert float32.shape == ours.shape == (len(texts), 384)
    cosine = _cosines(float32, ours)
    worst = [texts[i] for i in np.argsort(cosine)[:3]]
    assert cosine.min() >= 0.999, worst
    assert sum(not text.isascii() for text in texts) == 25
    # The normalisation is in the file: MediaPipe returns unit vectors.
    np.testing.assert_allclose(np.linalg.norm(float32, axis=-1), 1.0, atol=1e-5)

    def pair_spearman(vectors):
        return spearman(_cosines(vectors[:pairs], vectors[pairs:]), gold)

    assert abs(pair_spearman(int8) - pair_spearman(float32)) <= 0.005


@pytest.mark.slow
def test_mediapipe_feeds_our_ids(python, shared_data, tmp_path):
    """MediaPipe's own tokenizer, reading the exported vocabulary, feeds the
    ids of our SavedModel's tokenizer (the file's graph maps them back)."""
    import tensorflow as tf

    from bert_tf.text.preprocessing import BertPreprocessor

    width = 128
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    path = str(tmp_path / "echo.tflite")
    id_echo_file(vocab, path, width)
    texts = stsb_sentences(shared_data)[0] + sst2(shared_data, "dev")[0]
    texts = WORDS + [text for text in texts if not text.isascii()]
    fed = run_task(python, path, "embed", texts)["embeddings"]
    preprocessor = BertPreprocessor(vocab, True, width, padding="max_length")
    ours = preprocessor(tf.constant(texts))
    expected = np.where(ours["input_mask"].numpy() == 1, ours["input_ids"], -1)
    assert (fed.astype(np.int64) == expected).all(axis=1).tolist() == [True] * len(
        texts
    )


@pytest.mark.slow
def test_long_texts_are_truncated_as_ours(python, embedder):
    files, saved_model, seq_length = embedder
    # Far past 256 pieces; the two differ only after the first 254 pieces.
    head = "the committee met again on tuesday to discuss the budget . " * 30
    texts = [head + "apples " * 50, head + "oranges and bananas " * 40, "short."]
    # and a 20,000-character one (issue 61.13), cut by word pieces as well.
    texts.append((head + "pears ") * 12)
    assert len(texts[-1]) > 20000
    ours = saved_model_outputs(saved_model, "text", texts, "embeddings")
    served = run_task(python, files["none"], "embed", texts)["embeddings"]
    assert _cosines(served, ours).min() >= 0.999
    # Both kept [CLS] + the same 254 pieces + [SEP].
    np.testing.assert_allclose(served[0], served[1], atol=1e-6)
    np.testing.assert_allclose(served[0], served[3], atol=1e-6)
    assert _cosines(served[:1], served[2:3]).item() < 0.9


def _sst2_classifier(minilm_dir, shared_data, rows=256, steps=32, batch_size=16):
    """mediapipe_models.sst2_classifier's model and its fine-tuning steps (same
    seed, rows, batches, optimizer and loss), each step one tf.function call
    rather than eager ops: the same training, several times faster."""
    import keras
    import tensorflow as tf
    from mediapipe_models import CLASSIFIER_SEQ_LENGTH

    from bert_tf.text.preprocessing import BertPreprocessor

    # steps=0: the seeded, untrained MiniLM classifier and its vocabulary.
    model, vocab_file = sst2_classifier(minilm_dir, shared_data, rows, steps=0)
    preprocessor = BertPreprocessor(vocab_file, True, CLASSIFIER_SEQ_LENGTH)
    texts, labels = sst2(shared_data, "train")
    texts, labels = texts[:rows], labels[:rows]
    optimizer = keras.optimizers.Adam(1e-4)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function(reduce_retracing=True)
    def train_step(inputs, batch_labels):
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)["logits"]
            loss = loss_fn(batch_labels, logits)
        variables = model.trainable_variables
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables, strict=True)
        )

    for step in range(steps):
        start = step * batch_size % rows
        inputs = preprocessor(tf.constant(texts[start : start + batch_size]))
        train_step(inputs, tf.constant(labels[start : start + batch_size]))
    return model, vocab_file


def _saved_model_outputs(version_dir, input_name, texts, outputs, batch_size=64):
    """Each of `outputs` of the SavedModel's serving_default on `texts`, from
    one pass (as mediapipe_models.saved_model_outputs computes each)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    parts = [
        serve(**{input_name: tf.constant(texts[i : i + batch_size])})
        for i in range(0, len(texts), batch_size)
    ]
    return [np.concatenate([part[name].numpy() for part in parts]) for name in outputs]


@pytest.fixture(scope="module")
def classifier(minilm_dir, shared_data, tmp_path_factory):
    from mediapipe_models import CLASSIFIER_SEQ_LENGTH

    base = tmp_path_factory.mktemp("mediapipe_classifier")
    model, vocab = _sst2_classifier(minilm_dir, shared_data)
    path = str(base / "sst2.tflite")
    export_mediapipe(
        model,
        path,
        vocab,
        True,
        CLASSIFIER_SEQ_LENGTH,
        label_list=SST2_LABELS,
        # SST-2's labels are 0 and 1: shown by name, as export_litert --labels
        # renames a run's (recorded in the metadata).
        trained_labels=["0", "1"],
        quantization="none",
    )
    saved_model = serving.export_saved_model(
        model,
        str(base / "sm"),
        vocab,
        True,
        CLASSIFIER_SEQ_LENGTH,
        label_list=SST2_LABELS,
        trained_labels=["0", "1"],
        save_keras=False,
    )
    return path, saved_model


@pytest.mark.slow
def test_text_classifier_labels_equal_the_saved_models(python, classifier, shared_data):
    path, saved_model = classifier
    texts, gold = sst2(shared_data, "dev")
    # and a 20,000-character review (issue 61.13): cut by word pieces as the
    # SavedModel cuts it.
    texts = texts + [(" ".join(texts[:40]) * 4)[:20000]]
    ours, probabilities = _saved_model_outputs(
        saved_model, "text_a", texts, ["labels", "probabilities"]
    )
    served = run_task(python, path, "classify", texts)
    assert list(served["labels"]) == [label.decode() for label in ours]
    assert set(served["labels"]) == set(SST2_LABELS)  # the categories' names
    from bert_tf.serving.litert_model import read_metadata

    with open(path, "rb") as f:
        assert read_metadata(f.read())["trained_labels"] == ["0", "1"]
    with open(os.path.join(saved_model, "assets.extra", "bert_tf_export.json")) as f:
        assert json.load(f)["trained_labels"] == ["0", "1"]
    assert sum(not text.isascii() for text in texts[:-1]) == 6
    np.testing.assert_allclose(served["scores"], probabilities, atol=1e-4)
    # The few fine-tuning steps did teach it: better than chance.
    accuracy = (probabilities[: len(gold)].argmax(-1) == gold).mean()
    assert accuracy > 0.6


@pytest.mark.slow  # starts processes
def test_metadata_reads_back_with_mediapipes_schema(python, tmp_path):
    """The flatbuffer, read by the generated code mediapipe ships."""
    blob = mediapipe_metadata.metadata_flatbuffer(
        ["mask", "ids", "segment_ids"], "probabilities", "m", "d", labels=["a", "b"]
    )
    path = tmp_path / "metadata.bin"
    path.write_bytes(blob)
    script = f"""
from mediapipe.tasks.metadata import metadata_schema_py_generated as fb
data = open({str(path)!r}, "rb").read()
assert fb.ModelMetadata.ModelMetadataBufferHasIdentifier(data, 0)
m = fb.ModelMetadataT.InitFromPackedBuf(data, 0)
(sub,) = m.subgraphMetadata
print([t.name.decode() for t in sub.inputTensorMetadata])
(unit,) = sub.inputProcessUnits
assert unit.optionsType == fb.ProcessUnitOptions.BertTokenizerOptions
(vocab,) = unit.options.vocabFile
assert vocab.type == fb.AssociatedFileType.VOCABULARY
print(vocab.name.decode(), m.minParserVersion.decode())
(out,) = sub.outputTensorMetadata
(labels,) = out.associatedFiles
assert labels.type == fb.AssociatedFileType.TENSOR_AXIS_LABELS
print(out.name.decode(), labels.name.decode())
"""
    result = subprocess.run(
        [python, "-c", script], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == [
        "['mask',",
        "'ids',",
        "'segment_ids']",
        "vocab.txt",
        "1.1.0",
        "probabilities",
        "labels.txt",
    ]


def test_what_mediapipe_cannot_run_is_refused(tiny_config, shared_data, tmp_path):
    import bert_tf

    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    classifier = bert_tf.BertClassifier(tiny_config, num_labels=2)
    path = str(tmp_path / "m.tflite")
    with pytest.raises(ValueError, match="do_lower_case=False"):
        export_mediapipe(classifier, path, vocab, False, 16)
    with pytest.raises(ValueError, match="regression"):
        export_mediapipe(
            bert_tf.BertClassifier(tiny_config, num_labels=1), path, vocab, True, 16
        )
    with pytest.raises(TypeError, match="BertSpanLabeler"):
        export_mediapipe(bert_tf.BertSpanLabeler(tiny_config), path, vocab, True, 16)
    assert not os.path.exists(path)


@pytest.mark.slow
def test_export_litert_cli_target_mediapipe(python, embedder, minilm_dir, tmp_path):
    """export_litert.py --target=mediapipe on the sentence-transformers
    directory: the encoder's own length and casing, int8 by default."""
    from cli_script import REPO
    from cli_script import run_script

    path = str(tmp_path / "minilm.tflite")
    run_script(
        os.path.join(REPO, "export_litert.py"),
        "--model_type=embedding",
        f"--init_checkpoint={minilm_dir}",
        f"--output_file={path}",
        "--target=mediapipe",
    )
    _, saved_model, _ = embedder
    texts = ["A man is playing a guitar.", "Two dogs run through a field of snow."]
    served = run_task(python, path, "embed", texts)["embeddings"]
    ours = saved_model_outputs(saved_model, "text", texts, "embeddings")
    assert _cosines(served, ours).min() >= 0.99


def test_target_mediapipe_options_are_checked(tmp_path):
    from bert_tf.errors import UserInputError
    from bert_tf.options.litert_export_options import LiteRTExportOptions

    def options(**kwargs):
        return LiteRTExportOptions(
            init_checkpoint=str(tmp_path),
            output_file=str(tmp_path / "m.tflite"),
            target="mediapipe",
            **kwargs,
        )

    with pytest.raises(UserInputError, match="--model_type=tagger"):
        options(model_type="tagger")
    with pytest.raises(UserInputError, match="--text_pair"):
        options(model_type="classifier", labels=["a", "b"], text_pair=True)
    with pytest.raises(UserInputError, match="--target=phone"):
        LiteRTExportOptions("embedding", str(tmp_path), "m.tflite", target="phone")
    assert options(model_type="embedding").target == "mediapipe"
