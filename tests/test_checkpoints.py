"""Checkpoints: the original's TF1 layout (read and write), path forms, errors."""

import logging
import os
import shutil

import numpy as np
import pytest
import tensorflow as tf
from keras_hub_models import random_keras_hub_classifier
from model_inputs import random_features
from original_graph import run_original_graph

import bert_tf
from bert_tf.checkpoints import check_vocab_matches_config
from bert_tf.checkpoints import find_checkpoint
from bert_tf.checkpoints import load_checkpoint


def tiny_features(seed=0, batch=32, seq=16, predictions=20):
    """Inputs with the shapes baked into the tiny checkpoint's saved graph."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(2, seq + 1, size=batch)
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    segments = (
        (np.arange(seq)[None, :] >= lengths[:, None] // 2) & (mask == 1)
    ).astype("int32")
    return {
        "input_ids": (rng.integers(0, 15, size=(batch, seq)) * mask).astype("int32"),
        "input_mask": mask,
        "segment_ids": segments,
        "masked_lm_positions": np.sort(
            rng.integers(0, seq, size=(batch, predictions)), axis=1
        ).astype("int32"),
        "masked_lm_ids": np.zeros((batch, predictions), "int32"),
        "masked_lm_weights": np.ones((batch, predictions), "float32"),
        "next_sentence_labels": np.zeros((batch, 1), "int32"),
    }


MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


def test_every_variable_of_the_google_checkpoint_is_mapped(tiny_tf1_checkpoint):
    model = bert_tf.BertPretrainer.from_checkpoint(tiny_tf1_checkpoint)
    report = model.checkpoint_load_report
    reader = tf.train.load_checkpoint(
        os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt")
    )
    weights = {
        name
        for name in reader.get_variable_to_shape_map()
        if not name.endswith(("adam_m", "adam_v")) and name != "global_step"
    }
    assert weights == set(report.loaded)
    assert all(n.startswith(("bert/", "cls/")) for n in weights)
    assert len(weights) == 2 * 16 + 5 + 2 + 7  # 2 layers, embeddings, pooler, heads
    assert report.missing == [] and report.unused == []  # adam slots are skipped


def test_outputs_equal_the_original_tf1_graph(tiny_tf1_checkpoint):
    """Runs the graph the original run_pretraining.py saved next to the weights.

    That graph was built by an early modeling.py whose gelu used erf (the saved
    ops contain `Erf`, not `Tanh`), so this checkpoint is loaded with
    hidden_act="gelu_exact". Everything else is the original's math, op for op.
    """
    prefix = os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt")
    meta = tf.compat.v1.MetaGraphDef()
    with open(prefix + ".meta", "rb") as f:
        meta.ParseFromString(f.read())
    gelu_ops = {n.op for n in meta.graph_def.node if "intermediate/dense/" in n.name}
    assert "Erf" in gelu_ops and "Tanh" not in gelu_ops

    config = bert_tf.BertConfig.from_json_file(
        os.path.join(tiny_tf1_checkpoint, "bert_config.json")
    )
    config.hidden_act = "gelu_exact"
    model = bert_tf.BertPretrainer.from_checkpoint(tiny_tf1_checkpoint, config=config)
    for seed in (0, 1):
        features = tiny_features(seed)
        expected = run_original_graph(prefix + ".meta", prefix, features, num_layers=2)
        ours = model({k: features[k] for k in MODEL_INPUTS})
        encoded = model.encoder({k: features[k] for k in MODEL_INPUTS[:3]})
        np.testing.assert_allclose(
            encoded["sequence_output"].numpy().reshape(-1, 4),
            expected["sequence_output"].reshape(-1, 4),
            atol=1e-5,
        )
        np.testing.assert_allclose(
            encoded["pooled_output"].numpy(), expected["pooled_output"], atol=1e-5
        )
        np.testing.assert_allclose(
            ours["mlm_logits"].numpy().reshape(-1, 15),
            expected["mlm_logits"],
            atol=1e-5,
        )
        np.testing.assert_allclose(
            ours["nsp_logits"].numpy(), expected["nsp_logits"], atol=1e-5
        )


def test_save_tf1_checkpoint_round_trip_is_exact(tiny_tf1_checkpoint, tmp_path):
    model = bert_tf.BertPretrainer.from_checkpoint(tiny_tf1_checkpoint)
    prefix = bert_tf.save_tf1_checkpoint(model, tmp_path / "export" / "bert_model.ckpt")

    original = tf.train.load_checkpoint(
        os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt")
    )
    written = tf.train.load_checkpoint(prefix)
    names = set(written.get_variable_to_shape_map())
    assert names == set(model.checkpoint_load_report.loaded)  # original names, no slots
    for name in names:
        np.testing.assert_array_equal(
            written.get_tensor(name), original.get_tensor(name)
        )

    config_file = tmp_path / "export" / "bert_config.json"
    assert bert_tf.BertConfig.from_json_file(config_file) == model.encoder.config

    reloaded = bert_tf.BertPretrainer.from_checkpoint(prefix)
    features = {k: v for k, v in tiny_features().items() if k in MODEL_INPUTS}
    for key in ("mlm_logits", "nsp_logits"):
        np.testing.assert_array_equal(reloaded(features)[key], model(features)[key])


def test_round_trip_of_every_task_model(tmp_path, tiny_config):
    features = random_features(tiny_config)
    for cls, kwargs in [
        (bert_tf.BertEncoder, {}),
        (bert_tf.BertClassifier, {"num_labels": 3}),
        (bert_tf.BertSpanLabeler, {}),
        (bert_tf.BertTokenClassifier, {"num_labels": 4}),
    ]:
        model = cls(tiny_config, **kwargs)
        prefix = bert_tf.save_tf1_checkpoint(
            model, tmp_path / cls.__name__ / "model.ckpt"
        )
        reloaded = cls.from_checkpoint(prefix, **kwargs)
        assert reloaded.checkpoint_load_report.missing == []
        assert reloaded.checkpoint_load_report.unused == []
        expected, actual = model(features), reloaded(features)
        for key in expected:
            if key != "encoder_outputs":
                np.testing.assert_array_equal(actual[key], expected[key])


def test_classifier_names_are_the_originals(tiny_config):
    names = set(
        bert_tf.BertClassifier(tiny_config, num_labels=2).checkpoint_variables()
    )
    assert {"output_weights", "output_bias"} <= names  # root scope, as run_classifier
    names = set(bert_tf.BertSpanLabeler(tiny_config).checkpoint_variables())
    assert {"cls/squad/output_weights", "cls/squad/output_bias"} <= names
    encoder = bert_tf.BertEncoder(tiny_config)
    variables = encoder.checkpoint_variables()
    assert variables["bert/encoder/layer_1/attention/self/query/kernel"].shape == (
        32,
        32,
    )
    assert variables["bert/encoder/layer_0/intermediate/dense/kernel"].shape == (32, 37)
    assert variables["bert/embeddings/token_type_embeddings"].shape == (2, 32)
    head = bert_tf.BertClassifier(tiny_config, num_labels=5).checkpoint_variables()
    assert head["output_weights"].shape == (5, 32)  # [num_labels, H], as the original


def test_classifier_from_a_pretraining_checkpoint_initialises_its_head(
    tiny_tf1_checkpoint, caplog
):
    # absl logs through the "absl" logger; other code (e.g. a SavedModel export)
    # may have set its level, so set it here, not only the root level.
    with caplog.at_level(logging.INFO, logger="absl"):
        model = bert_tf.BertClassifier.from_checkpoint(
            tiny_tf1_checkpoint, num_labels=2
        )
    report = model.checkpoint_load_report
    assert report.missing == ["output_weights", "output_bias"]
    assert {n for n in report.unused} == {
        "cls/predictions/output_bias",
        "cls/predictions/transform/LayerNorm/beta",
        "cls/predictions/transform/LayerNorm/gamma",
        "cls/predictions/transform/dense/bias",
        "cls/predictions/transform/dense/kernel",
        "cls/seq_relationship/output_bias",
        "cls/seq_relationship/output_weights",
    }
    log = caplog.text
    assert "not in checkpoint (initialised): output_weights" in log
    assert "in checkpoint, not used: cls/seq_relationship/output_weights" in log


def test_path_forms(tiny_tf1_checkpoint, minilm_dir):
    prefix = os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt")
    for path in (prefix, tiny_tf1_checkpoint):
        files = find_checkpoint(path)
        assert files.config_file.endswith("bert_config.json")
        assert files.vocab_file.endswith("vocab.txt")
    files = find_checkpoint(minilm_dir)
    assert files.config_file.endswith("config.json")
    files = find_checkpoint(os.path.join(minilm_dir, "model.safetensors"))
    assert "Hugging Face" in files.reader.kind


def test_missing_paths_are_named(tmp_path, tiny_tf1_checkpoint):
    with pytest.raises(FileNotFoundError, match="nowhere/bert_model.ckpt"):
        bert_tf.BertEncoder.from_checkpoint(
            str(tmp_path / "nowhere" / "bert_model.ckpt")
        )
    with pytest.raises(
        FileNotFoundError, match=f"No BERT checkpoint in directory {tmp_path}"
    ):
        bert_tf.BertEncoder.from_checkpoint(str(tmp_path))
    # A prefix whose bert_config.json is not beside it.
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    for suffix in (".index", ".data-00000-of-00001"):
        shutil.copy(
            os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt" + suffix), lonely
        )
    with pytest.raises(FileNotFoundError, match=str(lonely / "bert_config.json")):
        bert_tf.BertEncoder.from_checkpoint(str(lonely / "bert_model.ckpt"))


def test_shape_mismatch_names_variable_and_shapes(tiny_tf1_checkpoint):
    config = bert_tf.BertConfig.from_json_file(
        os.path.join(tiny_tf1_checkpoint, "bert_config.json")
    )
    config.intermediate_size = 8
    with pytest.raises(ValueError) as info:
        bert_tf.BertEncoder.from_checkpoint(tiny_tf1_checkpoint, config=config)
    message = str(info.value)
    assert "bert/encoder/layer_0/intermediate/dense/kernel" in message
    assert "(4, 16)" in message and "(4, 8)" in message


def test_vocab_and_config_mismatch_is_reported(tiny_tf1_checkpoint, tmp_path, caplog):
    # The tiny checkpoint's vocab.txt has 15 entries (no final newline) for
    # vocab_size 15: no warning. A copy with a shorter vocab is reported.
    with caplog.at_level(logging.WARNING):
        bert_tf.BertEncoder.from_checkpoint(tiny_tf1_checkpoint)
    assert "entries but vocab_size" not in caplog.text
    copy = shutil.copytree(tiny_tf1_checkpoint, tmp_path / "short_vocab")
    (copy / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
    with caplog.at_level(logging.WARNING):
        bert_tf.BertEncoder.from_checkpoint(str(copy))
    assert "vocab.txt has 4 entries but vocab_size is 15" in caplog.text

    config = bert_tf.BertConfig(vocab_size=3, hidden_size=4, num_attention_heads=1)
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n")
    with pytest.raises(
        ValueError, match=r"vocab.txt has 4 entries but vocab_size .* is 3"
    ):
        check_vocab_matches_config(str(vocab), config)
    assert (
        check_vocab_matches_config(
            str(vocab),
            bert_tf.BertConfig(vocab_size=4, hidden_size=4, num_attention_heads=1),
        )
        == 4
    )


def test_load_checkpoint_into_existing_model(tiny_tf1_checkpoint):
    config = bert_tf.BertConfig.from_json_file(
        os.path.join(tiny_tf1_checkpoint, "bert_config.json")
    )
    encoder = bert_tf.BertEncoder(config)
    before = encoder.embeddings.word_embeddings.numpy().copy()
    report = load_checkpoint(encoder, tiny_tf1_checkpoint)
    after = encoder.embeddings.word_embeddings.numpy()
    reader = tf.train.load_checkpoint(
        os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt")
    )
    np.testing.assert_array_equal(
        after, reader.get_tensor("bert/embeddings/word_embeddings")
    )
    assert not np.array_equal(before, after)
    assert len(report.loaded) == 39 and len(report.unused) == 7


# --- Checkpoints that cannot silently mismatch --------------------------------


def test_a_config_with_more_or_fewer_layers_fails_naming_the_variables(
    tiny_tf1_checkpoint,
):
    config = bert_tf.BertConfig.from_json_file(
        os.path.join(tiny_tf1_checkpoint, "bert_config.json")
    )
    config.num_hidden_layers = 3
    with pytest.raises(bert_tf.checkpoints.CheckpointMismatchError) as info:
        bert_tf.BertClassifier.from_checkpoint(
            tiny_tf1_checkpoint, config=config, num_labels=2
        )
    message = str(info.value)
    assert os.path.join(tiny_tf1_checkpoint, "bert_model.ckpt") in message
    assert "16 of the model's" in message  # layer_2's 16 variables
    assert "bert/encoder/layer_2/attention/self/query/kernel" in message
    assert "(16 in all)" in message and "3 layers" in message

    config.num_hidden_layers = 1
    with pytest.raises(bert_tf.checkpoints.CheckpointMismatchError) as info:
        bert_tf.BertEncoder.from_checkpoint(tiny_tf1_checkpoint, config=config)
    assert "16 of its encoder entries match no variable" in str(info.value)
    assert "bert/encoder/layer_1/" in str(info.value)


def test_only_task_heads_are_initialised_and_listed_at_warning(
    tiny_tf1_checkpoint, caplog
):
    with caplog.at_level(logging.INFO, logger="absl"):
        model = bert_tf.BertClassifier.from_checkpoint(
            tiny_tf1_checkpoint, num_labels=2
        )
    assert model.checkpoint_load_report.missing == ["output_weights", "output_bias"]
    fresh = [
        r for r in caplog.records if "not in checkpoint (initialised)" in r.message
    ]
    assert [r.levelname for r in fresh] == ["WARNING", "WARNING"]


def test_a_tf2_object_checkpoint_that_is_no_bert_encoder_is_named(tmp_path):
    variable = tf.Variable(np.ones((2, 3), "float32"))
    prefix = tf.train.Checkpoint(network=tf.Module(), weights=variable).write(
        str(tmp_path / "bert_model.ckpt")
    )
    config = bert_tf.BertConfig(vocab_size=5, hidden_size=4, num_attention_heads=1)
    config.to_json_file(str(tmp_path / "bert_config.json"))
    with pytest.raises(ValueError) as info:
        bert_tf.BertEncoder.from_checkpoint(str(tmp_path))
    message = str(info.value)
    assert prefix in message
    assert "TF2 object-based checkpoint" in message
    assert "no TF Model Garden BertEncoder" in message
    assert "['weights']" in message


@pytest.fixture(scope="module")
def model_garden_dirs(shared_data):
    base = os.path.join(shared_data, "tfm")
    return {
        name: os.path.join(base, name)
        for name in ("tfm_bert_encoder_from_tiny", "tfm_bert_encoder_v2_random")
    }


@pytest.mark.parametrize(
    "name", ["tfm_bert_encoder_from_tiny", "tfm_bert_encoder_v2_random"]
)
def test_model_garden_checkpoints_give_model_gardens_outputs(model_garden_dirs, name):
    """Legacy `networks.BertEncoder` (objects numbered layer_with_weights-N) and
    `BertEncoderV2` checkpoints, written by tf.train.Checkpoint, against the
    outputs Model Garden computed itself."""
    directory = model_garden_dirs[name]
    encoder = bert_tf.BertEncoder.from_checkpoint(directory)
    report = encoder.checkpoint_load_report
    assert len(report.loaded) == 39 and report.missing == [] and report.unused == []
    assert "Model Garden" in find_checkpoint(directory).reader.kind
    expected = np.load(os.path.join(directory, "expected_outputs.npz"))
    outputs = encoder({k: expected[k] for k in MODEL_INPUTS[:3]})
    for key in ("sequence_output", "pooled_output"):
        delta = np.abs(outputs[key].numpy() - expected[key]).max()
        assert delta <= 1e-5, (key, delta)


def test_model_garden_conversion_of_the_tf1_checkpoint_holds_its_weights(
    model_garden_dirs, tiny_tf1_checkpoint
):
    converted = bert_tf.BertEncoder.from_checkpoint(
        model_garden_dirs["tfm_bert_encoder_from_tiny"]
    )
    original = bert_tf.BertEncoder.from_checkpoint(tiny_tf1_checkpoint)
    ours, theirs = converted.checkpoint_variables(), original.checkpoint_variables()
    for name, variable in theirs.items():
        np.testing.assert_array_equal(ours[name].numpy(), variable.numpy(), name)


def test_model_garden_encoder_under_another_object_name(model_garden_dirs, tmp_path):
    """An encoder saved as `model` (not `encoder`) is found by its layout; a
    missing block is an error naming the variables."""
    source = os.path.join(
        model_garden_dirs["tfm_bert_encoder_v2_random"], "bert_model.ckpt"
    )
    reader = tf.train.load_checkpoint(source)
    values = {}
    for name in reader.get_variable_to_shape_map():
        if name.startswith("encoder/") and "_transformer_layers/1/" not in name:
            path = name[len("encoder/") : -len("/.ATTRIBUTES/VARIABLE_VALUE")]
            values[path] = tf.Variable(reader.get_tensor(name))
    root = tf.Module()
    root.model = tf.Module()
    for path, variable in values.items():
        node = root.model
        *parents, leaf = path.split("/")
        for part in parents:
            if not hasattr(node, part):
                setattr(node, part, tf.Module())
            node = getattr(node, part)
        setattr(node, leaf, variable)
    prefix = tf.train.Checkpoint(model=root.model).write(str(tmp_path / "ckpt"))
    shutil.copy(
        os.path.join(
            model_garden_dirs["tfm_bert_encoder_v2_random"], "bert_config.json"
        ),
        tmp_path,
    )
    config = bert_tf.BertConfig.from_json_file(str(tmp_path / "bert_config.json"))
    config.num_hidden_layers = 1
    encoder = bert_tf.BertEncoder.from_checkpoint(prefix, config=config)
    assert len(encoder.checkpoint_load_report.loaded) == 23
    with pytest.raises(bert_tf.checkpoints.CheckpointMismatchError) as info:
        bert_tf.BertEncoder.from_checkpoint(prefix)
    assert prefix in str(info.value)
    assert "bert/encoder/layer_1/" in str(info.value)


KERAS_HUB_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "a", "cat"]
KERAS_HUB_VOCAB += ["dog", "sat", "on", "mat", "##s", "ran", "."]


@pytest.fixture(scope="module")
def keras_hub_presets(tmp_path_factory):
    """A KerasHub BertTextClassifier preset and its backbone's own preset,
    written by keras_hub with random weights."""
    keras_hub = pytest.importorskip("keras_hub", reason="keras-hub (test extra)")
    classifier = random_keras_hub_classifier(keras_hub, KERAS_HUB_VOCAB, 3)
    backbone, tokenizer = classifier.backbone, classifier.preprocessor.tokenizer
    rng = np.random.default_rng(0)
    root = tmp_path_factory.mktemp("keras_hub")
    backbone.save_to_preset(str(root / "backbone"))
    tokenizer.save_to_preset(str(root / "backbone"))
    classifier.save_to_preset(str(root / "classifier"))
    ids = rng.integers(0, len(KERAS_HUB_VOCAB), size=(3, 12)).astype("int32")
    mask = np.ones_like(ids)
    mask[1, 8:] = 0
    mask[2, 5:] = 0
    segments = (np.arange(12)[None, :] >= 6).astype("int32") * mask
    ids *= mask
    inputs = {"token_ids": ids, "segment_ids": segments, "padding_mask": mask}
    return {
        "backbone_dir": str(root / "backbone"),
        "classifier_dir": str(root / "classifier"),
        "features": {"input_ids": ids, "input_mask": mask, "segment_ids": segments},
        "backbone_outputs": {k: v.numpy() for k, v in backbone(inputs).items()},
        "logits": classifier(inputs).numpy(),
    }


def test_keras_hub_backbone_preset_gives_keras_hubs_outputs(keras_hub_presets):
    directory = keras_hub_presets["backbone_dir"]
    files = find_checkpoint(directory)
    assert files.reader.kind == "KerasHub BertBackbone preset"
    assert files.vocab_file.endswith(os.path.join("tokenizer", "vocabulary.txt"))
    encoder = bert_tf.BertEncoder.from_checkpoint(directory)
    report = encoder.checkpoint_load_report
    assert len(report.loaded) == 39 and report.missing == [] and report.unused == []
    outputs = encoder(keras_hub_presets["features"])
    for key, expected in keras_hub_presets["backbone_outputs"].items():
        delta = np.abs(outputs[key].numpy() - expected).max()
        assert delta <= 1e-5, (key, delta)


def test_keras_hub_classifier_preset_loads_with_its_head(keras_hub_presets):
    directory = keras_hub_presets["classifier_dir"]
    classifier = bert_tf.BertClassifier.from_checkpoint(directory, num_labels=3)
    report = classifier.checkpoint_load_report
    assert report.missing == [] and report.unused == []
    assert {"output_weights", "output_bias"} <= set(report.loaded)
    logits = classifier(keras_hub_presets["features"])["logits"].numpy()
    delta = np.abs(logits - keras_hub_presets["logits"]).max()
    assert delta <= 1e-5, delta
    # The wrong number of labels is a shape error naming the head.
    with pytest.raises(ValueError, match="output_weights.*has shape"):
        bert_tf.BertClassifier.from_checkpoint(directory, num_labels=2)
