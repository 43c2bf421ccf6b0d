"""Importing TensorFlow without its start-up noise.

TensorFlow's import writes a oneDNN notice and, on a CUDA build without a GPU,
a `failed call to cuInit` error, from C++ before its log level is read; its
Python modules log INFO lines through absl ("Sharding callback duration",
signature input names "renamed") that a command shows when absl runs at INFO.
`import_tensorflow` holds the first back and filters the second;
`bert_tf` uses it for the first model or layer touched, the commands before
their work starts.

`prefer_onednn` asks for TensorFlow's oneDNN kernels on every x86-64 CPU (see
there); `import bert_tf` calls it, so it holds whenever bert_tf is imported
before TensorFlow.
"""

import contextlib
import importlib.abc
import importlib.util
import logging
import os
import platform
import sys
import tempfile

__all__ = [
    "hold_back_keras_extras",
    "import_tensorflow",
    "install_quiet_import",
    "prefer_onednn",
    "stderr_held_back",
]

# Packages Keras imports with TensorFlow when they are installed, for
# integrations a bert_tf command never uses: scikit-learn (its estimator
# wrappers), matplotlib and OpenCV (image-gallery plots, bounding boxes),
# pandas (DataFrames in `fit`) and IPython (the file editor's notebook
# view). With all installed they were 2.6 of 7.3 s of the import (python -X
# importtime, 2 cores, 2026-12-04).
KERAS_EXTRAS = ("sklearn", "matplotlib", "pandas", "IPython", "cv2")
_held_back = ()

ONEDNN_VARIABLE = "TF_ENABLE_ONEDNN_OPTS"
# platform.machine() (lower case) of the CPUs prefer_onednn asks oneDNN for.
ONEDNN_MACHINES = ("x86_64", "amd64")


@contextlib.contextmanager
def stderr_held_back(show):
    """Sends file descriptor 2 to a temporary file (unless `show`).

    TensorFlow's C++ start-up messages are written before its log level is
    read, so only the file descriptor catches them. They are replayed if the
    block raises.
    """
    if show:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode("utf-8", "replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def hold_back_keras_extras():
    """Makes this process's TensorFlow import skip `KERAS_EXTRAS` (Keras
    treats them as not installed); they import as usual afterwards. For the
    commands' processes, which use none of those Keras integrations, not for
    a library user's (whose Keras may need them)."""
    global _held_back
    _held_back = KERAS_EXTRAS


class _HoldBack(importlib.abc.MetaPathFinder):
    """Refuses the held-back packages while it is on `sys.meta_path`."""

    def __init__(self, names):
        self.names = names

    def find_spec(self, fullname, path=None, target=None):
        if fullname.partition(".")[0] in self.names:
            raise ImportError(f"{fullname}: held back while TensorFlow imports")
        return None


@contextlib.contextmanager
def _extras_held_back():
    names = tuple(n for n in _held_back if n not in sys.modules)
    if not names:
        yield
        return
    finder = _HoldBack(names)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)


class _TensorFlowInfoFilter(logging.Filter):
    """Drops TensorFlow's own records below WARNING (bert_tf's INFO stays)."""

    def __init__(self, package_dir):
        super().__init__()
        self.package_dir = package_dir

    def filter(self, record):
        return record.levelno >= logging.WARNING or not record.pathname.startswith(
            self.package_dir
        )


def _quiet(tf):
    """TensorFlow's Python INFO lines dropped (bert_tf's own stay)."""
    tf.get_logger().setLevel("WARNING")
    info_filter = _TensorFlowInfoFilter(os.path.dirname(tf.__file__))
    # absl's handler (the commands' log) and the absl logger itself
    # (Python's own handlers in a program without absl.app).
    from absl import logging as absl_logging

    absl_logging.get_absl_handler().addFilter(info_filter)
    absl_logging.get_absl_logger().addFilter(info_filter)


def import_tensorflow(verbosity=0):
    """Imports TensorFlow, quietly unless `verbosity` >= 1; returns the module.

    Quietly: the C++ start-up messages are held back (and shown if the import
    fails), later C++ log lines are errors only unless TF_CPP_MIN_LOG_LEVEL
    says otherwise, and TensorFlow's Python INFO lines are dropped.
    """
    if "tensorflow" in sys.modules:
        return sys.modules["tensorflow"]
    show = verbosity >= 1
    if not show:
        # Later C++ messages: errors only (its warnings are about TensorFlow's
        # own internals, e.g. tf.data graph rewrites).
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    with stderr_held_back(show), _extras_held_back():
        import tensorflow as tf

        # Probing for GPUs is where a CUDA build on a machine without one
        # logs "failed call to cuInit"; do it while stderr is held back.
        tf.config.list_physical_devices("GPU")
    if not show:
        _quiet(tf)
    return tf


class _QuietImportHook(importlib.abc.MetaPathFinder):
    """Imports `tensorflow` as `import_tensorflow` does, whoever imports it
    first (`from bert_tf.models import ...`, Keras)."""

    def find_spec(self, fullname, path, target=None):
        if fullname != "tensorflow":
            return None
        sys.meta_path.remove(self)  # one shot; the other finders do the finding
        spec = importlib.util.find_spec(fullname)
        if spec is None or os.environ.get("TF_CPP_MIN_LOG_LEVEL") == "0":
            return spec
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        exec_module = spec.loader.exec_module

        def exec_quietly(module):
            with stderr_held_back(False), _extras_held_back():
                exec_module(module)
                module.config.list_physical_devices("GPU")  # the cuInit probe
            _quiet(module)

        spec.loader.exec_module = exec_quietly
        return spec


def prefer_onednn():
    """Turns on TensorFlow's oneDNN kernels for this process on x86-64, unless
    TF_ENABLE_ONEDNN_OPTS says otherwise or TensorFlow is imported already.

    TensorFlow's x86-64 Linux build uses oneDNN for matrix products, softmax
    and fused MatMul+BiasAdd by default only on CPUs with AVX512_VNNI,
    AVX512_BF16 or AMX (recent Xeons); on AVX2-only CPUs (AMD EPYC up to
    Zen 3, older Xeons) it falls back to Eigen's kernels. On two Zen 3 cores
    Eigen's made MiniLM's fine-tuning step 1.55x slower (766 against 493 ms
    at batch 16, STS-B) with the same dev Spearman. oneDNN's summation order
    differs from Eigen's by float32 rounding, as on the CPUs where it is
    TensorFlow's own default. `TF_ENABLE_ONEDNN_OPTS=0` keeps Eigen's.
    """
    if "tensorflow" in sys.modules:
        return
    if platform.machine().lower() in ONEDNN_MACHINES:
        os.environ.setdefault(ONEDNN_VARIABLE, "1")


def install_quiet_import():
    """Makes the first import of TensorFlow in this process quiet (see
    `import_tensorflow`) unless TF_CPP_MIN_LOG_LEVEL=0 asks for its messages.
    Nothing happens when TensorFlow is imported already."""
    if "tensorflow" in sys.modules:
        return
    if not any(isinstance(f, _QuietImportHook) for f in sys.meta_path):
        sys.meta_path.insert(0, _QuietImportHook())
