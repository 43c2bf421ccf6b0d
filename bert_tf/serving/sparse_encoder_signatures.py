"""`SparseEncoderSignatures`: the SavedModel signatures of a `BertSparseEncoder`."""

import tensorflow as tf

from bert_tf.errors import UserInputError
from bert_tf.serving.litert_prompt import litert_prompt_ids
from bert_tf.serving.litert_prompt import with_prompt_ids
from bert_tf.serving.signature_module import WARMUP_TEXTS
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text.preprocessing import request_batch

# Vocabulary entries a request gets back per text when --top_k is left out:
# SPLADE documents rarely have more non-zero weights (queries far fewer).
DEFAULT_TOP_K = 256
# The signatures besides serving_default, by the task whose route and
# prompt they encode with (sentence-transformers' encode_query/_document).
TASK_SIGNATURES = {"query": "query", "document": "document"}


def checked_top_k(top_k):
    """`top_k` as an int >= 1; a `UserInputError` naming top_k otherwise."""
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise UserInputError(
            f"top_k={top_k!r}: must be a positive integer (vocabulary entries "
            "returned per text)",
            argument="top_k",
        )
    return top_k


class SparseEncoderSignatures(SignatureModule):
    """Each text's largest SPLADE weights, with their vocabulary tokens.

    * `serving_default`: `text` [B] strings -> `token_ids` [B, k] int32,
      `weights` [B, k] float32 (descending; the non-zero entries of the
      vocabulary-wide vector, then 0 with token id -1), `tokens` [B, k]
      string (the vocabulary's, "" past the non-zero ones) and
      `num_nonzero` [B] int32 (the vector's non-zero count, which may pass
      k) — what `encode` gives, cut to its top k;
    * `query`, `document`: the same by `encode_query`'s / `encode_document`'s
      prompt and route (an inference-free model's query route is its static
      token weights: no network runs); left out when the model has no
      route for the task;
    * `serve_tokenized`: the encoder's int32 inputs -> the same outputs of
      the SPLADE network.

    k is `top_k` (at most the vocabulary's size). The model's
    `max_active_dims`, if set, applies first, as in `encode`.

    Args:
        model: a `BertSparseEncoder`.
        preprocessor: its `BertPreprocessor` (the SPLADE route's tokenizer).
        top_k: entries returned per text (default `DEFAULT_TOP_K`).

    Example:
    >>> module = SparseEncoderSignatures(splade, preprocessor, top_k=64)
    >>> sorted(module.endpoints())
    ['document', 'query', 'serve_tokenized', 'serving_default']
    """

    family = "sparse_encoder"

    def __init__(self, model, preprocessor, top_k=None):
        super().__init__(model, preprocessor)
        top_k = DEFAULT_TOP_K if top_k is None else checked_top_k(top_k)
        self.top_k = min(top_k, model.vocab_size)
        tokens = model.vocabulary()[: model.vocab_size]
        # Ids past a short vocab.txt still name a weight: "" reads as none.
        self._tokens = tokens + [""] * (model.vocab_size - len(tokens))

    def trackables(self):
        # An inference-free model's query tokenizer has its own tables.
        query = self.model.query_preprocessor
        return [query] if query is not None else []

    # --- outputs ---------------------------------------------------------------

    def top_weights(self, weights):
        """`token_ids`, `weights` [B, k] and `num_nonzero` [B] of
        vocabulary-wide `weights` [B, V]: the non-zero entries by
        descending weight (ties: the lower id first, as `token_weights`),
        then token id -1 and weight 0."""
        weights = tf.cast(weights, tf.float32)
        nonzero = tf.not_equal(weights, 0.0)
        # Zeros sort after every non-zero weight, negative ones included.
        key = tf.where(nonzero, weights, tf.constant(-float("inf")))
        values, ids = tf.math.top_k(key, self.top_k)
        real = tf.math.is_finite(values)
        return {
            "token_ids": tf.where(real, ids, -1),
            "weights": tf.where(real, values, 0.0),
            "num_nonzero": tf.reduce_sum(tf.cast(nonzero, tf.int32), axis=-1),
        }

    def _with_tokens(self, outputs):
        vocabulary = tf.constant(self._tokens)
        ids = outputs["token_ids"]
        tokens = tf.gather(vocabulary, tf.maximum(ids, 0))
        return {**outputs, "tokens": tf.where(ids >= 0, tokens, "")}

    def _max_active(self, weights):
        from bert_tf.models.bert_sparse_encoder import keep_top_weights

        if self.model.max_active_dims:
            return keep_top_weights(weights, self.model.max_active_dims)
        return weights

    # --- the text signatures -----------------------------------------------------

    def task_prompt(self, task):
        """The prompt `encode` (task None), `encode_query` or
        `encode_document` prepends."""
        if task is None:
            return self.model.resolve_prompt()
        return self.model.resolve_prompt(None, self.model.task_prompt_name(task))

    def tasks(self):
        """{signature name: task} of the signatures besides serving_default
        that the model has a route for."""
        return {
            name: task
            for name, task in TASK_SIGNATURES.items()
            if self.model.routes.get(task) is not None
        }

    def _text_endpoint(self, task):
        prompt = self.task_prompt(task)

        def serve_text(text):
            # A [2, 2] request is not 4 texts.
            text = request_batch(text, "text")
            weights = self.model.embed_strings(
                text, prompt, task, preprocessor=self.preprocessor
            )
            return self._with_tokens(self.top_weights(weights))

        return serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def text_endpoint(self):
        return self._text_endpoint(None)

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        inputs = model_inputs(input_ids, input_mask, segment_ids)
        weights = self._max_active(self.model(inputs, training=False))
        return self._with_tokens(self.top_weights(weights))

    def tokenize_for_warmup(self, inputs):
        return self.preprocessor(inputs["text"])

    def endpoints(self):
        return {
            **super().endpoints(),
            **{name: self._text_endpoint(task) for name, task in self.tasks().items()},
        }

    def warmup_requests(self, texts=WARMUP_TEXTS):
        raw = {"text": tf.constant(list(texts))}
        return [*super().warmup_requests(texts), *((n, raw) for n in self.tasks())]

    def metadata(self):
        return {
            **super().metadata(),
            "top_k": self.top_k,
            "vocab_size": int(self.model.vocab_size),
            "pooling_strategy": self.model.pooling_strategy,
            "activation_function": self.model.activation_function,
            "routes": dict(self.model.routes),
            "prompts": {
                name: self.task_prompt(task)
                for name, task in {"serving_default": None, **self.tasks()}.items()
            },
            "max_active_dims": self.model.max_active_dims,
            "similarity_fn_name": self.model.similarity_fn_name or "dot",
        }

    # --- LiteRT ----------------------------------------------------------------

    def litert_text_endpoint(self):
        """`serving_default` over a `LiteRTPreprocessor`: `text` [B] ->
        `token_ids`, `weights` [B, k], `num_nonzero` [B] (no `tokens`: the
        vocabulary is the file's metadata's). The SPLADE route only: a
        ValueError for a model whose default route is the static one."""
        return self._litert_endpoint(None)

    def _litert_endpoint(self, task):
        if self.model.route(task) != "splade":
            raise ValueError(
                f"the model's {task or 'default'} route is "
                f"{self.model.route(task)!r}: the LiteRT export runs the SPLADE "
                "network only (export a SavedModel)"
            )
        prompt_ids = litert_prompt_ids(self.preprocessor, self.task_prompt(task))

        def serve_text(text):
            ids, lengths = with_prompt_ids(self.preprocessor.tokenize(text), prompt_ids)
            inputs = self.preprocessor.pack([(ids, lengths)])[0]
            weights = self._max_active(self.model(inputs, training=False))
            return self.top_weights(weights)

        return serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def _litert_aliases(self):
        """{signature: "serving_default"} of the SPLADE-route tasks that
        encode as `serving_default` does (same route and prompt): the
        converter keeps one of two identical functions, so the file has
        `serving_default` alone for them."""
        same = (self.model.route(None), self.task_prompt(None))
        return {
            name: "serving_default"
            for name, task in self.tasks().items()
            if (self.model.routes[task], self.task_prompt(task)) == same
        }

    def litert_extra_signatures(self):
        """A LiteRT file's `query`/`document` signatures where the model
        encodes them by the SPLADE network, differently from
        `serving_default` (a static query route is the SavedModel's)."""
        aliases = self._litert_aliases()
        return {
            name: self._litert_endpoint(task)
            for name, task in self.tasks().items()
            if self.model.routes.get(task) == "splade" and name not in aliases
        }

    def litert_serve_tokenized(self, input_ids, input_mask, segment_ids):
        """A LiteRT file's `serve_tokenized`: `serve_tokenized` without
        `tokens` (string outputs are the SavedModel's)."""
        inputs = model_inputs(input_ids, input_mask, segment_ids)
        return self.top_weights(self._max_active(self.model(inputs, training=False)))

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata (`aliases`: the
        signatures `serving_default` answers for)."""
        return {
            "top_k": self.top_k,
            "vocab_size": int(self.model.vocab_size),
            "aliases": self._litert_aliases(),
        }
