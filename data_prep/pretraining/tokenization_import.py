"""``bert_tf.tokenization`` without importing TensorFlow when possible.

If ``bert_tf/__init__.py`` imports Keras and TensorFlow eagerly (about 4 s and
600 MB, which this pure-Python data pipeline does not need), importing
``bert_tf.tokenization`` normally would run it. The module is then loaded from
its file under its own name, so a later ``import bert_tf`` reuses it (one
module object either way). With a lazy ``bert_tf/__init__.py`` the normal
import is as cheap and this is equivalent to it.
"""

import importlib
import importlib.util
import os
import sys


def import_tokenization():
    """Returns the ``bert_tf.tokenization`` module."""
    name = "bert_tf.tokenization"
    if name in sys.modules or "bert_tf" in sys.modules:
        return importlib.import_module(name)
    spec = importlib.util.find_spec("bert_tf")
    locations = list(spec.submodule_search_locations or []) if spec else []
    path = os.path.join(locations[0], "tokenization.py") if locations else ""
    if not os.path.isfile(path):
        return importlib.import_module(name)
    module_spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


tokenization = import_tokenization()
