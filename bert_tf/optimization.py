"""Former home of `bert_tf.training.optimization`, kept so `import bert_tf.optimization` works: the same module object."""

import sys

from bert_tf.training import optimization as _module

sys.modules[__name__] = _module
