"""Task models: heads as the original, tied MLM decoder, serialization."""

import keras
import numpy as np
import pytest
from model_inputs import random_features

import bert_tf


def positions(batch=3, count=4, seq=11, seed=0):
    rng = np.random.default_rng(seed)
    return np.sort(rng.integers(0, seq, size=(batch, count)), axis=1).astype("int32")


def test_pretrainer_heads_follow_the_original(tiny_config):
    model = bert_tf.BertPretrainer(tiny_config)
    features = random_features(tiny_config)
    outputs = model({**features, "masked_lm_positions": positions()})
    assert outputs["mlm_logits"].shape == (3, 4, 99)
    assert outputs["nsp_logits"].shape == (3, 2)
    # The decoder is the word-embedding table itself (tied), plus an own bias.
    assert (
        model.masked_lm.embeddings.word_embeddings
        is model.encoder.embeddings.word_embeddings
    )
    assert np.all(model.masked_lm.output_bias.numpy() == 0)

    # Hand computation of get_masked_lm_output from the encoder's output.
    sequence = model.encoder(features)["sequence_output"].numpy()
    gathered = np.take_along_axis(sequence, positions()[:, :, None], axis=1)
    head = model.masked_lm
    x = gathered @ head.transform.kernel.numpy() + head.transform.bias.numpy()
    x = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    x = (x - mean) / np.sqrt(
        var + 1e-12
    ) * head.layer_norm.gamma.numpy() + head.layer_norm.beta.numpy()
    logits = (
        x @ model.encoder.embeddings.word_embeddings.numpy().T
        + head.output_bias.numpy()
    )
    np.testing.assert_allclose(outputs["mlm_logits"], logits, atol=1e-4)

    pooled = model.encoder(features)["pooled_output"].numpy()
    weights = (
        model.next_sentence.output_weights.numpy()
    )  # [2, H] as cls/seq_relationship
    assert weights.shape == (2, 32)
    nsp = pooled @ weights.T + model.next_sentence.output_bias.numpy()
    np.testing.assert_allclose(outputs["nsp_logits"], nsp, atol=1e-5)


def test_classifier_dropout_only_in_training_and_regression(tiny_config):
    model = bert_tf.BertClassifier(tiny_config, num_labels=3)
    features = random_features(tiny_config)
    logits = model(features)["logits"].numpy()
    assert logits.shape == (3, 3)
    np.testing.assert_array_equal(model(features)["logits"], logits)
    assert np.abs(model(features, training=True)["logits"].numpy() - logits).max() > 0
    pooled = model.encoder(features)["pooled_output"].numpy()
    head = model.classifier
    expected = pooled @ head.output_weights.numpy().T + head.output_bias.numpy()
    np.testing.assert_allclose(logits, expected, atol=1e-5)
    regression = bert_tf.BertClassifier(tiny_config, num_labels=1)
    assert regression(features)["logits"].shape == (3, 1)


def test_span_labeler_rows_are_start_and_end(tiny_config):
    model = bert_tf.BertSpanLabeler(tiny_config)
    features = random_features(tiny_config)
    outputs = model(features)
    sequence = model.encoder(features)["sequence_output"].numpy()
    weights = model.span.output_weights.numpy()  # cls/squad/output_weights [2, H]
    bias = model.span.output_bias.numpy()
    np.testing.assert_allclose(
        outputs["start_logits"], sequence @ weights[0] + bias[0], atol=1e-5
    )
    np.testing.assert_allclose(
        outputs["end_logits"], sequence @ weights[1] + bias[1], atol=1e-5
    )


def test_token_classifier_shapes(tiny_config):
    model = bert_tf.BertTokenClassifier(tiny_config, num_labels=5)
    assert model(random_features(tiny_config))["logits"].shape == (3, 11, 5)


@pytest.mark.parametrize(
    "cls, kwargs, reads_pooler",
    [
        (bert_tf.BertClassifier, {"num_labels": 2}, True),
        (bert_tf.BertSpanLabeler, {}, False),
        (bert_tf.BertTokenClassifier, {"num_labels": 4}, False),
    ],
)
def test_every_trainable_variable_gets_a_gradient(
    tiny_config, cls, kwargs, reads_pooler
):
    """Span and token heads do not read the pooler, so it is not trained (the
    optimizer would warn that it has no gradient); its weights are kept."""
    import tensorflow as tf

    model = cls(tiny_config, **kwargs)
    features = random_features(tiny_config)
    with tf.GradientTape() as tape:
        loss = sum(tf.reduce_sum(v) for v in tf.nest.flatten(model(features)))
    gradients = tape.gradient(loss, model.trainable_variables)
    assert all(g is not None for g in gradients)
    trained = [v.path for v in model.trainable_variables]
    assert any("pooler" in p for p in trained) == reads_pooler
    assert any("pooler" in v.path for v in model.variables)
    # Still written to (and read from) checkpoints.
    assert any("pooler" in name for name in model.checkpoint_variables())


