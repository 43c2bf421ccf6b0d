"""`BertReranker`: a cross-encoder that scores (query, passage) pairs."""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.cross_encoder_checkpoint import ACTIVATIONS
from bert_tf.checkpoints.cross_encoder_checkpoint import read_cross_encoder
from bert_tf.checkpoints.cross_encoder_checkpoint import save_cross_encoder
from bert_tf.checkpoints.loading import check_vocab_matches_config
from bert_tf.checkpoints.loading import checkpoint_vocabulary
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.checkpoints.name_map import is_ignored
from bert_tf.errors import UserInputError
from bert_tf.models.bert_classifier import BertClassifier
from bert_tf.models.text_task import BertTextTask
from bert_tf.text.preprocessing import BertPreprocessor

# CrossEncoder.predict's default batch size.
DEFAULT_BATCH_SIZE = 32
# Up to this many batches, `predict` runs eagerly instead of tracing a graph.
_EAGER_BATCHES = 4


def _sigmoid(x):
    # float64, then float32: exact to the last float32 bit for any logit.
    return (1.0 / (1.0 + np.exp(-np.asarray(x, np.float64)))).astype(np.float32)


def _is_pair(value):
    return (
        isinstance(value, (tuple, list))
        and len(value) == 2
        and all(isinstance(v, str) for v in value)
    )


def pair_columns(pairs):
    """`(queries, passages)` of `pairs`: a list (or tuple, or array) of
    (query, passage) pairs as `CrossEncoder.predict` takes them, or a tuple
    of two columns (lists or arrays of strings, not pairs).

    Raises:
        ValueError: a row that is not a pair.
        TypeError: a query or passage that is not a str (bytes, None, ...).
    """
    columns = (
        isinstance(pairs, tuple)
        and len(pairs) == 2
        and not any(_is_pair(column) for column in pairs)
        and all(isinstance(c, (list, np.ndarray)) for c in pairs)
    )
    if columns:
        queries, passages = list(pairs[0]), list(pairs[1])
    else:
        rows = [tuple(pair) for pair in pairs]
        if any(len(row) != 2 for row in rows):
            raise ValueError("pairs must be (query, passage) pairs")
        queries, passages = [r[0] for r in rows], [r[1] for r in rows]
    for name, column in (("query", queries), ("passage", passages)):
        for index, text in enumerate(column):
            if not isinstance(text, (str, np.str_)):
                raise TypeError(
                    f"pairs[{index}]: the {name} is {type(text).__name__}, not str"
                )
    return [str(q) for q in queries], [str(p) for p in passages]


