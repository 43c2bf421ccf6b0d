"""Former home of `bert_tf.cli.demo`, kept for `python -m bert_tf.demo` and `import bert_tf.demo`."""

import sys

from bert_tf.cli import demo as _module

if __name__ == "__main__":
    _module.main()
else:
    sys.modules[__name__] = _module
