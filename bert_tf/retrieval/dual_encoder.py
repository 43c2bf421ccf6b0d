"""`DualEncoder`: a query tower and a document tower, shared or separate."""

import os

from bert_tf.errors import UserInputError
from bert_tf.retrieval.encoder_fingerprint import encoder_fingerprint

# Subdirectories of a saved dual encoder (sentence-transformers directories).
SHARED_DIR = "encoder"
QUERY_DIR = "query_encoder"
DOCUMENT_DIR = "document_encoder"

__all__ = ["DualEncoder"]


class DualEncoder:
    """Two `BertSentenceEncoder` towers: queries and documents.

    With shared towers (the default, as sentence-transformers' bi-encoders)
    one model embeds both; separate towers start as copies of one checkpoint
    and are fine-tuned apart. Each tower is saved as a sentence-transformers
    directory, so `SentenceTransformer(path)` and
    `BertSentenceEncoder.from_checkpoint(path)` load it.

    Args:
      query_encoder: `BertSentenceEncoder` of the queries.
      document_encoder: `BertSentenceEncoder` of the passages; None (or the
        same object) for shared towers.

    Example:

    ```python
    towers = DualEncoder.from_checkpoint("all-MiniLM-L6-v2")
    queries = towers.encode_queries(["who won?"])    # float32 [1, 384]
    passages = towers.encode_documents(["Denver won."])
    ```
    """

    def __init__(self, query_encoder, document_encoder=None):
        self.query_encoder = query_encoder
        self.document_encoder = document_encoder or query_encoder
        if self.query_encoder.embedding_dim != self.document_encoder.embedding_dim:
            raise ValueError(
                "the towers embed to different sizes: "
                f"{self.query_encoder.embedding_dim} vs "
                f"{self.document_encoder.embedding_dim}"
            )

    @property
    def shared(self):
        return self.document_encoder is self.query_encoder

    @property
    def embedding_dim(self):
        return self.document_encoder.embedding_dim

    @property
    def towers(self):
        """The distinct encoders: one when shared, else query then document."""
        if self.shared:
            return [self.query_encoder]
        return [self.query_encoder, self.document_encoder]

    @classmethod
    def from_checkpoint(cls, path, shared=True, **kwargs):
        """Both towers from one checkpoint (`BertSentenceEncoder.from_checkpoint`)."""
        from bert_tf.models.bert_sentence_encoder import BertSentenceEncoder

        query = BertSentenceEncoder.from_checkpoint(path, **kwargs)
        if shared:
            return cls(query)
        return cls(query, BertSentenceEncoder.from_checkpoint(path, **kwargs))

    @staticmethod
    def saved_in(directory):
        """Whether `directory` holds a dual encoder `save` wrote."""
        return os.path.isdir(os.path.join(directory, SHARED_DIR)) or os.path.isdir(
            os.path.join(directory, DOCUMENT_DIR)
        )

    @classmethod
    def load(cls, directory, **kwargs):
        """The dual encoder `save` wrote into `directory`."""
        from bert_tf.models.bert_sentence_encoder import BertSentenceEncoder

        def tower(name):
            return BertSentenceEncoder.from_checkpoint(
                os.path.join(directory, name), **kwargs
            )

        if os.path.isdir(os.path.join(directory, SHARED_DIR)):
            return cls(tower(SHARED_DIR))
        if os.path.isdir(os.path.join(directory, DOCUMENT_DIR)):
            return cls(tower(QUERY_DIR), tower(DOCUMENT_DIR))
        raise UserInputError(f"{directory}: no {SHARED_DIR}/ or {DOCUMENT_DIR}/ in it")

    def save(self, directory):
        """Writes the towers as sentence-transformers directories; returns them."""
        names = [SHARED_DIR] if self.shared else [QUERY_DIR, DOCUMENT_DIR]
        paths = []
        for name, encoder in zip(names, self.towers, strict=True):
            paths.append(os.path.join(directory, name))
            encoder.save_sentence_transformers(paths[-1])
        return paths

    def encode_queries(self, texts, batch_size=64, progress=None):
        """float32 [len(texts), dim] query embeddings."""
        return self.query_encoder.encode(
            texts, batch_size=batch_size, progress=progress
        )

    def encode_documents(self, texts, batch_size=64, progress=None):
        """float32 [len(texts), dim] passage embeddings."""
        return self.document_encoder.encode(
            texts, batch_size=batch_size, progress=progress
        )

    def fingerprint(self):
        """A short hash of what the document vectors depend on: the document
        tower's weights, pooling, normalisation and tokenization."""
        return encoder_fingerprint(self.document_encoder)
