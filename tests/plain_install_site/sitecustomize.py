"""Run by every Python process the tests start (`cli_script.script_env` puts
this folder on PYTHONPATH).

`import tensorflow` imports Keras, and Keras imports, when they are
installed, scikit-learn (its scikit-learn wrappers), pandas (DataFrame
inputs), matplotlib and OpenCV (image plots) and IPython (its file editor's
notebook view): about 2.5 s of CPU per process in all. bert_tf uses none of
them through Keras, and `pip install .` installs none of them (the test
extras pull them in, through sentence-transformers and MediaPipe), so the
tools under test start here as they do on a user's machine: Keras's own
imports of these packages find nothing. Code outside Keras (Beam, MediaPipe,
a test's reference) still imports them. The pytest workers themselves keep
everything (test_classification_metrics compares with scikit-learn).
"""

import sys

_KERAS_OPTIONAL = {"sklearn", "pandas", "matplotlib", "cv2", "IPython"}


def _imported_by_keras():
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if not name.startswith(("importlib", __name__)):
            return name == "keras" or name.startswith("keras.")
        frame = frame.f_back
    return False


class _NotForKeras:
    """A meta path finder that answers "not installed" to Keras alone."""

    @staticmethod
    def find_spec(name, path=None, target=None):
        if name.partition(".")[0] in _KERAS_OPTIONAL and _imported_by_keras():
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NotForKeras)
