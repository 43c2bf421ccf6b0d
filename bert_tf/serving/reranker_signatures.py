"""`RerankerSignatures`: the SavedModel signatures of a `BertReranker`."""

import tensorflow as tf

from bert_tf.serving.signature_module import WARMUP_TEXTS
from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text.preprocessing import request_batch

# The score of a padding passage (""): below any real score, and finite so
# that a REST (JSON) response can carry it.
PADDING_SCORE = float(tf.float32.min)


class RerankerSignatures(SignatureModule):
    """Scores and orders candidate passages for each query.

    * `serving_default`: `query` [B] and `passages` [B, N] strings →
      `scores` [B, N] float32 (what `CrossEncoder.predict` gives: the
      model's activation of the logit), `logits` [B, N] float32 and
      `ranking` [B, N] int32 (passage indices by descending score, ties in
      index order). Empty strings pad shorter candidate lists: they are not
      scored, get the lowest float32 as score and logit, and rank last. The
      B×N real pairs are scored in one batch, padded to the longest pair.
    * `serve_tokenized`: packed pairs [P, L] → `scores`, `logits` [P].
    * a LiteRT file's `serving_default` (`litert_text_endpoint`): flat
      pairs, `query` [P] and `passage` [P] → `scores`, `logits` [P].

    Args:
        model: a `BertReranker`.
        preprocessor: its `BertPreprocessor` (`seq_length` = longest pair).

    Example:
    >>> module = RerankerSignatures(reranker, preprocessor)
    >>> serve, specs = module.text_endpoint()
    >>> serve(tf.constant(["who?"]), tf.constant([["Ann did.", ""]]))["ranking"]
    [[0, 1]]
    """

    family = "reranker"

    def _scores(self, logits):
        logits = tf.cast(logits, tf.float32)
        if self.model.activation == "sigmoid":
            return tf.sigmoid(logits)
        return logits

    def text_endpoint(self):
        specs = [
            tf.TensorSpec([None], tf.string, "query"),
            tf.TensorSpec([None, None], tf.string, "passages"),
        ]

        def serve_text(query, passages):
            # A [2, 2] query is not 4 queries, nor a [B] passages B lists.
            query = request_batch(query, "query")
            passages = tf.ensure_shape(
                passages, [None, None], name="passages_must_be_a_batch_of_lists"
            )
            shape = tf.shape(passages, out_type=tf.int64)
            check = tf.debugging.assert_equal(
                tf.shape(query, out_type=tf.int64)[0],
                shape[0],
                message="query and passages must have as many rows (one query "
                "per row of passages)",
            )
            with tf.control_dependencies([check]):
                flat = tf.reshape(passages, [-1])
            # Only real pairs are tokenized and scored; padding stays out of
            # the batch (and of its padded length).
            real = tf.where(tf.not_equal(flat, ""))
            rows = real[:, 0] // tf.maximum(shape[1], 1)

            def score_real_pairs():
                pairs = self.preprocessor(
                    (tf.gather(query, rows), tf.gather(flat, real[:, 0]))
                )
                return tf.cast(self.model(pairs, training=False), tf.float32)

            # A request of padding only has nothing to run the model on.
            logits = tf.cond(
                tf.size(rows) > 0, score_real_pairs, lambda: tf.zeros([0], tf.float32)
            )
            padded = tf.fill(tf.shape(flat, out_type=tf.int64), PADDING_SCORE)
            all_logits = tf.tensor_scatter_nd_update(padded, real, logits)
            all_scores = tf.tensor_scatter_nd_update(padded, real, self._scores(logits))
            scores = tf.reshape(all_scores, shape)
            return {
                "scores": scores,
                "logits": tf.reshape(all_logits, shape),
                "ranking": tf.argsort(
                    scores, axis=-1, direction="DESCENDING", stable=True
                ),
            }

        return serve_text, specs

    def _pair_outputs(self, inputs):
        """`scores` and `logits` [P] of packed pairs `inputs`."""
        logits = tf.cast(self.model(inputs, training=False), tf.float32)
        return {"scores": self._scores(logits), "logits": logits}

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        return self._pair_outputs(model_inputs(input_ids, input_mask, segment_ids))

    def litert_text_endpoint(self):
        """A LiteRT file's `serving_default` over a `LiteRTPreprocessor`:
        `query` [P] and `passage` [P] strings, one pair per row → `scores`
        [P] float32 (as `CrossEncoder.predict`: the activation of the logit)
        and `logits` [P]. Flat pairs, not the SavedModel's [B, N] padded
        candidate lists: LiteRT's converter and runtime handle plain [P]
        string vectors best (no string comparisons, scatters or a data-
        dependent branch over padding); `LiteRTModel.rank` gives one query's
        candidates as pairs and orders them."""
        specs = [
            tf.TensorSpec([None], tf.string, "query"),
            tf.TensorSpec([None], tf.string, "passage"),
        ]

        def serve_text(query, passage):
            return self._pair_outputs(self.preprocessor.pack_texts((query, passage)))

        return serve_text, specs

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata: the activation
        (`scores` = sigmoid of `logits`, or the logits: "linear")."""
        return {"activation": self.model.activation}

    def _warmup_text(self, texts):
        texts = list(texts)
        return {
            "query": tf.constant(texts),
            "passages": tf.constant([[t, ""] + texts for t in texts]),
        }

    def tokenize_for_warmup(self, inputs):
        passages = inputs["passages"]
        queries = tf.repeat(inputs["query"], tf.shape(passages)[1])
        return self.preprocessor((queries, tf.reshape(passages, [-1])))

    def warmup_requests(self, texts=WARMUP_TEXTS):
        raw = self._warmup_text(texts)
        return [
            ("serving_default", raw),
            ("serve_tokenized", self.tokenize_for_warmup(raw)),
        ]

    def metadata(self):
        return {**super().metadata(), "activation": self.model.activation}
