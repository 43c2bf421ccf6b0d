"""BertTextClassifier: raw text in fit/evaluate/predict, as KerasHub's task."""

import csv
import json
import os
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras_hub_models import random_keras_hub_classifier

import bert_tf
from bert_tf.models import BertTextClassifier

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat", "dog"]
VOCAB += ["sat", "on", "mat", "##s", "ran", ".", "it", "was", "not", "good"]
SENTENCES_A = ["The cat sat on the mat.", "A dog ran.", "It was good.", "Dogs sat."]
SENTENCES_B = ["A cat sat.", "The dog was not good.", "It ran.", "The mats."]
LABELS = np.array([1, 0, 1, 0])


@pytest.fixture
def vocab_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(path)


def tiny_classifier(vocab_file, num_labels=2, seq_length=16, **kwargs):
    config = bert_tf.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        type_vocab_size=2,
    )
    preprocessor = bert_tf.BertPreprocessor(vocab_file, True, seq_length)
    return BertTextClassifier(config, num_labels, preprocessor, **kwargs)


# --- Learning from raw text ------------------------------------------------------


def read_glue_rows(path, count):
    with open(path, encoding="utf-8-sig") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[
            1 : count + 1
        ]


@pytest.fixture(scope="session")
def sst2_classifier(shared_data, minilm_dir):
    """MiniLM fine-tuned from raw strings with `compile()`'s defaults on the
    first 384 SST-2 training sentences (2 epochs of batch 32), then scored on
    the first 256 dev sentences. (MRPC on its whole training set, next to
    KerasHub's task: benchmarks/text_classifier_mrpc.py; a test can't afford it.)
    """
    train = read_glue_rows(os.path.join(shared_data, "glue/SST-2/train.tsv"), 384)
    dev = read_glue_rows(os.path.join(shared_data, "glue/SST-2/dev.tsv"), 256)
    keras.utils.set_random_seed(0)
    model = BertTextClassifier.from_checkpoint(minilm_dir, num_labels=2, seq_length=48)
    model.compile()
    untrained = model.evaluate(
        x=[r[0] for r in dev],
        y=np.array([int(r[1]) for r in dev]),
        batch_size=64,
        return_dict=True,
        verbose=0,
    )
    model.fit(
        x=[r[0] for r in train],
        y=np.array([int(r[1]) for r in train]),
        batch_size=32,
        epochs=2,
        verbose=0,
    )
    dev_x, dev_y = [r[0] for r in dev], np.array([int(r[1]) for r in dev])
    scores = model.evaluate(
        x=dev_x, y=dev_y, batch_size=64, return_dict=True, verbose=0
    )
    return {
        "model": model,
        "scores": scores,
        "untrained": untrained,
        "dev_x": dev_x,
        "dev_y": dev_y,
    }


@pytest.mark.slow
def test_learns_sst2_from_raw_sentences(sst2_classifier):
    """Held-out sentences: far above the majority class and the untrained
    head, and evaluate, predict and a direct call agree."""
    dev_y = sst2_classifier["dev_y"]
    majority = max(dev_y.mean(), 1 - dev_y.mean())
    accuracy = sst2_classifier["scores"]["sparse_categorical_accuracy"]
    before = sst2_classifier["untrained"]["sparse_categorical_accuracy"]
    print(
        f"SST-2 dev[:256]: accuracy {accuracy:.4f} (untrained {before:.4f}, "
        f"majority class {majority:.4f})"
    )
    # 0.10 is over three standard errors of an accuracy on 256 sentences.
    assert accuracy > majority + 0.10
    assert accuracy > before + 0.10
    model = sst2_classifier["model"]
    logits = model.predict(sst2_classifier["dev_x"], batch_size=64, verbose=0)
    assert logits.shape == (256, 2)
    assert np.mean(logits.argmax(-1) == dev_y) == pytest.approx(accuracy, abs=1e-6)


