"""Training on packed rows (`bert_tf.layers.token_packing`) against the padded batch."""

import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf.layers import token_packing
from tests.tiny_models import tiny_bert_config

LENGTHS = [7, 3, 5, 1]
SEQ = 7


def _inputs(vocab_size=100):
    rng = np.random.default_rng(3)
    mask = (np.arange(SEQ)[None] < np.array(LENGTHS)[:, None]).astype(np.int32)
    return {
        "input_ids": tf.constant(rng.integers(1, vocab_size, mask.shape) * mask),
        "input_mask": tf.constant(mask),
        "segment_ids": tf.constant(rng.integers(0, 2, mask.shape) * mask),
    }


def test_packing_indexes_and_rows_rounded_up():
    packing = token_packing.token_packing(_inputs()["input_mask"], rows_multiple=8)
    real = sum(LENGTHS)  # 16 real tokens -> 16 rows; 17 would need 24
    positions = [b * SEQ + i for b, n in enumerate(LENGTHS) for i in range(n)]
    np.testing.assert_array_equal(packing.packed_index[:real], positions)
    assert packing.packed_index.shape == (16,)
    padded = packing.padded_index.numpy()
    np.testing.assert_array_equal(padded[positions], np.arange(real))
    assert (np.delete(padded, positions) == 16).all()  # -> the zero row
    odd = token_packing.token_packing(tf.constant([[1, 1, 1, 0]]), rows_multiple=2)
    np.testing.assert_array_equal(odd.packed_index, [0, 1, 2, 4])  # 4: zero row


def test_pack_and_unpack_are_inverse_gathers_with_their_gradients():
    mask = _inputs()["input_mask"]
    packing = token_packing.token_packing(mask, rows_multiple=32)
    padded = tf.constant(np.random.default_rng(0).normal(size=(4 * SEQ, 3)), tf.float32)
    weights = tf.constant(np.random.default_rng(1).normal(size=(32, 3)), tf.float32)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(padded)
        packed = token_packing.pack(padded, packing)
        back = token_packing.unpack(packed, packing)
        loss = tf.reduce_sum(packed * weights)
    real = tf.reshape(tf.cast(mask, tf.bool), [-1])
    assert packed.shape == (32, 3)
    np.testing.assert_array_equal(packed[: sum(LENGTHS)], tf.boolean_mask(padded, real))
    np.testing.assert_array_equal(packed[sum(LENGTHS) :], 0.0)
    np.testing.assert_array_equal(back, tf.where(real[:, None], padded, 0.0))
    # The gradient a scatter-add would give: each packed row's to its position.
    expected = np.zeros((4 * SEQ, 3), np.float32)
    expected[np.flatnonzero(real)] = weights[: sum(LENGTHS)]
    np.testing.assert_array_equal(tape.gradient(loss, padded), expected)


@pytest.mark.parametrize("hidden_act", ["gelu", "gelu_exact"])
def test_packed_training_step_equals_the_padded_one(hidden_act):
    """Without dropout, a packed training step computes the padded step's values
    at the real positions and the same gradients for every weight."""
    config = tiny_bert_config(100, dropout=0.0)
    config.hidden_act = hidden_act
    encoder = bert_tf.BertEncoder(config)
    inputs = _inputs()
    real = tf.cast(inputs["input_mask"], tf.float32)[..., None]
    weights = tf.constant(
        np.random.default_rng(2).normal(size=(1, SEQ, 32)), tf.float32
    )

    def step(rows_multiple):
        encoder.packed_training_rows = rows_multiple
        with tf.GradientTape() as tape:
            outputs = encoder(inputs, training=True)
            loss = tf.reduce_sum(outputs["sequence_output"] * real * weights)
        variables = encoder.trainable_variables
        grads = tape.gradient(loss, variables)
        return outputs, {
            v.path: g for v, g in zip(variables, grads, strict=True) if g is not None
        }

    padded, padded_grads = step(None)
    packed, packed_grads = step(8)
    mask = inputs["input_mask"].numpy().astype(bool)
    for a, b in zip(padded["encoder_outputs"], packed["encoder_outputs"], strict=True):
        np.testing.assert_allclose(a.numpy()[mask], b.numpy()[mask], atol=2e-5)
        np.testing.assert_array_equal(b.numpy()[~mask], 0.0)  # padded positions
    assert packed_grads.keys() == padded_grads.keys()
    assert len(packed_grads) > 30  # embeddings and both blocks
    for path, grad in padded_grads.items():
        scale = float(tf.reduce_max(tf.abs(tf.convert_to_tensor(grad)))) + 1e-6
        np.testing.assert_allclose(
            tf.convert_to_tensor(packed_grads[path]),
            tf.convert_to_tensor(grad),
            atol=1e-5 * scale + 1e-7,
            err_msg=path,
        )


def test_packing_is_for_training_only():
    encoder = bert_tf.BertEncoder(tiny_bert_config(100))
    inputs = _inputs()
    plain = encoder(inputs)["sequence_output"]
    encoder.packed_training_rows = 8
    np.testing.assert_array_equal(encoder(inputs)["sequence_output"], plain)
    trained = encoder(inputs, training=True)["sequence_output"]
    assert trained.shape == plain.shape
    assert "packed_training_rows" not in encoder.get_config()