def check_batch_size(batch_size):
    """Raises TypeError/ValueError naming `batch_size` unless a positive int."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")


@keras.saving.register_keras_serializable(package="bert_tf")
class BertReranker(BertTextTask, BertClassifier):
    """A cross-encoder: reads a query and a passage jointly and scores how well
    the passage answers the query (the second stage of a search system, after
    a dual encoder has found candidates).

    The network is `BertClassifier`'s with one label ([CLS] → pooler →
    dropout → one logit), i.e. Hugging Face's `BertForSequenceClassification`
    with `num_labels=1`, which is what sentence-transformers' `CrossEncoder`
    runs. The Keras model maps the int32 encoder inputs (or raw pairs) to the
    logit [batch] float32, so `fit` trains it with binary cross-entropy on
    0/1 relevance labels (`compile()` defaults to that). `predict` gives
    scores as `CrossEncoder.predict` does: `activation` applied to the logit
    (sigmoid, or "linear" for raw logits); `predict_logits` gives the logits.

    `from_checkpoint` reads a `CrossEncoder` / one-label
    `BertForSequenceClassification` directory with its tokenizer settings
    (lower-casing, longest input, activation), or one of our checkpoints;
    `save_cross_encoder` writes a directory `CrossEncoder` loads. A `.keras`
    file carries the vocabulary.

    Pairs are packed `[CLS] query [SEP] passage [SEP]`; a pair longer than
    the preprocessor's `seq_length` loses tokens from the end of the longer
    segment (the original BERT rule; Hugging Face's fast tokenizer splits
    differently only when both segments exceed half the length, never for a
    short query).

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        preprocessor: `BertPreprocessor` over the encoder's vocabulary
            (`padding="longest"` is best: each batch is padded to its longest
            pair).
        activation: "sigmoid" (CrossEncoder's default for one label) or
            "linear": what `predict` applies to the logit.
        dropout_rate: float. Dropout on the pooled output.
        initializer_range: float. Stddev of the head's initializer.
        dtype: optional dtype policy (e.g. "mixed_bfloat16") for every layer.

    Example:
    >>> reranker = bert_tf.BertReranker.from_checkpoint("ms-marco-MiniLM-L-6-v2")
    >>> reranker.predict([("who wrote it?", "It was written by Ann."),
    ...                   ("who wrote it?", "The sky is blue.")])
    array([0.98, 0.01], dtype=float32)
    >>> reranker.rank("who wrote it?", ["The sky is blue.", "Ann wrote it."])
    [{'corpus_id': 1, 'score': 0.98}, {'corpus_id': 0, 'score': 0.01}]
    """

    default_name = "bert_reranker"

    def __init__(self, encoder, preprocessor=None, activation="sigmoid", **kwargs):
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {ACTIVATIONS}, got {activation!r}"
            )
        kwargs.pop("num_labels", None)  # always one
        # dropout_rate and initializer_range go on to BertClassifier.
        super().__init__(encoder, 1, preprocessor, **kwargs)
        self.activation = activation

    @staticmethod
    def outputs_from_logits(logits):
        return keras.ops.squeeze(logits, axis=-1)

    def task_arguments(self):
        return {
            "activation": self.activation,
            "dropout_rate": self.dropout_rate,
            "initializer_range": self.initializer_range,
        }

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """`BertTextTask.compile`; `loss="auto"` is binary cross-entropy on
        the logit (labels 0/1, or graded relevance in [0, 1])."""
        if isinstance(loss, str) and loss == "auto":
            loss = "binary_crossentropy"
        super().compile(optimizer, loss, metrics=metrics, **kwargs)

    def score_strings(self, queries, passages):
        """Logits [batch] float32 of string tensors `queries`, `passages`
        [batch], in the graph (tokenized by the preprocessor)."""
        inputs = self.preprocessor((queries, passages))
        return tf.cast(self(inputs, training=False), tf.float32)

    def predict_logits(self, pairs, batch_size=DEFAULT_BATCH_SIZE, progress=None):
        """The logits [len(pairs)] float32 of (query, passage) `pairs`.

        As `CrossEncoder.predict`: pairs are sorted by length (longest
        first), cut into batches of `batch_size`, and each batch is padded to
        its own longest pair.

        Args:
            pairs: (query, passage) pairs, or a tuple of two columns.
            batch_size: int. Pairs per forward pass.
            progress: optional callable(done, total) called after each batch.
        """
        check_batch_size(batch_size)
        queries, passages = pair_columns(pairs)
        if len(queries) != len(passages):
            raise ValueError(f"{len(queries)} queries but {len(passages)} passages")
        num_batches = -(-len(queries) // batch_size)
        score = getattr(self, "_score_function", None)
        if score is None and num_batches <= _EAGER_BATCHES:
            # Tracing the tokenizer's graph costs ~10 s on a busy CPU, more
            # than a few batches take eagerly.
            score = self.score_strings
        elif score is None:
            # One trace for every batch: the batch and length dims are None.
            score = self._score_function = tf.function(
                self.score_strings,
                input_signature=[tf.TensorSpec([None], tf.string)] * 2,
            )
        logits = np.zeros(len(queries), np.float32)
        order = np.argsort(
            [-(len(q) + len(p)) for q, p in zip(queries, passages, strict=True)],
            kind="stable",
        )
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            logits[rows] = score(
                tf.constant([queries[i] for i in rows]),
                tf.constant([passages[i] for i in rows]),
            ).numpy()
            if progress is not None:
                progress(min(start + batch_size, len(order)), len(order))
        return logits

    def predict(
        self,
        pairs,
        batch_size=DEFAULT_BATCH_SIZE,
        show_progress_bar=None,
        convert_to_tensor=False,
        progress=None,
    ):
        """Scores [len(pairs)] float32 as `CrossEncoder.predict` gives them:
        `activation` of the logit.

        Args:
            pairs: (query, passage) pairs (a list, or a tuple of pairs), one
                pair (returns one score), or a tuple of two columns.
            batch_size: int > 0. Pairs per forward pass.
            show_progress_bar: bool. A progress bar on stderr.
            convert_to_tensor: a tf.Tensor instead of numpy.
            progress: optional callable(done, total) called after each batch.

        Raises:
            ValueError: `batch_size` not positive; a row not a pair.
            TypeError: a query or passage that is not a str.
        """
        single = _is_pair(pairs)
        if single:
            pairs = [pairs]
        bar = None
        if show_progress_bar:
            bar = keras.utils.Progbar(len(pairs), unit_name="pair")

        def report(done, total):
            if bar is not None:
                bar.update(done)
            if progress is not None:
                progress(done, total)

        logits = self.predict_logits(pairs, batch_size, report)
        scores = _sigmoid(logits) if self.activation == "sigmoid" else logits
        if single:
            scores = scores[0]
        return tf.constant(scores) if convert_to_tensor else scores

    def rank(
        self,
        query,
        documents,
        top_k=None,
        return_documents=False,
        batch_size=DEFAULT_BATCH_SIZE,
        show_progress_bar=None,
    ):
        """`documents` ordered by their score for `query`, best first, as
        `CrossEncoder.rank`: `[{"corpus_id": index, "score": score}]` (and
        `"text"` with `return_documents`); the first `top_k` only, when given.

        Raises:
            ValueError: `top_k` not None or a positive int; `batch_size`.
            TypeError: a query or document that is not a str.
        """
        if top_k is not None and (
            isinstance(top_k, bool) or not isinstance(top_k, int) or top_k <= 0
        ):
            raise ValueError(f"top_k must be None or a positive int, got {top_k!r}")
        if not isinstance(query, str):
            raise TypeError(f"query is {type(query).__name__}, not str")
        documents = list(documents)
        scores = self.predict(
            ([query] * len(documents), documents),
            batch_size,
            show_progress_bar=show_progress_bar,
        )
        order = np.argsort(-scores, kind="stable")[:top_k]
        results = [{"corpus_id": int(i), "score": float(scores[i])} for i in order]
        if return_documents:
            for result in results:
                result["text"] = documents[result["corpus_id"]]
        return results

    def rerank(self, query, passages, top_k=None, batch_size=DEFAULT_BATCH_SIZE):
        """`rank` (the name this project used first)."""
        return self.rank(query, passages, top_k=top_k, batch_size=batch_size)

    @classmethod
    def from_checkpoint(
        cls,
        path,
        config=None,
        vocab_file=None,
        do_lower_case=None,
        seq_length=None,
        new_head=False,
        **kwargs,
    ):
        """A re-ranker from a cross-encoder directory or one of our checkpoints.

        Loading is strict: every variable comes from the checkpoint and every
        entry of it is used, so a model that is not a one-label cross-encoder
        is an error, not random scores.

        Args:
            path: a `CrossEncoder` / `BertForSequenceClassification` directory
                (one label), a checkpoint prefix or directory (ours, Google's),
                or with `new_head=True` any BERT checkpoint.
            config: optional `BertConfig` (or its file) instead of the one found.
            vocab_file, do_lower_case: the tokenization; default: what the
                directory's files say (else lower-cased).
            seq_length: longest packed pair; default: the directory's
                (sentence_bert_config.json, else tokenizer_config.json's
                `model_max_length`), capped at `max_position_embeddings`.
            new_head: start a fresh score head on an encoder checkpoint (to
                train one); entries of the checkpoint outside the encoder
                (pre-training heads) are then ignored.
            **kwargs: `activation` (default: the directory's, else sigmoid),
                `dropout_rate`, `dtype`, `name`.

        Raises:
            UserInputError: the checkpoint has no score head (without
                `new_head`), unused entries, more than one label, or an
                activation other than sigmoid/identity.
        """
        files = read_cross_encoder(path, new_head=new_head)
        checkpoint = files.checkpoint
        config = checkpoint.load_config(config)
        vocab_file, options = checkpoint_vocabulary(checkpoint, vocab_file, path)
        # Ids past the embedding table would fail on the first such text.
        check_vocab_matches_config(vocab_file, config)
        if do_lower_case is None:
            do_lower_case = files.do_lower_case is not False
        seq_length = min(
            seq_length or files.max_seq_length or config.max_position_embeddings,
            config.max_position_embeddings,
        )
        kwargs.setdefault("activation", files.activation or "sigmoid")
        preprocessor = BertPreprocessor(
            vocab_file, do_lower_case, seq_length, padding="longest", **options
        )
        model = cls(config, preprocessor=preprocessor, **kwargs)
        report = load_checkpoint(model, checkpoint)
        if not new_head:
            head = sorted(set(model.checkpoint_variables()) - set(report.loaded))
            unused = [n for n in report.unused if not is_ignored(n)]
            if head or unused:
                raise UserInputError(
                    f"{path} is not a one-label cross-encoder: "
                    + (f"it lacks {head}" if head else f"it has unused {unused[:5]}")
                    + " (new_head=True starts a score head on a BERT checkpoint)"
                )
        model.checkpoint_load_report = report
        return model

    def save_cross_encoder(self, directory):
        """Writes a `BertForSequenceClassification` directory (one label)
        that `sentence_transformers.CrossEncoder` loads; returns it."""
        return save_cross_encoder(self, directory)