@pytest.mark.parametrize(
    "cls, kwargs, extra_inputs",
    [
        (bert_tf.BertPretrainer, {}, {"masked_lm_positions": positions()}),
        (bert_tf.BertClassifier, {"num_labels": 3, "dropout_rate": 0.2}, {}),
        (bert_tf.BertSpanLabeler, {}, {}),
        (bert_tf.BertTokenClassifier, {"num_labels": 4}, {}),
    ],
)
def test_keras_file_round_trip(tmp_path, tiny_config, cls, kwargs, extra_inputs):
    model = cls(tiny_config, **kwargs)
    features = {**random_features(tiny_config), **extra_inputs}
    path = str(tmp_path / "model.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert type(restored) is cls
    for key, value in kwargs.items():
        assert getattr(restored, key) == value
    expected = model(features)
    actual = restored(features)
    for key in expected:
        np.testing.assert_array_equal(actual[key], expected[key])
    if cls is bert_tf.BertPretrainer:  # still tied after loading
        assert restored.masked_lm.embeddings is restored.encoder.embeddings


def test_task_model_wraps_a_given_encoder(tiny_config):
    encoder = bert_tf.BertEncoder(tiny_config)
    model = bert_tf.BertClassifier(encoder, num_labels=2)
    assert model.encoder is encoder
    with pytest.raises(TypeError, match="BertEncoder or a BertConfig"):
        bert_tf.BertClassifier("bert_config.json", num_labels=2)


def test_layers_serialize(tiny_config):
    from bert_tf.layers import BertEmbeddings
    from bert_tf.layers import LogitsHead
    from bert_tf.layers import TransformerBlock

    for layer in (
        BertEmbeddings(99, 32, 40, 2, dropout_rate=0.2, name="e"),
        LogitsHead(3, 32, dropout_rate=0.1),
        TransformerBlock(
            32, 4, 37, hidden_act="relu", attention_probs_dropout_prob=0.3
        ),
    ):
        config = layer.get_config()
        clone = type(layer).from_config(config)
        assert clone.get_config() == config


def test_output_range_computes_the_same_first_positions(tiny_config):
    full = bert_tf.BertEncoder(tiny_config)
    first_two = bert_tf.BertEncoder(tiny_config, output_range=2)
    first_two.set_weights(full.get_weights())
    features = random_features(tiny_config)
    expected, actual = full(features), first_two(features)
    assert actual["sequence_output"].shape == (3, 2, 32)
    np.testing.assert_allclose(
        actual["sequence_output"], expected["sequence_output"][:, :2], atol=1e-5
    )
    np.testing.assert_allclose(
        actual["pooled_output"], expected["pooled_output"], atol=1e-5
    )
    np.testing.assert_array_equal(
        actual["encoder_outputs"][0], expected["encoder_outputs"][0]
    )


def test_classifier_uses_only_cls_in_the_last_layer(tiny_config):
    model = bert_tf.BertClassifier(tiny_config, num_labels=2)
    assert model.encoder.output_range == 1
    full = bert_tf.BertClassifier(bert_tf.BertEncoder(tiny_config), num_labels=2)
    full.set_weights(model.get_weights())
    features = random_features(tiny_config)
    np.testing.assert_allclose(
        model(features)["logits"], full(features)["logits"], atol=1e-5
    )


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (bert_tf.BertEncoder, {}),
        (bert_tf.BertClassifier, {"num_labels": 2}),
        (bert_tf.BertSpanLabeler, {}),
    ],
)
def test_keras_file_keeps_the_dtype_policy(tmp_path, tiny_config, cls, kwargs):
    """A model built under mixed_bfloat16 reloads as such where the global
    policy is float32 (every layer, not only the model's own attribute)."""
    model = cls(tiny_config, dtype="mixed_bfloat16", **kwargs)
    encoder = getattr(model, "encoder", model)
    assert encoder.encoder_layers[0].compute_dtype == "bfloat16"
    path = str(tmp_path / "model.keras")
    model.save(path)
    assert keras.config.dtype_policy().name == "float32"
    restored = keras.saving.load_model(path)
    restored_encoder = getattr(restored, "encoder", restored)
    assert restored.dtype_policy.name == "mixed_bfloat16"
    assert restored_encoder.encoder_layers[0].compute_dtype == "bfloat16"
    assert restored_encoder.embeddings.compute_dtype == "bfloat16"
    features = random_features(tiny_config)
    expected, actual = model(features), restored(features)
    for key in expected:
        if key != "encoder_outputs":
            np.testing.assert_array_equal(actual[key], expected[key])