@pytest.mark.slow
def test_fits_mrpc_sentence_pairs(sst2_classifier, shared_data):
    """Pairs take the same path: a few steps on real MRPC pairs lower their
    loss (the text pair is packed as [CLS] a [SEP] b [SEP])."""
    rows = read_glue_rows(os.path.join(shared_data, "glue/MRPC/train.tsv"), 64)
    pairs = ([r[3] for r in rows], [r[4] for r in rows])
    labels = np.array([int(r[0]) for r in rows])
    model = sst2_classifier["model"]
    before = model.evaluate(x=pairs, y=labels, batch_size=64, verbose=0)[0]
    model.fit(x=pairs, y=labels, batch_size=16, epochs=3, verbose=0)
    after = model.evaluate(x=pairs, y=labels, batch_size=64, verbose=0)[0]
    print(f"MRPC train[:64] loss: {before:.4f} -> {after:.4f}")
    assert after < before - 0.05


@pytest.mark.slow
def test_vocab_is_found_beside_the_checkpoint(sst2_classifier, minilm_dir):
    preprocessor = sst2_classifier["model"].preprocessor
    assert preprocessor.vocab_file == os.path.join(minilm_dir, "vocab.txt")
    assert preprocessor.seq_length == 48


def test_a_checkpoint_without_vocabulary_is_named(tiny_tf1_checkpoint, tmp_path):
    prefix = os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt")
    for name in ("bert_config.json", "bert_model.ckpt.index"):
        os.symlink(os.path.join(tiny_tf1_checkpoint, name), tmp_path / name)
    data = "bert_model.ckpt.data-00000-of-00001"
    os.symlink(os.path.join(tiny_tf1_checkpoint, data), tmp_path / data)
    del prefix
    with pytest.raises(FileNotFoundError, match=f"No vocabulary beside {tmp_path}"):
        BertTextClassifier.from_checkpoint(str(tmp_path), num_labels=2)


# --- The same API as KerasHub's task ------------------------------------------


def run_like_a_keras_hub_user(task):
    """The KerasHub call pattern: compile(), fit on string pairs, evaluate,
    predict on pairs and on single sentences."""
    task.compile()
    history = task.fit(
        x=(SENTENCES_A, SENTENCES_B), y=LABELS, batch_size=2, epochs=1, verbose=0
    )
    loss, accuracy = task.evaluate(
        x=(SENTENCES_A, SENTENCES_B), y=LABELS, batch_size=2, verbose=0
    )
    pairs = task.predict((SENTENCES_A, SENTENCES_B), batch_size=2, verbose=0)
    single = task.predict(SENTENCES_A, batch_size=2, verbose=0)
    return history.history, loss, accuracy, pairs, single


@pytest.fixture(scope="module")
def keras_hub_preset(tmp_path_factory):
    keras_hub = pytest.importorskip("keras_hub", reason="keras-hub (test extra)")
    task = random_keras_hub_classifier(
        keras_hub, VOCAB, 2, hidden=16, sequence_length=16, seed=1
    )
    directory = str(tmp_path_factory.mktemp("keras_hub") / "classifier")
    task.save_to_preset(directory)
    return task, directory


@pytest.mark.slow
def test_same_call_pattern_and_outputs_as_keras_hub(keras_hub_preset):
    keras_hub_task, directory = keras_hub_preset
    ours = BertTextClassifier.from_checkpoint(directory, num_labels=2, seq_length=16)
    # Before training: the same preset gives the same logits from raw text.
    for x in ((SENTENCES_A, SENTENCES_B),):
        expected = keras_hub_task.predict(x, batch_size=2, verbose=0)
        actual = ours.predict(x, batch_size=2, verbose=0)
        assert np.abs(actual - expected).max() <= 1e-5
    # The same user code runs on both and returns the same kinds of things.
    theirs, mine = (run_like_a_keras_hub_user(t) for t in (keras_hub_task, ours))
    assert set(mine[0]) == set(theirs[0]) == {"loss", "sparse_categorical_accuracy"}
    assert np.isfinite(mine[1]) and 0 <= mine[2] <= 1
    for index in (3, 4):  # logits of pairs, of single sentences
        assert mine[index].shape == theirs[index].shape == (4, 2)


