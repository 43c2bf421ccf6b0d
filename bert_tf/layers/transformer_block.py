"""One post-LayerNorm BERT transformer block (`bert/encoder/layer_{i}`)."""

import math

import keras
import tensorflow as tf
from keras import ops

from bert_tf.layers import fused_elementwise
from bert_tf.layers import token_packing
from bert_tf.layers.activations import get_activation
from bert_tf.layers.fast_dropout import FastDropout


def dense(x, layer, activation=None):
    """`activation(x @ kernel + bias)` for a `keras.layers.Dense` weight holder.

    Written with `tf.nn.bias_add` rather than `+` on purpose: TensorFlow's
    graph optimizer fuses MatMul + BiasAdd (+ GELU/ReLU/tanh) into a single
    oneDNN kernel on CPU and cuBLASLt epilogue on GPU, which it does not do
    for a plain add. On 2 CPU cores this makes the GELU almost free.
    """
    dtype = x.dtype
    kernel, bias = tf.cast(layer.kernel, dtype), tf.cast(layer.bias, dtype)
    y = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    return y if activation is None else activation(y)


def matmul(x, layer):
    """`x @ kernel` for a `keras.layers.Dense` weight holder, bias left out."""
    return tf.matmul(x, tf.cast(layer.kernel, x.dtype))


