"""Runs a bert_tf LiteRT file: raw text in, predictions out.

Needs only ai-edge-litert and tensorflow-text (`pip install ".[litert]"`);
the file comes from `bert-tf-export-litert` (`bert_tf.serving.litert_exporter`).

Example:
>>> from bert_tf.serving.litert_model import LiteRTModel
>>> model = LiteRTModel("/tmp/mrpc.tflite")
>>> model(text_a=["He left."], text_b=["He is gone."])["labels"]
array([b'1'], dtype=object)
"""

import json
import os
import struct
import sys

import numpy as np

METADATA_NAME = "bert_tf_export"
INSTALL_HINT = 'pip install ".[litert]" (ai-edge-litert and tensorflow-text)'


def _import_runtime():
    """(InterpreterWithCustomOps, tensorflow-text's LiteRT op registrars)."""
    try:
        from ai_edge_litert.interpreter import InterpreterWithCustomOps
    except ImportError as error:
        raise ImportError(
            f"bert_tf.serving.litert_model needs the ai-edge-litert package ({error}): {INSTALL_HINT}"
        ) from error
    if "tensorflow_text" not in sys.modules:
        registrars = _registrars_without_tensorflow()
        if registrars:
            return InterpreterWithCustomOps, registrars
    try:
        import tensorflow_text
    except ImportError as error:
        raise ImportError(
            "bert_tf.serving.litert_model needs the tensorflow-text package for the tokenizer's "
            f"LiteRT kernels ({error}): {INSTALL_HINT}"
        ) from error
    return InterpreterWithCustomOps, tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS


def _registrars_without_tensorflow():
    """tensorflow-text's LiteRT op registrars, read from its
    `tflite_registrar` extension without importing `tensorflow_text` (whose
    package imports TensorFlow: 4-5 s a process, for 14 functions). The
    extension needs TensorFlow's C++ framework library, loaded first (0.1 s)
    with its start-up log held back. [] when either is not where the
    packages put them: the caller imports tensorflow_text instead."""
    import ctypes
    import importlib.machinery
    import importlib.util

    from bert_tf.tensorflow_import import stderr_held_back

    try:
        tf_spec = importlib.util.find_spec("tensorflow")
        text_spec = importlib.util.find_spec("tensorflow_text")
    except (ImportError, ValueError):
        return []
    if tf_spec is None or text_spec is None:
        return []
    framework = os.path.join(
        os.path.dirname(tf_spec.origin), "libtensorflow_framework.so.2"
    )
    extension = os.path.join(
        os.path.dirname(text_spec.origin), "core", "pybinds", "tflite_registrar.so"
    )
    if not (os.path.exists(framework) and os.path.exists(extension)):
        return []
    name = "tensorflow_text.core.pybinds.tflite_registrar"
    try:
        with stderr_held_back(False):
            ctypes.CDLL(framework, mode=ctypes.RTLD_GLOBAL)
            loader = importlib.machinery.ExtensionFileLoader(name, extension)
            spec = importlib.util.spec_from_file_location(
                name, extension, loader=loader
            )
            module = importlib.util.module_from_spec(spec)
            loader.exec_module(module)
    except (OSError, ImportError):
        return []
    # tensorflow_text's SELECT_TFTEXT_OPS: every registrar the extension has.
    return [getattr(module, n) for n in sorted(dir(module)) if n.startswith("Add")]


def _valid_utf8(value, name):
    """`value` (str or bytes) as UTF-8 bytes, invalid sequences dropped: what
    the SavedModel's tokenizer reads of them (the file's own normalizer
    would read them otherwise)."""
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, np.bytes_)):
        return bytes(value).decode("utf-8", "ignore").encode("utf-8")
    raise TypeError(f"{name}: expected str or bytes, got {type(value).__name__}")


def read_metadata(model_content):
    """The `bert_tf_export` JSON entry of a .tflite file's bytes (or None)."""
    try:
        from ai_edge_litert import schema_py_generated as schema
    except ImportError as error:
        raise ImportError(
            f"bert_tf.serving.litert_model needs the ai-edge-litert package ({error}): {INSTALL_HINT}"
        ) from error
    model = schema.Model.GetRootAs(model_content, 0)
    for index in range(model.MetadataLength()):
        entry = model.Metadata(index)
        if entry.Name().decode() == METADATA_NAME:
            data = model.Buffers(entry.Buffer()).DataAsNumpy()
            return json.loads(bytes(data).decode())
    return None


