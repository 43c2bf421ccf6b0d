"""`SavedModelSource`: a pipeline's model served by an exported SavedModel."""

import json
import os

import tensorflow as tf

from bert_tf.errors import UserInputError
from bert_tf.pipelines.text_pipeline import classification_results
from bert_tf.serving.saved_model_loader import load_saved_model

# Where export_saved_model writes what it exported (family, labels, ...).
METADATA_FILE = os.path.join("assets.extra", "bert_tf_export.json")


class SavedModelSource:
    """Calls the `serving_default` signature of a SavedModel version
    directory that `export_saved_model` wrote (raw strings in, the family's
    outputs as numpy arrays out), as a model server would.

    Args:
        version_dir: the SavedModel version directory (saved_model.pb).
        family: "classifier", "tagger", "span" or "embedding": the family
            the export must be.

    Raises:
        UserInputError: the export is of another family, or has no
            `serving_default` signature.

    Example:
    >>> SavedModelSource("/models/mrpc/1", "classifier").classify(["Hi."])
    """

    def __init__(self, version_dir, family):
        self.path = version_dir
        self.family = family
        metadata_path = os.path.join(version_dir, METADATA_FILE)
        metadata = {}
        if os.path.exists(metadata_path):
            with open(metadata_path, encoding="utf-8") as f:
                metadata = json.load(f)
        exported = metadata.get("model")
        if exported is not None and exported != family:
            raise UserInputError(
                f"bert_tf.pipeline: {version_dir} is a {exported} export, not a "
                f"{family}"
            )
        self.loaded = load_saved_model(version_dir)
        if "serving_default" not in self.loaded.signatures:
            raise UserInputError(
                f"bert_tf.pipeline: {version_dir} has no serving_default signature"
            )
        self.signature = self.loaded.signatures["serving_default"]
        self.input_names = sorted(self.signature.structured_input_signature[1])
        self.text_pair = (
            "text_b" in self.input_names if family == "classifier" else None
        )

    def _call(self, **texts):
        outputs = self.signature(**{k: tf.constant(v) for k, v in texts.items()})
        return {name: value.numpy() for name, value in outputs.items()}

    def classify(self, texts, text_pair=None):
        inputs = {"text_a": texts}
        if text_pair is not None:
            inputs["text_b"] = text_pair
        return classification_results(self._call(**inputs))

    def embed(self, texts):
        return self._call(text=texts)["embeddings"]

    def tag(self, texts):
        return self._call(text=texts)

    def answer(self, questions, contexts):
        return self._call(question=questions, context=contexts)