def test_token_ids_equal_keras_hubs_preprocessor(keras_hub_preset):
    keras_hub_task, directory = keras_hub_preset
    ours = BertTextClassifier.from_checkpoint(directory, num_labels=2, seq_length=16)
    assert ours.preprocessor.do_lower_case  # the preset tokenizer's lowercase=True
    theirs = keras_hub_task.preprocessor(x=(SENTENCES_A, SENTENCES_B))
    mine = ours.preprocessor((tf.constant(SENTENCES_A), tf.constant(SENTENCES_B)))
    np.testing.assert_array_equal(mine["input_ids"], theirs["token_ids"])
    np.testing.assert_array_equal(mine["segment_ids"], theirs["segment_ids"])
    np.testing.assert_array_equal(mine["input_mask"], theirs["padding_mask"])


# --- compile() ------------------------------------------------------------------


def test_compile_defaults_read_logits(vocab_file):
    model = tiny_classifier(vocab_file)
    model.compile()
    assert isinstance(model.loss, keras.losses.SparseCategoricalCrossentropy)
    assert model.loss.get_config()["from_logits"] is True
    assert isinstance(model.optimizer, keras.optimizers.AdamW)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    assert model.loss.get_config()["from_logits"] is True
    with pytest.raises(ValueError, match="reads probabilities.*outputs logits"):
        model.compile(loss=keras.losses.SparseCategoricalCrossentropy())
    with pytest.raises(ValueError, match="reads probabilities"):
        model.compile(loss=keras.losses.sparse_categorical_crossentropy)
    regression = tiny_classifier(vocab_file, num_labels=1)
    regression.compile()
    assert isinstance(regression.loss, keras.losses.MeanSquaredError)


def test_default_optimizer_does_not_decay_biases_and_layer_norms(vocab_file):
    model = tiny_classifier(vocab_file)
    model.compile()
    decayed = {
        v.path
        for v in model.trainable_variables
        if model.optimizer._use_weight_decay(v)
    }
    assert any("output_weights" in p for p in decayed)
    assert any("word_embeddings" in p for p in decayed)
    assert not any(p.endswith(("bias", "gamma", "beta")) for p in decayed)


# --- Datasets, scalar strings, calls ------------------------------------------------


