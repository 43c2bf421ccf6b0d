"""BertEncoder: the original's semantics, shapes, serialization, bad input."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from model_inputs import random_features

import bert_tf


def test_outputs_and_shapes(tiny_config):
    encoder = bert_tf.BertEncoder(tiny_config)
    outputs = encoder(random_features(tiny_config, batch=3, seq=11))
    assert outputs["sequence_output"].shape == (3, 11, 32)
    assert outputs["pooled_output"].shape == (3, 32)
    assert len(outputs["encoder_outputs"]) == 2
    np.testing.assert_array_equal(
        outputs["encoder_outputs"][-1], outputs["sequence_output"]
    )


def test_variable_sequence_lengths_and_dynamic_batch(tiny_config):
    encoder = bert_tf.BertEncoder(tiny_config)
    spec = tf.TensorSpec([None, None], tf.int32)
    run = tf.function(lambda x: encoder(x)["pooled_output"]).get_concrete_function(
        {"input_ids": spec, "input_mask": spec, "segment_ids": spec}
    )
    for batch, seq in [(1, 1), (2, 5), (7, 40)]:  # 40 = max_position_embeddings
        features = random_features(tiny_config, batch=batch, seq=seq, seed=seq)
        eager = encoder(features)["pooled_output"].numpy()
        graph = run({k: tf.constant(v) for k, v in features.items()}).numpy()
        assert graph.shape == (batch, 32)
        np.testing.assert_allclose(graph, eager, atol=1e-5)


def test_padding_is_masked_as_keys_only(tiny_config):
    """Appending padding leaves the real positions unchanged (additive -10000 mask)."""
    encoder = bert_tf.BertEncoder(tiny_config)
    features = random_features(tiny_config, batch=2, seq=8, padded=False)
    padded = {k: np.pad(v, ((0, 0), (0, 5))) for k, v in features.items()}
    short = encoder(features)["sequence_output"].numpy()
    long = encoder(padded)["sequence_output"].numpy()
    np.testing.assert_allclose(long[:, :8], short, atol=1e-5)
    # Padded positions still get (finite) outputs: they are queries as in the original.
    assert np.isfinite(long[:, 8:]).all()
    # Without the mask the padding would change the real positions.
    unmasked = dict(padded, input_mask=np.ones_like(padded["input_mask"]))
    assert (
        np.abs(encoder(unmasked)["sequence_output"].numpy()[:, :8] - short).max() > 1e-3
    )


def test_segments_change_the_output(tiny_config):
    encoder = bert_tf.BertEncoder(tiny_config)
    features = random_features(tiny_config, padded=False)
    flipped = dict(features, segment_ids=1 - features["segment_ids"])
    assert not np.allclose(
        encoder(features)["pooled_output"], encoder(flipped)["pooled_output"]
    )


def test_dropout_only_in_training(tiny_config):
    encoder = bert_tf.BertEncoder(tiny_config)
    features = random_features(tiny_config)
    a = encoder(features)["sequence_output"].numpy()
    b = encoder(features, training=False)["sequence_output"].numpy()
    np.testing.assert_array_equal(a, b)
    c = encoder(features, training=True)["sequence_output"].numpy()
    assert np.abs(a - c).max() > 1e-3


def test_initializers_are_the_originals(tiny_config):
    config = bert_tf.BertConfig(
        vocab_size=2000,
        hidden_size=64,
        num_attention_heads=4,
        num_hidden_layers=1,
        intermediate_size=128,
    )
    encoder = bert_tf.BertEncoder(config)
    table = encoder.embeddings.word_embeddings.numpy()
    assert abs(table.std() - 0.02 * 0.88) < 0.002  # truncated at 2 stddev: std ≈ 0.88σ
    assert np.abs(table).max() <= 0.04 + 1e-6
    block = encoder.encoder_layers[0]
    assert np.all(block.query.bias.numpy() == 0)
    assert np.all(block.output_layer_norm.gamma.numpy() == 1)
    assert np.all(block.output_layer_norm.beta.numpy() == 0)
    assert block.attention_layer_norm.epsilon == 1e-12


def test_too_long_sequence_is_refused(tiny_config):
    encoder = bert_tf.BertEncoder(tiny_config)
    features = random_features(tiny_config, seq=41)
    with pytest.raises(ValueError, match="41 exceeds max_position_embeddings \\(40\\)"):
        encoder(features)


def test_keras_file_round_trip(tiny_config, tmp_path):
    encoder = bert_tf.BertEncoder(tiny_config)
    features = random_features(tiny_config)
    path = str(tmp_path / "encoder.keras")
    encoder.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, bert_tf.BertEncoder)
    assert restored.config == tiny_config
    for key in ("sequence_output", "pooled_output"):
        np.testing.assert_array_equal(restored(features)[key], encoder(features)[key])


def test_gelu_exact_and_tanh_differ_as_expected():
    from bert_tf.layers.activations import gelu
    from bert_tf.layers.activations import gelu_exact

    x = np.linspace(-4, 4, 101).astype("float32")
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    np.testing.assert_allclose(
        keras.ops.convert_to_numpy(gelu(x)), tanh_form, atol=1e-6
    )
    assert np.abs(keras.ops.convert_to_numpy(gelu_exact(x)) - tanh_form).max() > 1e-4


@pytest.mark.slow
def test_encoder_as_a_layer_in_a_user_model(tiny_config):
    """A user's functional model around BertEncoder trains for a step."""
    encoder = bert_tf.BertEncoder(tiny_config)
    inputs = {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in ("input_ids", "input_mask", "segment_ids")
    }
    pooled = encoder(inputs)["pooled_output"]
    outputs = keras.layers.Dense(1, name="score")(pooled)
    model = keras.Model(inputs, outputs)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    features = random_features(tiny_config, batch=4)
    before = encoder.embeddings.word_embeddings.numpy().copy()
    history = model.fit(features, np.ones((4, 1), "float32"), epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert not np.array_equal(before, encoder.embeddings.word_embeddings.numpy())
