"""`BertEncoder`: the BERT network, from token ids to contextual vectors."""

import contextlib

import keras
from keras import ops

from bert_tf.checkpoints.loading import CheckpointMixin
from bert_tf.checkpoints.name_map import encoder_variables
from bert_tf.config import BertConfig
from bert_tf.layers import token_packing
from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.transformer_block import TransformerBlock
from bert_tf.text.input_schema import ENCODER_INPUT_NAMES

# The original adds this to the scores of padded keys: large enough to zero
# them after the softmax, small enough to stay finite in float16.
MASK_ADDER = -10000.0


def as_bert_config(config):
    if isinstance(config, BertConfig):
        return config
    if isinstance(config, dict):
        return BertConfig.from_dict(config)
    raise TypeError(f"Expected a BertConfig or a dict, got {type(config).__name__}")


@contextlib.contextmanager
def global_dtype_policy(dtype):
    """Builds layers under `dtype` (a policy, its name or its config), if given.

    The models create their sublayers (and those theirs) before Keras sees
    the model's own `dtype`, so the policy is made the global one while they
    are built: a `.keras` file saved under "mixed_bfloat16" reloads as such
    in a process whose global policy is float32.
    """
    if dtype is None:
        yield
        return
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(keras.dtype_policies.get(dtype))
    try:
        yield
    finally:
        keras.config.set_dtype_policy(previous)


