"""Registers bert_tf's Keras classes the first time Keras looks one up.

`import bert_tf` does not import TensorFlow, so its layers and models are not
registered with Keras until one is touched. `keras.saving.load_model` finds
classes by their registered name (``bert_tf>BertClassifier``) in Keras'
object registry; this module wraps that registry's lookup so that a miss on a
``bert_tf>`` name imports the modules that register them and looks again.
The wrapper is installed at once when Keras is already imported, else right
after Keras imports its registry module.
"""

import importlib
import importlib.abc
import sys

REGISTRY_MODULE = "keras.src.saving.object_registration"
PREFIX = "bert_tf>"

# Every module that calls `keras.saving.register_keras_serializable`.
REGISTERING_MODULES = (
    "bert_tf.layers",
    "bert_tf.models",
    "bert_tf.training.optimization",
    "bert_tf.text.preprocessing",
)


def register_all():
    """Imports every bert_tf module that registers Keras classes."""
    for name in REGISTERING_MODULES:
        importlib.import_module(name)


def _wrap_lookup(registry):
    original = registry.get_registered_object
    if getattr(original, "bert_tf_lazy", False):
        return

    def get_registered_object(name, custom_objects=None, module_objects=None):
        found = original(name, custom_objects, module_objects)
        if found is None and isinstance(name, str) and name.startswith(PREFIX):
            register_all()
            found = original(name, custom_objects, module_objects)
        return found

    get_registered_object.bert_tf_lazy = True
    get_registered_object.__doc__ = original.__doc__
    registry.get_registered_object = get_registered_object


class _RegistryImportHook(importlib.abc.MetaPathFinder):
    """Wraps the registry's lookup as soon as Keras has imported it."""

    def find_spec(self, fullname, path, target=None):
        if fullname != REGISTRY_MODULE:
            return None
        sys.meta_path.remove(self)  # one shot; the other finders do the finding
        for finder in sys.meta_path:
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(fullname, path, target) if find_spec else None
            if spec is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_wrap(module):
            exec_module(module)
            _wrap_lookup(module)

        spec.loader.exec_module = exec_and_wrap
        return spec


def install():
    """Makes `keras.saving.load_model` find bert_tf classes (idempotent)."""
    registry = sys.modules.get(REGISTRY_MODULE)
    if registry is not None:
        _wrap_lookup(registry)
    elif not any(isinstance(f, _RegistryImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _RegistryImportHook())
