"""Word + segment + position embeddings, then LayerNorm and dropout."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbeddings(keras.layers.Layer):
    """The BERT embedding layer (`bert/embeddings/*` in the original).

    The three tables are plain weights rather than `Embedding` sublayers so
    that their names match the original checkpoint and the masked-LM head can
    tie its decoder to `word_embeddings`.

    Args:
        vocab_size: int. Rows of the word-embedding table.
        hidden_size: int. Embedding width.
        max_position_embeddings: int. Rows of the position table; the longest
            sequence the layer accepts.
        type_vocab_size: int. Rows of the segment (token type) table.
        initializer_range: float. Stddev of the truncated-normal initializer.
        dropout_rate: float. Dropout after the LayerNorm.
        layer_norm_eps: float. LayerNorm epsilon (1e-12 in the original).

    Example:
    >>> layer = BertEmbeddings(vocab_size=100, hidden_size=16,
    ...                        max_position_embeddings=32, type_vocab_size=2)
    >>> layer(ops.ones((2, 8), "int32"), ops.zeros((2, 8), "int32")).shape
    (2, 8, 16)
    """

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings,
        type_vocab_size,
        initializer_range=0.02,
        dropout_rate=0.1,
        layer_norm_eps=1e-12,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.initializer_range = initializer_range
        self.dropout_rate = dropout_rate
        self.layer_norm_eps = layer_norm_eps

        # LayerNorm statistics stay in float32 under mixed precision.
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype="float32", name="layer_norm"
        )
        self.dropout = keras.layers.Dropout(dropout_rate, name="dropout")

    def build(self, input_ids_shape=None, segment_ids_shape=None):
        initializer = keras.initializers.TruncatedNormal(stddev=self.initializer_range)
        self.word_embeddings = self.add_weight(
            name="word_embeddings",
            shape=(self.vocab_size, self.hidden_size),
            initializer=initializer,
        )
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings",
            shape=(self.type_vocab_size, self.hidden_size),
            initializer=initializer,
        )
        self.position_embeddings = self.add_weight(
            name="position_embeddings",
            shape=(self.max_position_embeddings, self.hidden_size),
            initializer=initializer,
        )
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_ids, segment_ids, training=False):
        # A gather is the same as the original's one-hot matmul for the
        # segment table, and far cheaper on CPU and GPU.
        seq_length = ops.shape(input_ids)[1]
        embeddings = ops.take(self.word_embeddings, input_ids, axis=0)
        embeddings = embeddings + ops.take(
            self.token_type_embeddings, segment_ids, axis=0
        )
        embeddings = embeddings + self.position_embeddings[None, :seq_length, :]
        embeddings = self.layer_norm(embeddings)
        embeddings = ops.cast(embeddings, self.compute_dtype)
        return self.dropout(embeddings, training=training)

    def compute_output_shape(self, input_ids_shape, segment_ids_shape=None):
        return tuple(input_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_size": self.vocab_size,
                "hidden_size": self.hidden_size,
                "max_position_embeddings": self.max_position_embeddings,
                "type_vocab_size": self.type_vocab_size,
                "initializer_range": self.initializer_range,
                "dropout_rate": self.dropout_rate,
                "layer_norm_eps": self.layer_norm_eps,
            }
        )
        return config