def encoder_inputs():
    """The three int32 [batch, seq] inputs every BERT model takes."""
    return {
        name: keras.Input(shape=(None,), dtype="int32", name=name)
        for name in ENCODER_INPUT_NAMES
    }


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEncoder(CheckpointMixin, keras.Model):
    """The BERT encoder of the original `modeling.BertModel`.

    Embeddings, `num_hidden_layers` post-LayerNorm transformer blocks and the
    tanh pooler over the first token. Dropout is active only with
    `training=True`, which is what the original's `is_training` does.

    Args:
        config: `BertConfig` (or its dict). The architecture.
        output_range: int or None. If set, the last block computes only the
            first `output_range` positions, so `sequence_output` and the last
            of `encoder_outputs` are [batch, output_range, hidden]. The pooled
            output is unchanged; `BertClassifier` uses 1, which saves most of
            the last layer's work.

    Inputs: a dict of int32 tensors [batch, seq] with seq ≤
        `max_position_embeddings`: `input_ids`, `input_mask` (1 for real
        tokens, 0 for padding) and `segment_ids`.

    Outputs: a dict with `sequence_output` [batch, seq, hidden],
        `pooled_output` [batch, hidden] and `encoder_outputs`, the list of
        every block's output (the embeddings not included).

    Attributes:
        packed_training_rows: None (the default) or an int. If set, training
            steps (`training=True`, no `output_range`) run the blocks on the
            real tokens only, packed into a multiple of this many rows
            (`bert_tf.layers.token_packing`); the outputs at padded positions
            are then zeros. A training-time choice: not part of the config.

    Example:
    >>> encoder = bert_tf.BertEncoder.from_checkpoint("uncased_L-12_H-768_A-12")
    >>> outputs = encoder({"input_ids": ids, "input_mask": mask,
    ...                    "segment_ids": segments})
    >>> outputs["pooled_output"].shape
    (2, 768)
    """

    def __init__(self, config, output_range=None, **kwargs):
        with global_dtype_policy(kwargs.get("dtype")):
            self._build_graph(as_bert_config(config), output_range, **kwargs)

    def _build_graph(self, config, output_range, **kwargs):
        initializer = keras.initializers.TruncatedNormal(
            stddev=config.initializer_range
        )

        # === Layers ===
        embeddings = BertEmbeddings(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings,
            type_vocab_size=config.type_vocab_size,
            initializer_range=config.initializer_range,
            dropout_rate=config.hidden_dropout_prob,
            layer_norm_eps=config.layer_norm_eps,
            name="embeddings",
        )
        blocks = [
            TransformerBlock(
                hidden_size=config.hidden_size,
                num_attention_heads=config.num_attention_heads,
                intermediate_size=config.intermediate_size,
                hidden_act=config.hidden_act,
                hidden_dropout_prob=config.hidden_dropout_prob,
                attention_probs_dropout_prob=config.attention_probs_dropout_prob,
                initializer_range=config.initializer_range,
                layer_norm_eps=config.layer_norm_eps,
                output_range=output_range
                if i == config.num_hidden_layers - 1
                else None,
                name=f"layer_{i}",
            )
            for i in range(config.num_hidden_layers)
        ]
        pooler = keras.layers.Dense(
            config.hidden_size,
            activation="tanh",
            kernel_initializer=initializer,
            name="pooler",
        )

        # === Functional model ===
        inputs = encoder_inputs()
        encoder_outputs = run_layers(embeddings, blocks, inputs)
        hidden_states = encoder_outputs[-1]
        pooled_output = pooler(hidden_states[:, 0, :])
        outputs = {
            "sequence_output": hidden_states,
            "pooled_output": pooled_output,
            "encoder_outputs": encoder_outputs,
        }
        kwargs.setdefault("name", "bert_encoder")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

        # === Config ===
        self.config = config
        self.output_range = output_range
        self.embeddings = embeddings
        self.encoder_layers = blocks
        self.pooler = pooler
        self.packed_training_rows = None

    def call(self, inputs, training=False, mask=None):
        input_ids = inputs["input_ids"]
        seq_length = input_ids.shape[1] if hasattr(input_ids, "shape") else None
        if seq_length is not None and seq_length > self.config.max_position_embeddings:
            raise ValueError(
                f"Sequence length {seq_length} exceeds max_position_embeddings "
                f"({self.config.max_position_embeddings}) of this model"
            )
        if training and self.packed_training_rows and self.output_range is None:
            return self._packed_training_call(inputs)
        return super().call(inputs, training=training, mask=mask)

    def _packed_training_call(self, inputs):
        # The functional graph's computation, with the blocks on packed rows;
        # each block's output is laid out as [batch, seq, hidden] only if
        # used (the unused gathers are pruned from the step's graph).
        packing = token_packing.token_packing(
            inputs["input_mask"], self.packed_training_rows
        )
        hidden_size = self.config.hidden_size
        embedded = self.embeddings(
            inputs["input_ids"], inputs["segment_ids"], training=True
        )
        hidden_states = token_packing.pack(
            ops.reshape(embedded, (-1, hidden_size)), packing
        )
        attention_bias = padded_key_bias(inputs["input_mask"])
        outputs = []
        for block in self.encoder_layers:
            hidden_states = block(
                hidden_states, attention_bias, packing=packing, training=True
            )
            outputs.append(
                ops.reshape(
                    token_packing.unpack(hidden_states, packing),
                    (packing.batch_size, packing.seq_length, hidden_size),
                )
            )
        return {
            "sequence_output": outputs[-1],
            "pooled_output": self.pooler(outputs[-1][:, 0, :]),
            "encoder_outputs": outputs,
        }

    def checkpoint_variables(self):
        return encoder_variables(self)

    def get_config(self):
        return {
            "config": self.config.to_dict(),
            "output_range": self.output_range,
            "name": self.name,
            "trainable": self.trainable,
            "dtype": keras.dtype_policies.serialize(self.dtype_policy),
        }

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def run_layers(embeddings, blocks, inputs, query_positions=None):
    """Every block's output on `inputs`; the last block computes only
    `query_positions` when given (see `TransformerBlock`)."""
    hidden_states = embeddings(inputs["input_ids"], inputs["segment_ids"])
    attention_bias = padded_key_bias(inputs["input_mask"])
    outputs = []
    for index, block in enumerate(blocks):
        if query_positions is not None and index == len(blocks) - 1:
            hidden_states = block(
                hidden_states, attention_bias, query_positions=query_positions
            )
        else:
            hidden_states = block(hidden_states, attention_bias)
        outputs.append(hidden_states)
    return outputs


def padded_key_bias(input_mask):
    """[batch, 1, 1, seq] attention bias: masks padded keys for every head
    and query."""
    # expand_dims, not [:, None, None, :]: LiteRT's builtin StridedSlice
    # cannot add two axes, so that slice would need TensorFlow ops.
    visible = ops.expand_dims(ops.expand_dims(ops.cast(input_mask, "float32"), 1), 1)
    return (1.0 - visible) * MASK_ADDER
