"""Former home of `bert_tf.serving.litert_model`, kept so `import bert_tf.litert` works: the same module object."""

import sys

from bert_tf.serving import litert_model as _module

sys.modules[__name__] = _module
