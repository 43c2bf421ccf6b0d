"""A package's public names, imported on first access (PEP 562).

`import bert_tf.serving` (or `.options`, `.training`) stays cheap: the
module defining a name, and TensorFlow with it, loads when the name is
first read.
"""

import importlib


def lazy_exports(package, exports, namespace):
    """The module `__getattr__` of `package` for `exports`.

    Args:
      package: the package's name (for the AttributeError).
      exports: public name -> the module that defines it.
      namespace: the package's `globals()` (a name read once is kept there).

    Example:

    ```python
    __getattr__ = lazy_exports(__name__, {"Trainer": "bert_tf.training.trainer"}, globals())
    ```
    """

    def __getattr__(name):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name]), name)
        namespace[name] = value
        return value

    return __getattr__