def _check_batch_size(batch_size):
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size={batch_size!r}: must be an integer")
    if batch_size < 1:
        raise ValueError(f"batch_size={batch_size}: must be positive")


def _batches(lengths, batch_size):
    """Row indices per batch of `batch_size`, longest `lengths` first (one
    call is padded to its longest row whatever the order)."""
    order = np.argsort([-length for length in lengths], kind="stable")
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def _padded(rows):
    """`serve_tokenized`'s inputs of packed id rows: padded to the longest,
    one segment."""
    input_ids = np.zeros((len(rows), max(len(row) for row in rows)), np.int32)
    input_mask = np.zeros_like(input_ids)
    for index, row in enumerate(rows):
        input_ids[index, : len(row)] = row
        input_mask[index, : len(row)] = 1
    return input_ids, input_mask, np.zeros_like(input_ids)


class LiteRTModel:
    """A bert_tf `.tflite` file, opened with tensorflow-text's LiteRT kernels.

    Calling it runs `serving_default` on raw strings; `tokenized(...)` runs
    `serve_tokenized`; `metadata` holds what the export stored (model type,
    labels, seq_length, quantization, ...). A family's own methods:
    `encode` (embedding), `entities` (tagger), `score_pairs` and `rank`
    (reranker).

    Args:
        path: the `.tflite` file.
        num_threads: CPU threads of the interpreter (default: LiteRT's).

    Example:

    ```python
    model = LiteRTModel("/tmp/ner.tflite")
    model(text=["Angela Merkel visited Paris."])["tags"][0, :4]
    # array([b'', b'B-person', b'I-person', b'O'], dtype=object)
    ```
    """

    def __init__(self, path, num_threads=None):
        interpreter_class, registrars = _import_runtime()
        with open(path, "rb") as f:
            content = f.read()
        self.path = path
        try:
            self.metadata = read_metadata(content)
        except (struct.error, IndexError, UnicodeDecodeError) as error:
            # The flatbuffer reader fails this way on bytes of another kind.
            raise ValueError(
                f"{path} is not a LiteRT (.tflite) file ({error})"
            ) from error
        if self.metadata is None:
            raise ValueError(
                f"{path} has no {METADATA_NAME} metadata: not a bert_tf LiteRT export"
            )
        self._interpreter = interpreter_class(
            custom_op_registerers=registrars,
            model_content=content,
            num_threads=num_threads,
        )
        self._runners = {}

    @property
    def input_names(self):
        """The raw-text inputs of `serving_default`."""
        return list(self.metadata["signatures"]["serving_default"])

    def signature_names(self):
        """The file's signatures (a `--target=mediapipe` file has one)."""
        return list(self._interpreter.get_signature_list())

    def _runner(self, name):
        if name not in self._runners:
            self._runners[name] = self._interpreter.get_signature_runner(name)
        return self._runners[name]

    def run_signature(self, name, **arrays):
        """Signature `name` on numpy `arrays` (its inputs by name)."""
        return self._runner(name)(**arrays)

    def __call__(self, **texts):
        """`serving_default` on equally long lists of strings per input."""
        if sorted(texts) != sorted(self.input_names):
            raise ValueError(
                f"{self.path} takes {self.input_names}, got {sorted(texts)}"
            )
        arrays = {}
        for name, values in texts.items():
            values = [values] if isinstance(values, (str, bytes)) else list(values)
            arrays[name] = np.array([_valid_utf8(v, name) for v in values], object)
        sizes = {len(a) for a in arrays.values()}
        if len(sizes) != 1:
            raise ValueError(
                f"inputs {sorted(arrays)} must have the same number of strings, got "
                + ", ".join(f"{k}: {len(v)}" for k, v in sorted(arrays.items()))
            )
        runner = self._runner("serving_default")
        if sizes == {0}:
            # The file's kernels fail on an empty batch: the outputs of one
            # empty text, with no rows.
            one = runner(**{name: np.array([b""], object) for name in arrays})
            return {name: value[:0] for name, value in one.items()}
        return runner(**arrays)

    def require_model(self, kind):
        """Raises ValueError unless the file is a `kind` export ("embedding",
        "tagger", ...: the metadata's `model`)."""
        found = self.metadata.get("model")
        if found != kind:
            article = "an" if kind[0] in "aeiou" else "a"
            raise ValueError(
                f"{self.path} is a {found} export, not {article} {kind} one"
            )

    @property
    def embedding_dim(self):
        """An embedding export's vector width."""
        self.require_model("embedding")
        width = self.metadata.get("embedding_dim")
        if width is None:  # a file exported before the width was stored
            width = self(text=[""])["embeddings"].shape[-1]
        return int(width)

    def encode(self, sentences, batch_size=32, progress=None):
        """An embedding export's vectors of `sentences`: float32 numpy
        [len(sentences), dim] in their order, as `BertSentenceEncoder.encode`.

        Sentences are sorted by length (longest first), cut into batches of
        `batch_size`, and each batch is padded to its own longest row, so
        short sentences cost little. The length is the word-piece count when
        the file has the `tokenize` signature (exports since issue 48; the
        texts are tokenized once, by the file, and batches go to
        `serve_tokenized`), else characters, as sentence-transformers sorts.

        Args:
            sentences: list of str or UTF-8 bytes (or one: returns [dim]).
            batch_size: int. Sentences per call of the file.
            progress: optional callable(done, total) called after each batch.
        """
        single = isinstance(sentences, (str, bytes))
        # bytes stay bytes (str(b"a") would be the text "b'a'").
        texts = [sentences] if single else list(sentences)
        utf8 = [_valid_utf8(text, f"sentences[{i}]") for i, text in enumerate(texts)]
        _check_batch_size(batch_size)
        output = np.zeros((len(texts), self.embedding_dim), np.float32)
        if len(texts) > batch_size and "tokenize" in self.signature_names():
            ids = self._token_ids(utf8)
            batches = _batches([len(row) for row in ids], batch_size)
        else:
            ids = None
            batches = _batches([len(t) for t in texts], batch_size)
        done = 0
        for rows in batches:
            if ids is None:
                output[rows] = self(text=[texts[i] for i in rows])["embeddings"]
            else:
                output[rows] = self.tokenized(*_padded([ids[i] for i in rows]))[
                    "embeddings"
                ]
            done += len(rows)
            if progress is not None:
                progress(done, len(texts))
        return output[0] if single else output

    def score_pairs(self, queries, passages, batch_size=32, progress=None):
        """A reranker export's scores of (query, passage) pairs: float32
        numpy [len(queries)] in their order, as `CrossEncoder.predict` gives
        them (the activation of the logit; the metadata's `activation`).

        As `CrossEncoder.predict`, pairs are sorted by length (characters,
        longest first) and cut into batches of `batch_size`, each padded to
        its own longest pair.

        Args:
            queries, passages: equally long lists of str or UTF-8 bytes.
            batch_size: int. Pairs per call of the file.
            progress: optional callable(done, total) called after each batch.
        """
        self.require_model("reranker")
        _check_batch_size(batch_size)
        queries, passages = list(queries), list(passages)
        if len(queries) != len(passages):
            raise ValueError(
                f"queries and passages must be as long: {len(queries)} queries, "
                f"{len(passages)} passages"
            )
        query = [_valid_utf8(t, f"queries[{i}]") for i, t in enumerate(queries)]
        passage = [_valid_utf8(t, f"passages[{i}]") for i, t in enumerate(passages)]
        scores = np.zeros(len(query), np.float32)
        lengths = [len(q) + len(p) for q, p in zip(query, passage, strict=True)]
        done = 0
        for rows in _batches(lengths, batch_size):
            scores[rows] = self(
                query=[query[i] for i in rows], passage=[passage[i] for i in rows]
            )["scores"]
            done += len(rows)
            if progress is not None:
                progress(done, len(query))
        return scores

    def rank(self, query, passages, top_k=None, batch_size=32):
        """A reranker export's order of `passages` for `query`, best first,
        as `CrossEncoder.rank`: `[{"corpus_id": index, "score": score}]`
        (ties in index order), the first `top_k` only when given.

        Example:
        >>> LiteRTModel("/tmp/reranker.tflite").rank(
        ...     "who wrote it?", ["The sky is blue.", "Ann wrote it."])
        [{'corpus_id': 1, 'score': 0.98}, {'corpus_id': 0, 'score': 0.01}]
        """
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0
        ):
            raise ValueError(f"top_k must be None or a positive int, got {top_k!r}")
        if not isinstance(query, (str, bytes)):
            raise TypeError(f"query: expected str or bytes, got {type(query).__name__}")
        passages = list(passages)
        scores = self.score_pairs([query] * len(passages), passages, batch_size)
        order = np.argsort(-scores, kind="stable")[:top_k]
        return [{"corpus_id": int(i), "score": float(scores[i])} for i in order]

    def _token_ids(self, utf8_texts, chunk=1024):
        """Each text's packed ids ([CLS] ... [SEP], int32), from the file's
        `tokenize` signature, `chunk` texts per call (a call pads to its
        longest text); `utf8_texts`: `_valid_utf8`'s bytes."""
        runner = self._runner("tokenize")
        ids = []
        for start in range(0, len(utf8_texts), chunk):
            packed = runner(text=np.array(utf8_texts[start : start + chunk], object))
            lengths = packed["input_mask"].sum(axis=1)
            ids.extend(
                row[:length]
                for row, length in zip(packed["input_ids"], lengths, strict=True)
            )
        return ids

    def entities(self, texts):
        """A tagger's entities of `texts`, as its SavedModel's `entity_*`
        outputs give them: one list per text of dicts `type`, `text`,
        `start`, `end` (byte offsets in the UTF-8 text) and `score` (the mean
        probability of the entity's word tags).

        Words are read as conlleval reads them: an `I-X` after `O` or another
        type starts an entity. LiteRT has no string ops for this, so it runs
        here, on `serving_default`'s tags and offsets.
        """
        self.require_model("tagger")
        texts = [texts] if isinstance(texts, (str, bytes)) else list(texts)
        out = self(text=texts)
        logits = np.asarray(out["logits"], np.float64)
        probabilities = np.exp(logits - logits.max(-1, keepdims=True))
        probabilities /= probabilities.sum(-1, keepdims=True)
        labels = self.metadata["labels"]
        result = []
        for row, text in enumerate(texts):
            data = text.encode("utf-8") if isinstance(text, str) else text
            words = []  # [tag, begin, end, probability] per word, in order
            for position, tag in enumerate(out["tags"][row]):
                start = int(out["token_start"][row, position])
                end = int(out["token_end"][row, position])
                if start < 0:
                    continue
                if tag:  # a word's first piece
                    tag_id = int(out["tag_ids"][row, position])
                    probability = probabilities[row, position, tag_id]
                    words.append([labels[tag_id], start, end, probability])
                elif words:
                    words[-1][2] = max(words[-1][2], end)
            entities, previous = [], ("O", None)
            for tag, begin, end, probability in words:
                prefix, _, kind = tag.partition("-")
                if tag == "O" or not kind:
                    previous = ("O", None)
                    continue
                if prefix == "B" or previous[0] == "O" or previous[1] != kind:
                    entities.append(
                        {"type": kind, "start": begin, "end": end, "scores": []}
                    )
                entities[-1]["end"] = end
                entities[-1]["scores"].append(probability)
                previous = (prefix, kind)
            for entity in entities:
                scores = entity.pop("scores")
                entity["score"] = float(np.mean(scores))
                entity["text"] = data[entity["start"] : entity["end"]].decode(
                    "utf-8", "replace"
                )
            result.append(entities)
        return result

    def tokenized(self, input_ids, input_mask, segment_ids):
        """`serve_tokenized` on int32 [batch, length] arrays."""
        return self._runner("serve_tokenized")(
            input_ids=np.asarray(input_ids, np.int32),
            input_mask=np.asarray(input_mask, np.int32),
            segment_ids=np.asarray(segment_ids, np.int32),
        )
