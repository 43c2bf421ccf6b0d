"""bert_tf: Google's BERT in TensorFlow 2 / Keras 3.

Importing the package registers every layer and model with Keras, so
`keras.saving.load_model("model.keras")` works after `import bert_tf`.
"""

import os

# Keras 3 must run on TensorFlow: the checkpoints, tf.data pipelines and the
# SavedModel export are TF. Respect an explicit choice, refuse a wrong one.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from bert_tf import optimization  # noqa: E402
from bert_tf import tokenization  # noqa: E402
from bert_tf.checkpoints import load_checkpoint  # noqa: E402
from bert_tf.checkpoints import save_tf1_checkpoint  # noqa: E402
from bert_tf.config import BertConfig  # noqa: E402
from bert_tf.models import BertClassifier  # noqa: E402
from bert_tf.models import BertEncoder  # noqa: E402
from bert_tf.models import BertPretrainer  # noqa: E402
from bert_tf.models import BertSpanLabeler  # noqa: E402
from bert_tf.models import BertTokenClassifier  # noqa: E402
from bert_tf.preprocessing import BertPreprocessor  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BertClassifier",
    "BertConfig",
    "BertEncoder",
    "BertPreprocessor",
    "BertPretrainer",
    "BertSpanLabeler",
    "BertTokenClassifier",
    "load_checkpoint",
    "optimization",
    "save_tf1_checkpoint",
    "tokenization",
]