@keras.saving.register_keras_serializable(package="bert_tf")
class TransformerBlock(keras.layers.Layer):
    """Self-attention and feed-forward, each followed by residual + LayerNorm.

    The math is the original `transformer_model`: scores are
    `q k^T / sqrt(head_size)` plus an additive mask of -10000 on padded keys;
    padded positions still act as queries, exactly as in the original.
    Query, key and value keep separate kernels (the checkpoint layout).
    Inference runs three projections (measured faster on CPU than one fused
    QKV matmul split batch-first, which needs a costlier 5-D transpose).
    Training concatenates the kernels into one matmul and splits its result
    heads-first, [heads, batch, seq, head_size], along the leading axis
    (no copy); its input gradient is then one matmul instead of three and a
    sum.

    Args:
        hidden_size: int. Width of the block's input and output.
        num_attention_heads: int. Must divide `hidden_size`.
        intermediate_size: int. Width of the feed-forward layer.
        hidden_act: str. A `BertConfig.hidden_act` name for the feed-forward.
        hidden_dropout_prob: float. Dropout on the attention and FFN outputs.
        attention_probs_dropout_prob: float. Dropout on attention weights.
        initializer_range: float. Stddev of the truncated-normal initializer.
        layer_norm_eps: float. LayerNorm epsilon.
        output_range: int or None. If set, only the first `output_range`
            positions are computed as queries and returned (e.g. 1 when only
            the [CLS] output is used): the same values as the full layer at
            those positions, for a fraction of the work.

    Call args:
        hidden_states: float tensor [batch, seq, hidden_size].
        attention_bias: float tensor broadcastable to [batch, heads, seq, seq],
            0 for visible keys and -10000 for padded ones.
        query_positions: optional int tensor [batch, num_queries]: compute
            (and return) only these positions, e.g. [CLS] and the masked
            positions in the pre-trainer's last layer. Keys and values still
            cover the whole sequence, so the values are the full layer's.
        packing: optional `token_packing.TokenPacking` (training only):
            `hidden_states` are then the batch's real tokens packed into
            [rows, hidden_size], and so is the output.

    Example:
    >>> block = TransformerBlock(hidden_size=16, num_attention_heads=2,
    ...                          intermediate_size=32)
    >>> block(ops.ones((2, 8, 16)), ops.zeros((2, 1, 1, 8))).shape
    (2, 8, 16)
    """

    def __init__(
        self,
        hidden_size,
        num_attention_heads,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        layer_norm_eps=1e-12,
        output_range=None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_attention_heads != 0:
            raise ValueError(
                f"hidden_size ({hidden_size}) is not a multiple of num_attention_heads "
                f"({num_attention_heads})"
            )
        self.hidden_size = hidden_size
        self.num_attention_heads = num_attention_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range
        self.layer_norm_eps = layer_norm_eps
        self.output_range = output_range
        self.head_size = hidden_size // num_attention_heads
        self._activation = get_activation(hidden_act)

        def dense(units, name):
            return keras.layers.Dense(
                units,
                kernel_initializer=keras.initializers.TruncatedNormal(
                    stddev=initializer_range
                ),
                name=name,
            )

        def layer_norm(name):
            return keras.layers.LayerNormalization(
                epsilon=layer_norm_eps, dtype="float32", name=name
            )

        # === Attention ===
        self.query = dense(hidden_size, "query")
        self.key = dense(hidden_size, "key")
        self.value = dense(hidden_size, "value")
        self.attention_probs_dropout = FastDropout(
            attention_probs_dropout_prob, name="attention_probs_dropout"
        )
        self.attention_output = dense(hidden_size, "attention_output")
        self.attention_dropout = FastDropout(
            hidden_dropout_prob, name="attention_dropout"
        )
        self.attention_layer_norm = layer_norm("attention_layer_norm")
        # === Feed-forward ===
        self.intermediate = dense(intermediate_size, "intermediate")
        self.output_dense = dense(hidden_size, "output")
        self.output_dropout = FastDropout(hidden_dropout_prob, name="output_dropout")
        self.output_layer_norm = layer_norm("output_layer_norm")

    def build(self, hidden_states_shape, attention_bias_shape=None):
        hidden = (None, self.hidden_size)
        for dense in (self.query, self.key, self.value, self.attention_output):
            dense.build(hidden)
        self.intermediate.build(hidden)
        self.output_dense.build((None, self.intermediate_size))
        self.attention_layer_norm.build(hidden)
        self.output_layer_norm.build(hidden)
        self.built = True

    def call(
        self,
        hidden_states,
        attention_bias,
        training=False,
        query_positions=None,
        packing=None,
    ):
        heads, head_size = self.num_attention_heads, self.head_size
        if packing is not None:
            # Training on packed rows: only the attention sees [batch, seq].
            batch_size, seq_length = packing.batch_size, packing.seq_length
        else:
            batch_size = ops.shape(hidden_states)[0]
            seq_length = ops.shape(hidden_states)[1]
        # Everything dense runs on [batch * seq, hidden] matrices: one GEMM
        # per projection, as the original's reshape_to_matrix does.
        x = ops.reshape(hidden_states, (-1, self.hidden_size))
        if packing is not None:
            query_length, x_query = seq_length, x
        elif query_positions is not None:
            query_length = ops.shape(query_positions)[1]
            x_query = ops.reshape(
                ops.take_along_axis(
                    hidden_states,
                    ops.cast(query_positions, "int32")[:, :, None],
                    axis=1,
                ),
                (-1, self.hidden_size),
            )
        elif self.output_range is None:
            query_length, x_query = seq_length, x
        else:
            # Only the first `output_range` positions are queries: keys and
            # values still cover the whole sequence, so their outputs are
            # exactly the full layer's outputs at those positions.
            query_length = ops.minimum(self.output_range, seq_length)
            x_query = ops.reshape(
                hidden_states[:, : self.output_range, :], (-1, self.hidden_size)
            )

        def split_heads(t, length):
            # [batch * length, hidden] -> [batch, heads, length, head_size]
            t = ops.reshape(t, (batch_size, length, heads, head_size))
            return ops.transpose(t, (0, 2, 1, 3))

        # === Attention ===
        heads_first = (training and x_query is x) or packing is not None
        if heads_first:
            query, key, value = self._heads_first_qkv(
                x, batch_size, seq_length, packing
            )
            # The mask follows the heads-first layout: [1 or heads, batch, ...].
            attention_bias = ops.convert_to_tensor(attention_bias)
            for _ in range(4 - len(attention_bias.shape)):
                attention_bias = attention_bias[None]
            attention_bias = ops.transpose(attention_bias, (1, 0, 2, 3))
        else:
            query = split_heads(dense(x_query, self.query), query_length)
            key = split_heads(dense(x, self.key), seq_length)
            value = split_heads(dense(x, self.value), seq_length)
        # The original's order, (q k^T) * scale + mask, is also the pattern
        # TensorFlow fuses into one oneDNN batched matmul with both post-ops.
        scores = tf.matmul(query, key, transpose_b=True)
        scores = scores * (1.0 / math.sqrt(head_size)) + ops.cast(
            attention_bias, scores.dtype
        )
        probs = tf.nn.softmax(ops.cast(scores, "float32"), axis=-1)
        probs = self.attention_probs_dropout(
            ops.cast(probs, x.dtype), training=training
        )
        context = ops.matmul(probs, value)
        context = ops.reshape(
            ops.transpose(context, (1, 2, 0, 3) if heads_first else (0, 2, 1, 3)),
            (-1, self.hidden_size),
        )
        if packing is not None:
            context = token_packing.pack(context, packing)

        # Training runs the element-wise tails (bias + dropout + residual +
        # LayerNorm; bias + GELU) as single XLA kernels each way, which also
        # return the bias gradients; inference keeps the plain ops, which
        # oneDNN / cuBLASLt fuse into the matmuls.
        attention = self._residual_layer_norm(
            context,
            self.attention_output,
            self.attention_dropout,
            x_query,
            self.attention_layer_norm,
            training,
        )

        # === Feed-forward ===
        fused_gelu = {
            "gelu": fused_elementwise.gelu_tanh,
            "gelu_exact": fused_elementwise.gelu_erf,
        }.get(self.hidden_act)
        if training and fused_gelu is not None:
            intermediate = fused_gelu(
                matmul(attention, self.intermediate), self.intermediate.bias
            )
        else:
            intermediate = dense(attention, self.intermediate, self._activation)
        output = self._residual_layer_norm(
            intermediate,
            self.output_dense,
            self.output_dropout,
            attention,
            self.output_layer_norm,
            training,
        )
        if packing is not None:
            return output
        return ops.reshape(output, (batch_size, query_length, self.hidden_size))

    def _heads_first_qkv(self, x, batch_size, seq_length, packing=None):
        # One [hidden, 3 * hidden] GEMM instead of three (and one for the
        # input gradient, with no sum of three), split into heads-first
        # [heads, batch, seq, head_size] tensors: the split is along the
        # leading axis, so it needs no copy.
        projections = (self.query, self.key, self.value)
        kernel = tf.concat([tf.cast(d.kernel, x.dtype) for d in projections], 1)
        bias = tf.concat([tf.cast(d.bias, x.dtype) for d in projections], 0)
        qkv = tf.nn.bias_add(tf.matmul(x, kernel), bias)
        if packing is not None:
            qkv = token_packing.unpack(qkv, packing)
        qkv = tf.reshape(
            qkv, (batch_size, seq_length, 3 * self.num_attention_heads, self.head_size)
        )
        return tf.split(tf.transpose(qkv, (2, 0, 1, 3)), 3, axis=0)

    def _residual_layer_norm(
        self, x, dense_layer, dropout, residual, layer_norm, training
    ):
        """`layer_norm(dropout(dense_layer(x)) + residual)`: the tail of the
        attention and of the feed-forward sub-layer."""
        if training:
            return fused_elementwise.dropout_residual_layer_norm(
                matmul(x, dense_layer),
                residual,
                layer_norm,
                *self._rate_and_seed(dropout),
                bias=dense_layer.bias,
            )
        # The residual has the block input's dtype here (the LayerNorm may
        # compute in float32).
        y = dense(x, dense_layer)
        return ops.cast(layer_norm(y + residual), residual.dtype)

    @staticmethod
    def _rate_and_seed(dropout):
        # A Dropout built with rate 0 has no seed generator.
        return dropout.rate, dropout.next_seed() if dropout.rate else None

    def compute_output_shape(
        self, hidden_states_shape, attention_bias_shape=None, query_positions_shape=None
    ):
        batch, seq, hidden = hidden_states_shape
        if query_positions_shape is not None:
            seq = query_positions_shape[1]
        elif self.output_range is not None:
            seq = None if seq is None else min(seq, self.output_range)
        return (batch, seq, hidden)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_size": self.hidden_size,
                "num_attention_heads": self.num_attention_heads,
                "intermediate_size": self.intermediate_size,
                "hidden_act": self.hidden_act,
                "hidden_dropout_prob": self.hidden_dropout_prob,
                "attention_probs_dropout_prob": self.attention_probs_dropout_prob,
                "initializer_range": self.initializer_range,
                "layer_norm_eps": self.layer_norm_eps,
                "output_range": self.output_range,
            }
        )
        return config
