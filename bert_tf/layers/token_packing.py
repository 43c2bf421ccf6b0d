"""Training on the real word pieces only: padded batches packed into rows.

A batch padded to its longest sequence spends every matmul, GELU and
LayerNorm on the padding too (on STS-B with length-grouped batches, 1.13x
the real word pieces). Everything in a transformer block except the
attention itself works row by row, so the training step can run it on the
real tokens alone, packed into [rows, width], and lay them out as
[batch, seq] only for the attention. This is what `TokenPacking` describes
and `pack` / `unpack` do (each one gather forward and one backward).

The packed row count is rounded up to a multiple of `rows_multiple` (the
extra rows are zeros and get no gradient): XLA compiles the fused
element-wise kernels once per row count, and rounding keeps the number of
distinct counts about that of the padded lengths (34 instead of 46 on
STS-B at a multiple of 32, with 1.03x the real word pieces).

The values at real positions are the padded computation's (padded keys are
masked out of the attention either way); padded positions come out as
zeros. Dropout masks differ, as they are drawn over the packed rows.
"""

from typing import NamedTuple

import tensorflow as tf

# The rounding the module docstring measures on STS-B.
ROWS_MULTIPLE = 32


class TokenPacking(NamedTuple):
    """Where the real tokens of a padded batch go, and back.

    Attributes:
        packed_index: int32 [rows]: for each packed row, its position in the
            flattened [batch * seq] batch; the extra rows point past the end
            (to a zero row).
        padded_index: int32 [batch * seq]: for each position, its packed row;
            padded positions point past the packed rows (to a zero row).
        batch_size: int32 scalar.
        seq_length: int32 scalar.
    """

    packed_index: tf.Tensor
    padded_index: tf.Tensor
    batch_size: tf.Tensor
    seq_length: tf.Tensor


def token_packing(input_mask, rows_multiple=ROWS_MULTIPLE):
    """The `TokenPacking` of a [batch, seq] mask (1 for real tokens)."""
    shape = tf.shape(input_mask)
    real = tf.reshape(tf.cast(input_mask, tf.bool), [-1])
    positions = tf.size(real)
    real_positions = tf.cast(tf.where(real)[:, 0], tf.int32)
    count = tf.size(real_positions)
    rows = (count + rows_multiple - 1) // rows_multiple * rows_multiple
    packed_index = tf.concat(
        [real_positions, tf.fill([rows - count], positions)], axis=0
    )
    row_of_position = tf.cumsum(tf.cast(real, tf.int32), exclusive=True)
    padded_index = tf.where(real, row_of_position, rows)
    return TokenPacking(packed_index, padded_index, shape[0], shape[1])


def _gather_with_zero_row(values, index):
    # Index len(values) selects a row of zeros.
    return tf.gather(tf.pad(values, [[0, 1], [0, 0]]), index)


def _inverse_gathers(values, index, inverse_index):
    """`values` gathered by `index`, differentiated by gathering the gradient
    by `inverse_index`: each real position is exactly one packed row, so the
    gradient of the gather is the inverse gather, not a scatter-add."""

    @tf.custom_gradient
    def forward(values):
        return _gather_with_zero_row(values, index), (
            lambda dy: _gather_with_zero_row(dy, inverse_index)
        )

    return forward(values)


def pack(padded, packing):
    """[batch * seq, width] -> [rows, width]: the real tokens' rows."""
    return _inverse_gathers(padded, packing.packed_index, packing.padded_index)


def unpack(packed, packing):
    """[rows, width] -> [batch * seq, width], zeros at padded positions."""
    return _inverse_gathers(packed, packing.padded_index, packing.packed_index)
