"""`EmbeddingSignatures`: the SavedModel signatures of a `BertSentenceEncoder`."""

import tensorflow as tf

from bert_tf.serving.signature_module import WARMUP_TEXTS
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import request_batch
from bert_tf.text.preprocessing import same_batch_size


def _unit(x):
    return x / tf.maximum(tf.norm(x, axis=-1, keepdims=True), 1e-12)


class EmbeddingSignatures(SignatureModule):
    """Sentence embeddings, and the cosine of sentence pairs.

    * `serving_default`: `text` [B] strings -> `embeddings` [B, D] float32
      (L2-normalised when the model normalises);
    * `similarity`: `text_a`, `text_b` [B] -> `cosine` [B];
    * `serve_tokenized`: the encoder's int32 inputs -> `embeddings`.

    Each request is padded to its own longest text (the exporter's
    `padding="longest"`). The text signatures embed as the model's `encode`
    does: its default prompt (`default_prompt_name`) prepended (and left out
    of pooling when `include_prompt` is False), its Dense and Normalize
    modules, cut to its `truncate_dim`.

    Args:
        model: a `BertSentenceEncoder`.
        preprocessor: its `BertPreprocessor`.

    Example:
    >>> EmbeddingSignatures(sentence_encoder, preprocessor).endpoints().keys()
    dict_keys(['serving_default', 'serve_tokenized', 'similarity'])
    """

    family = "embedding"

    def _embed(self, inputs, prompt_length=0):
        return {"embeddings": self.model.embed_inputs(inputs, prompt_length)}

    def _embed_text(self, text):
        prompt = self.model.resolve_prompt()
        if prompt:
            text = tf.strings.join([tf.fill(tf.shape(text), prompt), text])
        return self._embed(self.preprocessor(text), self.model.prompt_length(prompt))

    def text_endpoint(self):
        def serve_text(text):
            # A [2, 2] request is not 4 texts.
            return self._embed_text(request_batch(text, "text"))

        return serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def litert_text_endpoint(self):
        """`text_endpoint` over a `LiteRTPreprocessor` (a LiteRT file's).

        LiteRT has no StringJoin: the prompt's word pieces go before the
        text's, which equals tokenizing the joined string when the prompt
        ends at a word boundary (else a ValueError: export a SavedModel)."""
        prompt = self.model.resolve_prompt()
        prompt_ids = []
        if prompt:
            last = prompt[-1]
            if not (last.isspace() or tokenization._is_punctuation(last)):
                raise ValueError(
                    f"the model's default prompt {prompt!r} does not end with a "
                    "space or punctuation: the LiteRT export cannot prepend it "
                    "(export a SavedModel)"
                )
            tokenizer = tokenization.FullTokenizer(
                self.preprocessor.vocab_file, self.preprocessor.do_lower_case
            )
            prompt_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(prompt))

        def serve_text(text):
            ids, lengths, _, _ = self.preprocessor.tokenize(text)
            if prompt_ids:
                ids = tf.concat(
                    [
                        tf.tile(
                            tf.constant(prompt_ids, tf.int64)[None],
                            [tf.shape(ids)[0], 1],
                        ),
                        ids,
                    ],
                    axis=1,
                )
                lengths = lengths + len(prompt_ids)
            inputs = self.preprocessor.pack([(ids, lengths)])[0]
            return self._embed(inputs, self.model.prompt_length(prompt))

        return serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata."""
        return {"embedding_dim": int(self.model.embedding_dim)}

    def litert_extra_signatures(self):
        """A LiteRT file's `tokenize` signature: `serve_tokenized`'s inputs
        of `text`, padded to the longest row, so that `LiteRTModel.encode`
        sorts by word pieces and no batch pads past its longest sentence
        (sorting by characters padded STS-B's sentences by 36 %). None with
        a prompt: `serve_tokenized` pools every position, and a prompt left
        out of pooling needs `serving_default`."""
        if self.model.resolve_prompt():
            return {}

        def tokenize(text):
            ids, lengths, _, _ = self.preprocessor.tokenize(text)
            return self.preprocessor.pack([(ids, lengths)])[0]

        return {"tokenize": (tokenize, [tf.TensorSpec([None], tf.string, "text")])}

    def similarity_endpoint(self):
        """`(function, specs)` of the `similarity` signature."""

        def similarity(text_a, text_b):
            text_a, text_b = same_batch_size(
                [request_batch(text_a, "text_a"), request_batch(text_b, "text_b")],
                ("text_a", "text_b"),
            )
            # One pass over both columns (padded to the longest of all).
            both = self._embed_text(tf.concat([text_a, text_b], 0))
            first, second = tf.split(_unit(both["embeddings"]), 2, axis=0)
            return {"cosine": tf.reduce_sum(first * second, axis=-1)}

        specs = [tf.TensorSpec([None], tf.string, n) for n in ("text_a", "text_b")]
        return similarity, specs

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        return self._embed(model_inputs(input_ids, input_mask, segment_ids))

    def tokenize_for_warmup(self, inputs):
        return self.preprocessor(inputs["text"])

    def endpoints(self):
        return {**super().endpoints(), "similarity": self.similarity_endpoint()}

    def warmup_requests(self, texts=WARMUP_TEXTS):
        pair = {
            "text_a": tf.constant(list(texts)),
            "text_b": tf.constant(list(texts[::-1])),
        }
        return [*super().warmup_requests(texts), ("similarity", pair)]

    def metadata(self):
        return {
            **super().metadata(),
            "embedding_dim": int(self.model.embedding_dim),
            "pooling": "+".join(self.model.pooling),
            "normalize": bool(self.model.normalize),
            "prompt": self.model.resolve_prompt(),
            "truncate_dim": self.model.truncate_dim,
        }