@pytest.mark.slow
def test_unbatched_dataset_of_scalar_strings(vocab_file):
    model = tiny_classifier(vocab_file)
    preprocessor = model.preprocessor
    pairs = tf.data.Dataset.from_tensor_slices((SENTENCES_A, SENTENCES_B))
    one_by_one = list(pairs.map(lambda a, b: preprocessor((a, b))))
    batched = preprocessor((tf.constant(SENTENCES_A), tf.constant(SENTENCES_B)))
    for index, example in enumerate(one_by_one):
        assert example["input_ids"].shape == (16,)
        for key, value in example.items():
            np.testing.assert_array_equal(value, batched[key][index])
    single = next(
        iter(tf.data.Dataset.from_tensor_slices(SENTENCES_A).map(preprocessor))
    )
    np.testing.assert_array_equal(
        single["input_ids"], preprocessor(tf.constant(SENTENCES_A))["input_ids"][0]
    )
    # fit takes such a dataset with labels, unbatched, and batches it itself.
    model.compile()
    labelled = tf.data.Dataset.from_tensor_slices(((SENTENCES_A, SENTENCES_B), LABELS))
    history = model.fit(labelled, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    # Calling the model on raw text preprocesses it too.
    logits = model((SENTENCES_A, SENTENCES_B)).numpy()
    np.testing.assert_allclose(
        logits, model.predict((SENTENCES_A, SENTENCES_B), verbose=0), atol=1e-5
    )


@pytest.mark.slow
def test_tf1_checkpoint_of_the_text_classifier_is_a_run_classifier_one(
    vocab_file, tmp_path
):
    model = tiny_classifier(vocab_file, num_labels=3)
    prefix = bert_tf.save_tf1_checkpoint(model, tmp_path / "out" / "model.ckpt")
    (tmp_path / "out" / "vocab.txt").write_text(open(vocab_file).read())
    names = set(tf.train.load_checkpoint(prefix).get_variable_to_shape_map())
    assert {"output_weights", "output_bias"} <= names
    reloaded = BertTextClassifier.from_checkpoint(
        str(tmp_path / "out"), num_labels=3, seq_length=16
    )
    assert reloaded.checkpoint_load_report.missing == []
    np.testing.assert_allclose(
        reloaded.predict(SENTENCES_A, verbose=0),
        model.predict(SENTENCES_A, verbose=0),
        atol=1e-6,
    )


# --- A self-contained .keras file -----------------------------------------------

_LOAD_IN_FRESH_PROCESS = """
import json, sys
import bert_tf, keras, numpy as np
model = keras.saving.load_model(sys.argv[1])
logits = model.predict((sys.argv[2].split("|"), sys.argv[3].split("|")), verbose=0)
print(json.dumps({
    "class": type(model).__name__,
    "policy": model.dtype_policy.name,
    "encoder_policy": model.encoder.dtype_policy.name,
    "block_compute_dtype": model.encoder.encoder_layers[0].compute_dtype,
    "vocab_size": model.preprocessor.vocab_size,
    "logits": np.asarray(logits, "float64").tolist(),
}))
"""


@pytest.mark.slow
def test_keras_file_loads_in_a_fresh_process_without_the_vocab(vocab_file, tmp_path):
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    try:
        model = tiny_classifier(vocab_file, num_labels=3)
    finally:
        keras.config.set_dtype_policy(previous)
    assert model.encoder.encoder_layers[0].compute_dtype == "bfloat16"
    expected = model.predict((SENTENCES_A, SENTENCES_B), verbose=0)
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    os.remove(vocab_file)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(bert_tf.__file__)))]
        + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    result = subprocess.run(
        [sys.executable, "-c", _LOAD_IN_FRESH_PROCESS, path]
        + ["|".join(SENTENCES_A), "|".join(SENTENCES_B)],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(tmp_path),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["class"] == "BertTextClassifier"
    assert loaded["policy"] == loaded["encoder_policy"] == "mixed_bfloat16"
    assert loaded["block_compute_dtype"] == "bfloat16"
    assert loaded["vocab_size"] == len(VOCAB)
    np.testing.assert_allclose(loaded["logits"], expected, atol=1e-6)


_TRAIN_IN_FRESH_PROCESS = """
import json, sys, warnings
import bert_tf, keras, numpy as np
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    model = keras.saving.load_model(sys.argv[1])
a, b = sys.argv[2].split("|"), sys.argv[3].split("|")
labels = np.array(json.loads(sys.argv[4]))
iterations = int(model.optimizer.iterations.numpy())
decayed = [v.path for v in model.trainable_variables
           if model.optimizer._use_weight_decay(v)]
history = model.fit((a, b), labels, batch_size=4, epochs=1, shuffle=False, verbose=0)
print(json.dumps({
    "warnings": [str(w.message) for w in caught],
    "optimizer": type(model.optimizer).__name__,
    "iterations_at_load": iterations,
    "decays_a_bias": any(p.endswith(("bias", "gamma", "beta")) for p in decayed),
    "loss": history.history["loss"][0],
    "metrics": sorted(history.history),
    "logits": np.asarray(model.predict((a, b), verbose=0), "float64").tolist(),
}))
"""


@pytest.mark.slow
def test_reloaded_keras_file_trains_on_as_the_original(vocab_file, tmp_path):
    """compile()'s defaults and the optimizer state travel in the .keras file:
    a fresh process that loads it takes the next step the original takes."""
    config = bert_tf.BertConfig(
        vocab_size=len(VOCAB),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=32,
        hidden_dropout_prob=0.0,  # deterministic steps in both processes
        attention_probs_dropout_prob=0.0,
    )
    preprocessor = bert_tf.BertPreprocessor(vocab_file, True, 16)
    model = BertTextClassifier(config, 2, preprocessor, dropout_rate=0.0)
    model.compile()
    pairs = (SENTENCES_A, SENTENCES_B)
    model.fit(pairs, LABELS, batch_size=4, epochs=1, shuffle=False, verbose=0)
    path = str(tmp_path / "classifier.keras")
    model.save(path)
    history = model.fit(pairs, LABELS, batch_size=4, epochs=1, shuffle=False, verbose=0)
    expected = model.predict(pairs, verbose=0)
    result = subprocess.run(
        [sys.executable, "-c", _TRAIN_IN_FRESH_PROCESS, path]
        + ["|".join(SENTENCES_A), "|".join(SENTENCES_B), json.dumps(LABELS.tolist())],
        capture_output=True,
        text=True,
        cwd=str(tmp_path),
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert not [w for w in loaded["warnings"] if "compile" in w], loaded["warnings"]
    assert loaded["optimizer"] == "AdamW"
    assert loaded["iterations_at_load"] == 1
    assert loaded["decays_a_bias"] is False
    assert "sparse_categorical_accuracy" in loaded["metrics"]
    np.testing.assert_allclose(loaded["loss"], history.history["loss"][0], rtol=1e-5)
    np.testing.assert_allclose(loaded["logits"], expected, atol=1e-5)


def test_predict_labels_names_the_most_probable_class(vocab_file, tmp_path):
    model = tiny_classifier(vocab_file, num_labels=3, labels=["neg", "neu", "pos"])
    logits = model.predict(SENTENCES_A, verbose=0)
    probabilities = model.predict_probabilities(SENTENCES_A, verbose=0)
    expected = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    np.testing.assert_allclose(probabilities, expected, rtol=1e-5)
    predicted = model.predict_labels(SENTENCES_A)
    assert [p["label"] for p in predicted] == [
        ["neg", "neu", "pos"][i] for i in logits.argmax(-1)
    ]
    np.testing.assert_allclose([p["score"] for p in predicted], expected.max(-1))
    # The names travel in the .keras file; without names, the ids are used.
    path = str(tmp_path / "named.keras")
    model.save(path)
    assert keras.saving.load_model(path).labels == ["neg", "neu", "pos"]
    unnamed = tiny_classifier(vocab_file, num_labels=2)
    assert {p["label"] for p in unnamed.predict_labels(SENTENCES_A)} <= {"0", "1"}
    with pytest.raises(ValueError, match="2 labels"):
        tiny_classifier(vocab_file, num_labels=3, labels=["a", "b"])


def test_run_classifier_output_dir_gives_the_label_names(vocab_file, tmp_path):
    """from_checkpoint on an output_dir reads its label_list.json."""
    from bert_tf.data_prep.label_list_file import write_label_list

    model = tiny_classifier(vocab_file, num_labels=2)
    output_dir = tmp_path / "run"
    output_dir.mkdir()
    bert_tf.save_tf1_checkpoint(model, str(output_dir / "model.ckpt-1"))
    (output_dir / "vocab.txt").write_text(open(vocab_file).read())
    write_label_list(str(output_dir), ["not_entailment", "entailment"])
    loaded = BertTextClassifier.from_checkpoint(str(output_dir), seq_length=16)
    assert loaded.labels == ["not_entailment", "entailment"]
    np.testing.assert_allclose(
        loaded.predict(SENTENCES_A, verbose=0),
        model.predict(SENTENCES_A, verbose=0),
        atol=1e-5,
    )
