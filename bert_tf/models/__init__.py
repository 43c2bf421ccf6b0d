"""BERT models: the encoder and one model per task."""

from bert_tf.models.bert_classifier import BertClassifier
from bert_tf.models.bert_encoder import BertEncoder
from bert_tf.models.bert_multi_vector_encoder import BertMultiVectorEncoder
from bert_tf.models.bert_pretrainer import BertPretrainer
from bert_tf.models.bert_reranker import BertReranker
from bert_tf.models.bert_sentence_encoder import BertSentenceEncoder
from bert_tf.models.bert_span_labeler import BertSpanLabeler
from bert_tf.models.bert_sparse_encoder import BertSparseEncoder
from bert_tf.models.bert_text_classifier import BertTextClassifier
from bert_tf.models.bert_token_classifier import BertTokenClassifier

__all__ = [
    "BertClassifier",
    "BertEncoder",
    "BertMultiVectorEncoder",
    "BertPretrainer",
    "BertReranker",
    "BertSentenceEncoder",
    "BertSparseEncoder",
    "BertSpanLabeler",
    "BertTextClassifier",
    "BertTokenClassifier",
]
