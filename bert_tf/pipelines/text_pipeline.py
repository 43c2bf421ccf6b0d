"""`TextPipeline`: what `bert_tf.pipeline` returns, raw text in, Python out."""

import numpy as np

from bert_tf.errors import UserInputError


def char_offset(text, byte_offset):
    """The character offset in `text` of UTF-8 byte offset `byte_offset`."""
    return len(text.encode("utf-8")[: int(byte_offset)].decode("utf-8", "ignore"))


def checked_batch_size(batch_size):
    """`batch_size` if a positive integer (0 or less answered nothing, or
    an empty array, for any number of texts)."""
    if (
        isinstance(batch_size, bool)
        or not isinstance(batch_size, (int, np.integer))
        or batch_size < 1
    ):
        raise UserInputError(
            f"bert_tf.pipeline: batch_size={batch_size!r}: must be a positive integer",
            argument="batch_size",
        )
    return int(batch_size)


def _as_list(texts, name):
    if isinstance(texts, str):
        return [texts], True
    if isinstance(texts, np.ndarray) and texts.ndim != 1:
        # A [2, 2] array is not four texts.
        raise UserInputError(
            f"bert_tf.pipeline: {name} must be a list of strings (one "
            f"dimension), got an array of shape {texts.shape}"
        )
    if isinstance(texts, (list, tuple, np.ndarray)):
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                # str(b"a") is "b'a'", str(None) is "None": not the text meant.
                raise UserInputError(
                    f"bert_tf.pipeline: {name}[{i}] is {type(text).__name__} "
                    f"{text!r:.40}, not a string"
                )
        return [str(t) for t in texts], False
    raise UserInputError(
        f"bert_tf.pipeline: {name} must be a string or a list of strings, "
        f"got {type(texts).__name__}"
    )


def classification_results(outputs):
    """A classifier export's outputs as `[{"label", "score"}]` (`[{"score"}]`
    for regression's `predictions`)."""
    if "predictions" in outputs:
        return [{"score": float(v)} for v in outputs["predictions"]]
    return [
        {"label": label.decode("utf-8"), "score": float(p.max())}
        for label, p in zip(outputs["labels"], outputs["probabilities"], strict=True)
    ]


def entities_of(outputs, texts):
    """The tagger outputs of a batch as lists of entity dicts, one list per
    text (Hugging Face's aggregated token-classification form)."""
    rows = []
    for i, text in enumerate(texts):
        entities = []
        for j in range(int(outputs["num_entities"][i])):
            start = char_offset(text, outputs["entity_start"][i, j])
            end = char_offset(text, outputs["entity_end"][i, j])
            entities.append(
                {
                    "entity_group": outputs["entity_type"][i, j].decode("utf-8"),
                    "score": float(outputs["entity_score"][i, j]),
                    "word": text[start:end],
                    "start": start,
                    "end": end,
                }
            )
        rows.append(entities)
    return rows


def answers_of(outputs, contexts):
    """The span outputs of a batch as `{answer, score, start, end}` dicts."""
    rows = []
    for i, context in enumerate(contexts):
        found = int(outputs["answer_start"][i]) >= 0
        rows.append(
            {
                "answer": outputs["answer_text"][i].decode("utf-8"),
                "score": float(outputs["answer_probability"][i]),
                "start": char_offset(context, outputs["answer_start"][i])
                if found
                else -1,
                "end": char_offset(context, outputs["answer_end"][i]) if found else -1,
            }
        )
    return rows


class TextPipeline:
    """Answers one task on raw text with a model from a directory; made by
    `bert_tf.pipeline`. Call it as Hugging Face's pipeline of the same task:

    * text-classification: `p(texts, text_pair=None)` -> `[{"label", "score"}]`
      (one per text; `{"score"}` for a regression model);
    * token-classification / ner: `p(texts)` -> per text a list of
      `{"entity_group", "score", "word", "start", "end"}` (character
      offsets, end exclusive; entities read from IOB2 tags as conlleval);
    * question-answering: `p(question=..., context=...)` ->
      `{"answer", "score", "start", "end"}` (run_squad's answer text, its
      n-best probability, character offsets in the context; -1 and "" when
      there is no answer); one context may serve a list of questions;
    * sentence-embedding: `p(texts)` -> float32 numpy [n, dim].

    A single string gives one result (for text-classification, a list of
    one dict, as Hugging Face); a list gives a list (an array for
    embeddings).

    Args:
        task: the task name it was made for.
        source: a `CheckpointSource`, `SavedModelSource` or `LiteRTSource`.
        batch_size: texts per forward pass.

    Example:
    >>> ner = bert_tf.pipeline("ner", "/tmp/wnut_output")
    >>> ner("Ada Lovelace lived in London.")
    [{'entity_group': 'person', 'score': 0.91, 'word': 'Ada Lovelace', ...}]
    """

    def __init__(self, task, source, batch_size=32):
        self.task = task
        self.source = source
        self.family = source.family
        self.batch_size = checked_batch_size(batch_size)

    def __repr__(self):
        return f"TextPipeline({self.task!r}, {self.source.path!r})"

    def _batches(self, count):
        for start in range(0, count, self.batch_size):
            yield slice(start, start + self.batch_size)

    def __call__(self, *args, **kwargs):
        if self.family == "span":
            return self.answer(*args, **kwargs)
        return {
            "classifier": self.classify,
            "tagger": self.tag,
            "embedding": self.embed,
        }[self.family](*args, **kwargs)

    def classify(self, texts, text_pair=None):
        texts, _ = _as_list(texts, "texts")
        if text_pair is not None:
            text_pair, _ = _as_list(text_pair, "text_pair")
            if len(text_pair) != len(texts):
                raise UserInputError(
                    f"bert_tf.pipeline: {len(texts)} texts but "
                    f"{len(text_pair)} text_pair entries"
                )
        pairs = self.source.text_pair
        if pairs is not None and pairs != (text_pair is not None):
            raise UserInputError(
                f"bert_tf.pipeline: {self.source.path} classifies "
                + (
                    "sentence pairs: pass text_pair=[...]"
                    if pairs
                    else "single sentences: text_pair is not taken"
                )
            )
        results = []
        for rows in self._batches(len(texts)):
            second = None if text_pair is None else text_pair[rows]
            results.extend(self.source.classify(texts[rows], second))
        return results

    def tag(self, texts):
        texts, single = _as_list(texts, "texts")
        results = []
        for rows in self._batches(len(texts)):
            results.extend(entities_of(self.source.tag(texts[rows]), texts[rows]))
        return results[0] if single else results

    def answer(self, question, context):
        questions, single = _as_list(question, "question")
        contexts, one_context = _as_list(context, "context")
        if one_context:
            contexts = contexts * len(questions)
        elif single:
            questions = questions * len(contexts)
            single = False
        if len(questions) != len(contexts):
            raise UserInputError(
                f"bert_tf.pipeline: {len(questions)} questions but "
                f"{len(contexts)} contexts"
            )
        results = []
        for rows in self._batches(len(questions)):
            outputs = self.source.answer(questions[rows], contexts[rows])
            results.extend(answers_of(outputs, contexts[rows]))
        return results[0] if single else results

    def embed(self, texts):
        texts, single = _as_list(texts, "texts")
        parts = [
            np.asarray(self.source.embed(texts[rows]), np.float32)
            for rows in self._batches(len(texts))
        ]
        if not parts:
            # No texts: no rows, of the model's width (as `encode([])`), read
            # from one empty text's vector.
            return np.asarray(self.source.embed([""]), np.float32)[:0]
        embeddings = np.concatenate(parts)
        return embeddings[0] if single else embeddings
