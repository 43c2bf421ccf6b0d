"""Which `SignatureModule` serves which model class.

A model is served by the entry of the nearest class in its MRO, so a
subclass (`BertTextClassifier` of `BertClassifier`) is served as its base
unless it registers its own family. Entries are classes, or
"module:Class" strings imported on the first lookup (so registering a family
imports neither TensorFlow nor the model).

A new family adds one entry: a `Family` in `bert_tf.serving.families`, or
at run time

    from bert_tf import serving
    serving.register(MyModel, MySignatures)

Example:
>>> signature_module_class(bert_tf.BertTextClassifier)
<class 'bert_tf.serving.classifier_signatures.ClassifierSignatures'>
"""

import importlib

from bert_tf.serving.families import FAMILIES

# model class -> signature module class; "module:Class" strings until used.
_BUILTIN = {f.model_class: f.signatures for f in FAMILIES if f.signatures}
_registry = dict(_BUILTIN)


def register(model_class, signature_module):
    """Serves `model_class` (and its subclasses without an entry of their
    own) with `signature_module`.

    Args:
        model_class: a Keras model class, or its "module:Class" path.
        signature_module: a `SignatureModule` subclass, or its
            "module:Class" path; built as
            `signature_module(model, preprocessor, **family_options)`.
    """
    _registry[model_class] = signature_module


def registered():
    """The registered model classes, as "module:Class" paths (sorted).

    What every family test iterates over: a family added with `register`
    (or a `_BUILTIN` line) is listed here without importing it.
    """
    return sorted(_path(key) for key in _registry)


def _path(entry):
    if isinstance(entry, str):
        return entry
    return f"{entry.__module__}:{entry.__qualname__}"


def resolve(entry):
    """A class, or the class a "module:Class" path names (imported now)."""
    if not isinstance(entry, str):
        return entry
    module, _, name = entry.partition(":")
    return getattr(importlib.import_module(module), name)


def signature_module_class(model_class):
    """The `SignatureModule` subclass registered for `model_class` or its
    nearest registered base; `TypeError` when there is none."""
    by_class = {}
    for key, value in list(_registry.items()):
        by_class[resolve(key)] = value
    for cls in model_class.__mro__:
        if cls in by_class:
            return resolve(by_class[cls])
    served = sorted(cls.__name__ for cls in by_class)
    raise TypeError(
        f"No serving signatures for {model_class.__name__}: exported models are "
        f"{', '.join(served)} (and their subclasses); add one with "
        "bert_tf.serving.register"
    )


def signature_module_for(model, preprocessor, **family_options):
    """The registered `SignatureModule` of `model`, built over `model` and
    `preprocessor` with the family's options (labels, `SpanOptions`, ...)."""
    module_class = signature_module_class(type(model))
    return module_class(model, preprocessor, **family_options)
