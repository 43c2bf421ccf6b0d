"""`DualEncoderModel`: the two towers of a `DualEncoder` as one Keras model to train."""

import keras

from bert_tf.retrieval.dual_encoder import DualEncoder
from bert_tf.text.input_schema import ENCODER_INPUT_NAMES

__all__ = ["DualEncoderModel"]


@keras.saving.register_keras_serializable(package="bert_tf")
class DualEncoderModel(keras.Model):
    """Query and passage embeddings of one training batch, from shared or separate towers.

    What the runner's Trainer trains (and checkpoints) for run_retrieval's
    --do_train: its inputs are the packed encoder inputs of the batch's
    queries (``"query"``) and passages (``"passage"``); its outputs are their
    embeddings, float32 [queries, dim] and [passages, dim]. `dual_encoder`
    gives the towers back as a `DualEncoder` (to embed, save, index).

    Args:
      query_encoder, document_encoder: the towers, as in `DualEncoder`.

    Example:

    ```python
    model = DualEncoderModel(BertSentenceEncoder.from_checkpoint(MINILM_DIR))
    outputs = model({"query": preprocessor(queries), "passage": preprocessor(passages)})
    outputs["query"].shape  # [len(queries), 384]
    ```
    """

    def __init__(self, query_encoder, document_encoder=None, **kwargs):
        kwargs.setdefault("name", "dual_encoder_model")
        super().__init__(**kwargs)
        self.query_encoder = query_encoder
        self.document_encoder = (
            None if document_encoder is query_encoder else document_encoder
        )
        # Called once on symbolic inputs: `input` names the batch entries the
        # model reads (the Trainer passes only those).
        self(
            {
                side: {
                    name: keras.Input(shape=(None,), dtype="int32", name=name)
                    for name in ENCODER_INPUT_NAMES
                }
                for side in ("query", "passage")
            }
        )

    @classmethod
    def of(cls, towers):
        """The model of a `DualEncoder`'s towers."""
        return cls(towers.query_encoder, towers.document_encoder)

    @property
    def dual_encoder(self):
        """The towers as a `DualEncoder` (the same weights)."""
        return DualEncoder(self.query_encoder, self.document_encoder)

    @property
    def encoder(self):
        """The query tower's `BertEncoder` (its config is the model's)."""
        return self.query_encoder.encoder

    def call(self, inputs, training=False):
        documents = self.document_encoder or self.query_encoder
        return {
            "query": self.query_encoder(inputs["query"], training=training),
            "passage": documents(inputs["passage"], training=training),
        }

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable}
        config["query_encoder"] = keras.saving.serialize_keras_object(
            self.query_encoder
        )
        config["document_encoder"] = (
            keras.saving.serialize_keras_object(self.document_encoder)
            if self.document_encoder is not None
            else None
        )
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for name in ("query_encoder", "document_encoder"):
            if config.get(name) is not None:
                config[name] = keras.saving.deserialize_keras_object(config[name])
        return cls(**config)
