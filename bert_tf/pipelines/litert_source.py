"""`LiteRTSource`: a pipeline's model in a `.tflite` file that bert_tf exported."""

import os
import tempfile
import zipfile

import numpy as np

from bert_tf.errors import UserInputError
from bert_tf.pipelines.text_pipeline import classification_results

# The families a .tflite answers through a pipeline.
LITERT_FAMILIES = ("classifier", "embedding")


class LiteRTSource:
    """Runs a `.tflite` of `export_litert.py`: the raw-text file (tokenizer
    inside) or a `--target=mediapipe` file, whose int32 inputs it feeds from
    the original `FullTokenizer` over the vocabulary packed in the file
    ([CLS], the first seq_length - 2 pieces, [SEP]; one text per call, as
    MediaPipe).

    Args:
        path: the `.tflite` file.
        family: "classifier" or "embedding": what the file must hold.

    Raises:
        UserInputError: the file is of another family, or not a bert_tf export.

    Example:
    >>> LiteRTSource("/tmp/minilm.tflite", "embedding").embed(["A cat."]).shape
    (1, 384)
    """

    def __init__(self, path, family):
        from bert_tf.serving.litert_model import LiteRTModel

        self.path = path
        self.family = family
        if family not in LITERT_FAMILIES:
            raise UserInputError(
                f"bert_tf.pipeline: {path} is a LiteRT file; LiteRT files answer "
                "text-classification and sentence-embedding"
            )
        try:
            self.model = LiteRTModel(path)
        except ValueError as error:
            raise UserInputError(f"bert_tf.pipeline: {error}") from error
        metadata = self.model.metadata
        exported = metadata.get("model")
        if exported != family:
            raise UserInputError(
                f"bert_tf.pipeline: {path} is a {exported} export, not a {family}"
            )
        self.mediapipe = metadata.get("target") == "mediapipe"
        self.labels = metadata.get("labels")
        self.text_pair = (
            bool(metadata.get("text_pair")) if family == "classifier" else None
        )
        if self.mediapipe:
            self.seq_length = int(metadata["seq_length"])
            self.tokenizer = _packed_tokenizer(path, metadata.get("strip_accents"))
            (self._signature,) = self.model.signature_names()

    def _mediapipe_outputs(self, text):
        tokenizer = self.tokenizer
        pieces = tokenizer.tokenize(text)[: self.seq_length - 2]
        ids = tokenizer.convert_tokens_to_ids(["[CLS]", *pieces, "[SEP]"])
        ids = np.array([ids], np.int32)
        outputs = self.model.run_signature(
            self._signature,
            ids=ids,
            mask=np.ones_like(ids),
            segment_ids=np.zeros_like(ids),
        )
        return {name: value[0] for name, value in outputs.items()}

    def classify(self, texts, text_pair=None):
        if self.mediapipe:
            rows = [self._mediapipe_outputs(t)["probabilities"] for t in texts]
            return [
                {"label": self.labels[int(p.argmax())], "score": float(p.max())}
                for p in rows
            ]
        inputs = {"text_a": list(texts)}
        if text_pair is not None:
            inputs["text_b"] = list(text_pair)
        return classification_results(self.model(**inputs))

    def embed(self, texts):
        if self.mediapipe:
            return np.stack([self._mediapipe_outputs(t)["embedding"] for t in texts])
        return self.model(text=list(texts))["embeddings"]


def _packed_tokenizer(path, strip_accents):
    """The uncased `FullTokenizer` over the vocab.txt zipped in the file.

    Its normalised text only meets the lines that are our entries (the other
    spellings are never found), whose ids the file's graph maps to ours.
    """
    from bert_tf.serving import mediapipe_metadata
    from bert_tf.text.tokenization import FullTokenizer

    with zipfile.ZipFile(path) as archive:
        vocab = archive.read(mediapipe_metadata.VOCAB_FILE)
    with tempfile.TemporaryDirectory() as directory:
        vocab_file = os.path.join(directory, mediapipe_metadata.VOCAB_FILE)
        with open(vocab_file, "wb") as f:
            f.write(vocab)
        return FullTokenizer(
            vocab_file, do_lower_case=True, strip_accents=strip_accents
        )
