"""`MultiVectorSignatures`: the SavedModel signatures of a `BertMultiVectorEncoder`."""

import tensorflow as tf

from bert_tf.retrieval.max_sim import max_sim_pairwise
from bert_tf.serving.litert_prompt import litert_prompt_ids
from bert_tf.serving.litert_prompt import with_prompt_ids
from bert_tf.serving.signature_module import WARMUP_TEXTS
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text.preprocessing import request_batch
from bert_tf.text.preprocessing import same_batch_size

# Signature name -> the task it encodes (`encode_query`, `encode_document`).
TASK_SIGNATURES = {"query": "query", "document": "document"}


class MultiVectorSignatures(SignatureModule):
    """Per-token vectors of texts (ColBERT), and the MaxSim of pairs.

    * `serving_default`: `text` [B] strings -> `token_vectors` [B, L, D]
      float32 and `mask` [B, L] int32 (1 where a vector scores): `encode`
      without a task, padded to the request's longest text;
    * `query`, `document`: the same as `encode_query` / `encode_document`
      (the task's prompt and token budget, a query's [MASK] expansion, the
      skiplist): the scored vectors of text i are
      `token_vectors[i][mask[i] == 1]`, `encode`'s array;
    * `score`: `query` [B] and `document` [B] -> `scores` [B] float32, the
      MaxSim of query i with document i (divided by the query's scored
      tokens for "meanmaxsim"), as `similarity_pairwise` of the encodings;
    * `serve_tokenized`: the encoder's int32 inputs -> `token_vectors`,
      `mask` (no task: the document skiplist applies).

    Args:
        model: a `BertMultiVectorEncoder`.
        preprocessor: its `BertPreprocessor` (`padding="longest"`).

    Example:
    >>> module = MultiVectorSignatures(colbert, preprocessor)
    >>> sorted(module.endpoints())
    ['document', 'query', 'score', 'serve_tokenized', 'serving_default']
    """

    family = "multi_vector_encoder"

    def task_prompt(self, task):
        """The prompt `encode` (task None), `encode_query` or
        `encode_document` prepends."""
        if task is None:
            return self.model.resolve_prompt()
        return self.model.resolve_prompt(None, self.model.task_prompt_name(task))

    @staticmethod
    def _outputs(vectors, mask):
        return {"token_vectors": vectors, "mask": tf.cast(mask, tf.int32)}

    def _embed(self, text, task):
        return self.model.embed_strings(
            text, task, self.task_prompt(task), preprocessor=self.preprocessor
        )

    def _text_endpoint(self, task):
        def serve_text(text):
            # A [2, 2] request is not 4 texts.
            return self._outputs(*self._embed(request_batch(text, "text"), task))

        return serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def text_endpoint(self):
        return self._text_endpoint(None)

    def score_endpoint(self):
        """`(function, specs)` of the `score` signature."""

        def score(query, document):
            query, document = same_batch_size(
                [request_batch(query, "query"), request_batch(document, "document")],
                ("query", "document"),
            )
            q, q_mask = self._embed(query, "query")
            d, d_mask = self._embed(document, "document")
            length_normalize = self.model.similarity_fn_name == "meanmaxsim"
            return {"scores": max_sim_pairwise(q, q_mask, d, d_mask, length_normalize)}

        specs = [tf.TensorSpec([None], tf.string, n) for n in ("query", "document")]
        return score, specs

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        inputs = model_inputs(input_ids, input_mask, segment_ids)
        return self._outputs(*self.model.embed_inputs(inputs))

    def tokenize_for_warmup(self, inputs):
        return self.preprocessor(inputs["text"])

    def endpoints(self):
        return {
            **super().endpoints(),
            **{name: self._text_endpoint(t) for name, t in TASK_SIGNATURES.items()},
            "score": self.score_endpoint(),
        }

    def warmup_requests(self, texts=WARMUP_TEXTS):
        raw = {"text": tf.constant(list(texts))}
        pair = {
            "query": tf.constant(list(texts)),
            "document": tf.constant(list(texts[::-1])),
        }
        return [
            *super().warmup_requests(texts),
            *((name, raw) for name in TASK_SIGNATURES),
            ("score", pair),
        ]

    def metadata(self):
        model = self.model
        return {
            **super().metadata(),
            "embedding_dim": int(model.embedding_dim),
            "similarity_fn_name": model.similarity_fn_name or "maxsim",
            "prompts": {
                name: self.task_prompt(task)
                for name, task in {"serving_default": None, **TASK_SIGNATURES}.items()
            },
            "lengths": {
                name: int(model.task_length(task))
                for name, task in {"serving_default": None, **TASK_SIGNATURES}.items()
            },
            "query_expansion": model.query_expansion,
        }

    # --- LiteRT ----------------------------------------------------------------

    def _litert_endpoint(self, task):
        prompt_ids = litert_prompt_ids(self.preprocessor, self.task_prompt(task))
        budget = self.model.task_length(task) - 2

        def serve_text(text):
            ids, lengths = with_prompt_ids(self.preprocessor.tokenize(text), prompt_ids)
            kept = tf.minimum(lengths, budget)
            inputs = self.preprocessor.pack([(ids, lengths)], kept=[kept])[0]
            inputs, expanded = self.model.expand_inputs(inputs, task)
            return self._outputs(*self.model.embed_inputs(inputs, task, expanded))

        return serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def litert_text_endpoint(self):
        """`serving_default` over a `LiteRTPreprocessor` (a LiteRT file's):
        the SavedModel's outputs. A prompt must end at a word boundary
        (`litert_prompt_ids`)."""
        return self._litert_endpoint(None)

    def _encoding(self, task):
        """What decides `task`'s graph: prompt, token budget, expansion,
        skiplist, keep-only ids."""
        model = self.model
        return (
            self.task_prompt(task),
            model.task_length(task),
            task == "query" and model.query_expansion is not None,
            model.mask_module and (task or "document") in model.skiplist_tasks,
            model.mask_module and task != "query" and bool(model.keep_only_token_ids),
        )

    def _litert_aliases(self):
        """{signature: "serving_default"} of the tasks encoded exactly as
        `serving_default` (the converter keeps one of two identical
        functions: the file has `serving_default` alone for them)."""
        same = self._encoding(None)
        return {
            name: "serving_default"
            for name, task in TASK_SIGNATURES.items()
            if self._encoding(task) == same
        }

    def litert_extra_signatures(self):
        """A LiteRT file's `query` and `document` signatures, those that
        differ from `serving_default` (MaxSim is the caller's:
        `bert_tf.retrieval.max_sim` on their outputs)."""
        aliases = self._litert_aliases()
        return {
            name: self._litert_endpoint(task)
            for name, task in TASK_SIGNATURES.items()
            if name not in aliases
        }

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata (`aliases`: the
        signatures `serving_default` answers for)."""
        return {
            "embedding_dim": int(self.model.embedding_dim),
            "similarity_fn_name": self.model.similarity_fn_name or "maxsim",
            "aliases": self._litert_aliases(),
        }
