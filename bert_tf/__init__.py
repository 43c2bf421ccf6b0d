"""bert_tf: Google's BERT in TensorFlow 2 / Keras 3.

`import bert_tf` is cheap: TensorFlow is imported when a model, layer or
TensorFlow-backed function is first touched (`bert_tf.BertEncoder`, ...), so
the command-line tools answer `--help` at once. `keras.saving.load_model`
still finds every bert_tf class after `import bert_tf`: Keras' registry lookup
imports them on the first miss on a ``bert_tf>`` name (see
`bert_tf.keras_registration`).
"""

import importlib
import os

# Keras 3 must run on TensorFlow: the checkpoints, tf.data pipelines and the
# SavedModel export are TF. Respect an explicit choice, refuse a wrong one.
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from bert_tf import keras_registration  # noqa: E402
from bert_tf import tensorflow_import  # noqa: E402

__version__ = "0.1.0"

# Public name -> the module that defines it (imported on first access).
_EXPORTS = {
    "BertClassifier": "bert_tf.models",
    "BertConfig": "bert_tf.config",
    "BertEncoder": "bert_tf.models",
    "BertMultiVectorEncoder": "bert_tf.models",
    "BertPreprocessor": "bert_tf.text.preprocessing",
    "BertPretrainer": "bert_tf.models",
    "BertReranker": "bert_tf.models",
    "BertSentenceEncoder": "bert_tf.models",
    "BertSparseEncoder": "bert_tf.models",
    "BertSpanLabeler": "bert_tf.models",
    "BertTextClassifier": "bert_tf.models",
    "BertTokenClassifier": "bert_tf.models",
    "CheckpointMismatchError": "bert_tf.checkpoints",
    "UserInputError": "bert_tf.errors",
    "load_checkpoint": "bert_tf.checkpoints",
    "pipeline": "bert_tf.pipelines",
    "save_tf1_checkpoint": "bert_tf.checkpoints",
}
_SUBMODULES = ("optimization", "tokenization")  # shims of training/, text/

__all__ = sorted([*_EXPORTS, *_SUBMODULES])

keras_registration.install()
# TensorFlow, when something imports it, without its start-up messages (the
# oneDNN notice, a cuInit error on a CUDA build without a GPU).
tensorflow_import.install_quiet_import()
# oneDNN's matrix products on every x86-64 CPU, not only those TensorFlow
# turns them on for (see `tensorflow_import.prefer_onednn`).
tensorflow_import.prefer_onednn()


def __getattr__(name):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"bert_tf.{name}")
    else:
        raise AttributeError(f"module 'bert_tf' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return sorted([*globals(), *__all__])
