"""Loading an exported SavedModel in plain Python, with its text ops registered.

The exports tokenize in the graph with tensorflow-text's ops
(`RegexSplitWithOffsets`, `WordpieceTokenizeWithOffsets`, ...). TensorFlow
knows them only once `tensorflow_text` is imported; TF Serving's stock image
has them built in. `load_saved_model` imports it first, so a served model
loads in Python with one call.
"""

import os
import re

from bert_tf.errors import UserInputError

_VERSION = re.compile(r"^\d+$")


def version_directory(path):
    """`path` itself when it holds a saved_model.pb, else its newest numbered
    version (TF Serving's layout: <model>/<version>/saved_model.pb)."""
    path = os.fspath(path)
    if os.path.exists(os.path.join(path, "saved_model.pb")):
        return path
    versions = []
    if os.path.isdir(path):
        versions = [
            int(name)
            for name in os.listdir(path)
            if _VERSION.match(name)
            and os.path.exists(os.path.join(path, name, "saved_model.pb"))
        ]
    if not versions:
        raise UserInputError(
            f"{path}: no saved_model.pb, in it or in a numbered version directory"
        )
    return os.path.join(path, str(max(versions)))


def load_saved_model(path):
    """The SavedModel at `path` (a version directory, or the model directory
    whose newest version is loaded), its tensorflow-text ops registered.

    Args:
      path: `<export_dir>/<version>` or `<export_dir>`.

    Returns:
      What `tf.saved_model.load` returns: `.signatures["serving_default"]`
      takes raw text.

    Raises:
      UserInputError: no SavedModel at `path`, or an op its graph needs that
        neither TensorFlow nor tensorflow-text registers (named).

    Example:

    ```python
    model = bert_tf.serving.load_saved_model("/models/mrpc")
    model.signatures["serving_default"](text_a=tf.constant(["Hi."]), text_b=tf.constant(["Hello."]))
    ```
    """
    import tensorflow as tf
    import tensorflow_text  # noqa: F401 (registers the tokenizer's ops)

    directory = version_directory(path)
    try:
        return tf.saved_model.load(directory)
    except tf.errors.NotFoundError as error:
        raise UserInputError(f"{directory}: {unregistered_op_message(error)}") from None


def unregistered_op_message(error):
    """One line for an `Op type not registered` load error: the op, and the
    import that registers tensorflow-text's ops."""
    text = str(error)
    found = re.search(r"Op type not registered '([^']+)'", text)
    if not found:
        return text.strip().splitlines()[0]
    return (
        f"the graph needs op {found.group(1)}, which this process has not "
        "registered: `import tensorflow_text` before tf.saved_model.load, or "
        "load it with bert_tf.serving.load_saved_model (a LiteRT/custom op "
        "from elsewhere needs its own package)"
    )
