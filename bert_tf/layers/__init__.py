"""Keras layers that make up BERT."""

from bert_tf.layers.bert_embeddings import BertEmbeddings
from bert_tf.layers.crf import CRF
from bert_tf.layers.logits_head import LogitsHead
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.layers.sentence_pooling import SentencePooling
from bert_tf.layers.sparse_static_embedding import SparseStaticEmbedding
from bert_tf.layers.splade_pooling import SpladePooling
from bert_tf.layers.transformer_block import TransformerBlock

__all__ = [
    "CRF",
    "BertEmbeddings",
    "LogitsHead",
    "MaskedLMHead",
    "SentencePooling",
    "SparseStaticEmbedding",
    "SpladePooling",
    "TransformerBlock",
]
