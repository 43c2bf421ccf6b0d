"""``SavedModelHandler``: Beam ``RunInference`` on an export's raw-text signature."""

import numpy as np
import tensorflow as tf
from apache_beam.ml.inference.base import ModelHandler
from apache_beam.ml.inference.base import PredictionResult

# The signature inputs that take a list of strings per row ([B, N]): the
# reranker's candidate passages.
LIST_INPUTS = ("passages",)


def json_value(value):
    """One row of a signature output as JSON-ready Python (bytes → str).

    float32 values become the Python floats they equal, so the JSON text
    reads back to the same float32 numbers. Bytes that are not UTF-8 keep
    their bytes as surrogate escapes (json.dumps writes them as ``\\udcXX``).
    """
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return [json_value(item) for item in value]
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogateescape")
    if isinstance(value, np.generic):
        return value.item()
    return value


def _pads_outputs(signature):
    """Whether an output has a dynamic dimension after the batch one that no
    list input explains (the tagger's tokens and entities, the span model's
    windows): such outputs are padded to the batch's longest row."""
    inputs = signature.structured_input_signature[1]
    if any(name in inputs for name in LIST_INPUTS):
        return False
    return any(
        None in spec.shape.as_list()[1:]
        for spec in signature.structured_outputs.values()
    )


class SavedModelHandler(ModelHandler):
    """A Beam ``ModelHandler`` for a bert_tf SavedModel's ``serving_default``.

    Examples are dicts ``{signature input name: str}`` (a list of str for the
    reranker's ``passages``); each prediction's inference is the dict of the
    signature's outputs for that row, as JSON-ready Python values. Rows are
    batched, except when the signature pads its outputs to the batch's
    longest row (tagger, span): those rows run one at a time so that each
    row's outputs are exactly the SavedModel's for it alone. Reranker rows
    are batched by their number of passages.

    Args:
      version_dir: the SavedModel version directory (local or gs://...).
      min_batch_size, max_batch_size: rows per signature call (Beam's
        BatchElements bounds).

    Example:

    ```python
    rows | RunInference(KeyedModelHandler(SavedModelHandler("/models/mrpc/1")))
    ```
    """

    def __init__(self, version_dir, min_batch_size=1, max_batch_size=32):
        super().__init__(min_batch_size=min_batch_size, max_batch_size=max_batch_size)
        self.version_dir = version_dir

    def load_model(self):
        # The in-graph tokenizer's ops (RegexSplitWithOffsets, ...) are
        # registered by importing tensorflow_text, in each worker process.
        import tensorflow_text  # noqa: F401

        return tf.saved_model.load(self.version_dir)

    def run_inference(self, batch, model, inference_args=None):
        signature = model.signatures["serving_default"]
        if _pads_outputs(signature):
            groups = [[index] for index in range(len(batch))]
        else:
            by_size = {}
            for index, example in enumerate(batch):
                size = tuple(
                    len(example[name]) for name in LIST_INPUTS if name in example
                )
                by_size.setdefault(size, []).append(index)
            groups = list(by_size.values())
        results = [None] * len(batch)
        for indices in groups:
            inputs = {
                name: tf.constant([batch[index][name] for index in indices])
                for name in batch[indices[0]]
            }
            outputs = {
                name: value.numpy() for name, value in signature(**inputs).items()
            }
            for position, index in enumerate(indices):
                row = {
                    name: json_value(value[position]) for name, value in outputs.items()
                }
                results[index] = PredictionResult(batch[index], row, self.version_dir)
        return results

    def get_metrics_namespace(self):
        return "bert_tf_saved_model"
