"""The references the SavedModel export tests check exports against: the Keras
models fed by the Python tokenizer and the original's packing
(bert_tf.data_prep.glue).

The models (random weights, the real uncased BERT vocabulary) are the
`models` and `vocab_file` fixtures of tests/conftest.py; tests/test_export.py
exports them once per module, tests/test_export_commands.py through the
command-line tools.
"""

import numpy as np
import tensorflow as tf

from bert_tf.data_prep import glue
from bert_tf.text import tokenization

SEQ_LENGTH = 32
LABELS = ["not_equivalent", "equivalent"]


def packed(vocab_file, texts_a, texts_b=None):
    """The original's features for the texts (FullTokenizer + packing)."""
    tokenizer = tokenization.FullTokenizer(vocab_file, True)
    texts_b = texts_b or [None] * len(texts_a)
    examples = [
        glue.InputExample(guid=str(i), text_a=a, text_b=b, label=LABELS[0])
        for i, (a, b) in enumerate(zip(texts_a, texts_b, strict=True))
    ]
    features = glue.convert_examples_to_features(
        examples, LABELS, SEQ_LENGTH, tokenizer
    )
    return {
        name: np.array([getattr(f, name) for f in features], np.int32)
        for name in ("input_ids", "input_mask", "segment_ids")
    }


def keras_probabilities(models, vocab_file, texts_a, texts_b):
    logits = models["classifier"](packed(vocab_file, texts_a, texts_b), training=False)[
        "logits"
    ]
    return tf.nn.softmax(logits).numpy()
