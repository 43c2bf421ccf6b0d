"""Former home of `bert_tf.text.tokenization`, kept so `import bert_tf.tokenization` works: the same module object."""

import sys

from bert_tf.text import tokenization as _module

sys.modules[__name__] = _module
