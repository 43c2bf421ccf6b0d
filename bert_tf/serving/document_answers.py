"""`DocumentAnswers`: run_squad.py's prediction over whole documents, as graph ops.

What the span SavedModel's `serving_default` computes, built only from core
TensorFlow ops and the tensorflow-text ops of `BertPreprocessor` (no Python
at serving time, so stock TF Serving runs it). For each (question, context)
it does what `run_squad.py --do_predict` does for one SQuAD question:

* windows: the question is cut to `max_query_length` word pieces; the
  context's word pieces are cut into windows of
  `seq_length - 3 - question length` pieces, each starting `doc_stride` pieces
  after the previous one (or right after it when a window is shorter than
  the stride), until a window reaches the end of the context;
* every window of every question in the request is scored in one batch;
* n-best: per window, the `n_best_size` highest start logits and end logits
  (over all of the window's positions, as the original) give candidate spans;
  a span counts when both ends are context positions of the window, the start
  position has its "max context" there (the window where
  min(left, right context) + 0.01 * window length is highest, the first on
  ties), the end is not before the start, and it has at most
  `max_answer_length` pieces. Candidates of all windows are ranked by
  start + end logit (ties: window, then start rank, then end rank, as the
  original's stable sort);
* SQuAD 2.0 (`version_2_with_negative`): the null score is the lowest
  [CLS] start + end logit over the windows; the answer is "" when it exceeds
  the best span's score by more than `null_score_diff_threshold`;
* answer text: the original's `get_final_text`. The span's word pieces map
  back to the characters they came from when lower-casing and accent
  stripping keep the number of characters of the words involved and no piece
  is [UNK]; otherwise to the whole whitespace-separated words. The text is
  those bytes of the context with each run of the original's whitespace
  (space, tab, CR, LF, U+202F) written as one space, exactly as
  `predictions.json` has it; `answer_start`/`answer_end` are the bytes' offsets
  in the context as the client sent it (as are `nbest_start`/`nbest_end` and
  `token_start`/`token_end`): NUL bytes and invalid UTF-8, which the
  tokenizer drops as the original does, count, so slicing the request's
  context there gives the answer (with those bytes, and the whitespace
  runs, as sent);
* the n-best list: distinct texts in rank order, at most `n_best_size`, with
  softmax probabilities over their scores (v2: the null answer is always in
  it), as `nbest_predictions.json`.

Differences from `run_squad.py`: where it found no candidate at all it
predicted the string "empty"; here the answer is "" with offsets -1. An
empty context gets one window (no candidate). `get_final_text` looks the
normalised prediction up with `str.find`, which finds the first occurrence
of that text among the answer's words; here it is the occurrence the span
points at. The two differ only when the same normalised text occurs earlier
in the span's first word with other case or accents ("Anna" -> "##a").
"""

import tensorflow as tf
import tensorflow_text as text

from bert_tf.serving.span_options import SpanOptions
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import WHITESPACE
from bert_tf.text.preprocessing import input_byte_map
from bert_tf.text.preprocessing import input_offsets
from bert_tf.text.preprocessing import normalize_words
from bert_tf.text.preprocessing import repair_utf8
from bert_tf.text.preprocessing import request_batch
from bert_tf.text.preprocessing import same_batch_size

# run_squad.py splits contexts into words at these characters only.
DOC_WHITESPACE = r"[ \t\r\n\x{202F}]+"
# How many ranked candidates are kept per question to fill the n-best list
# with distinct texts: several spans often map back to the same words.
CANDIDATES_PER_NBEST_ENTRY = 4
_NONE = -1


class DocumentAnswers:
    """Questions over whole documents with a `BertSpanLabeler`, in the graph.

    Args:
        model: a `BertSpanLabeler` (outputs `start_logits`, `end_logits`).
        preprocessor: the `BertPreprocessor` the model was trained with; its
            `seq_length` is the window length, its `padding` how the windows
            of a request are padded.
        options: a `SpanOptions` (run_squad.py's flags of the same names);
            default `SpanOptions()`.

    Example:
    >>> answers = DocumentAnswers(span_model, preprocessor, SpanOptions())
    >>> answers(tf.constant(["Who?"]), tf.constant(["A long text ..."]))
    {"answer_text": ..., "nbest_text": ..., ...}
    """

    def __init__(self, model, preprocessor, options=None):
        options = options or SpanOptions()
        options.check_seq_length(preprocessor.seq_length)
        self.model = model
        self.preprocessor = preprocessor
        vocab = tokenization.load_vocab(preprocessor.vocab_file)
        texts = [""] * (max(vocab.values()) + 1)
        for token, index in vocab.items():
            texts[index] = token
        self._piece_texts = tf.constant(texts)
        self.options = options

    @property
    def nbest_columns(self):
        """Columns of the n-best outputs (v2 may add the null answer)."""
        return self.options.nbest_columns

    # --- windows ------------------------------------------------------------

    def windows(self, question, context):
        """The model inputs of every window, and where everything is.

        `context` must already be UTF-8-repaired. Returns `(inputs, layout)`:
        `inputs` the packed windows [windows, length]; `layout` a dict of
        int64 tensors: per question `num_windows`, `step`, `max_doc`,
        `window_row_start` (its first window); per window `question`,
        `index`, `doc_start`, `doc_length`, `offset` (position of its first
        context piece); the context pieces as a ragged `context_ids`, with
        `token_start`/`token_end` byte offsets.
        """
        seq_length = self.preprocessor.seq_length
        question_ids = self.preprocessor.tokenize(question)
        context_ids, token_start, token_end = self.preprocessor.tokenize_with_offsets(
            context
        )
        query_length = tf.minimum(
            question_ids.row_lengths(), self.options.max_query_length
        )
        num_tokens = context_ids.row_lengths()
        max_doc = seq_length - 3 - query_length
        step = tf.minimum(max_doc, self.options.doc_stride)
        beyond_first = tf.maximum(num_tokens - max_doc, 0)
        num_windows = 1 + (beyond_first + step - 1) // step

        window_question = tf.repeat(
            tf.range(tf.size(num_windows, out_type=tf.int64)), num_windows
        )
        window_index = tf.ragged.range(num_windows).flat_values
        doc_start = window_index * tf.gather(step, window_question)
        doc_length = tf.maximum(
            tf.minimum(
                tf.gather(num_tokens, window_question) - doc_start,
                tf.gather(max_doc, window_question),
            ),
            0,
        )
        first = tf.gather(context_ids.row_starts(), window_question) + doc_start
        doc_ids = tf.gather(
            context_ids.flat_values, tf.ragged.range(first, first + doc_length)
        )
        window_query_length = tf.gather(query_length, window_question)
        inputs = self.preprocessor.pack(
            [tf.gather(question_ids, window_question), doc_ids],
            lengths=[window_query_length, doc_length],
        )
        layout = {
            "num_windows": num_windows,
            "step": step,
            "max_doc": max_doc,
            "window_row_start": tf.cumsum(num_windows, exclusive=True),
            "question": window_question,
            "index": window_index,
            "doc_start": doc_start,
            "doc_length": doc_length,
            "offset": window_query_length + 2,
            "context_ids": context_ids,
            "token_start": token_start,
            "token_end": token_end,
        }
        return inputs, layout

    def _within_max_context_bytes(self, context):
        """`context`, once checked to be within `max_context_bytes`."""
        limit = self.options.max_context_bytes
        longest = tf.reduce_max(
            tf.concat([tf.cast(tf.strings.length(context), tf.int64), [0]], 0)
        )
        check = tf.debugging.Assert(
            longest <= limit,
            [
                tf.strings.format(
                    "a context of {} bytes is longer than max_context_bytes="
                    f"{limit} of this span model (export_saved_model "
                    "--max_context_bytes): send it in parts",
                    longest,
                )
            ],
        )
        with tf.control_dependencies([check]):
            return tf.identity(context)

    def _within_max_windows(self, inputs, layout):
        """`inputs`, once checked to be at most `max_windows` windows."""
        limit = self.options.max_windows
        total = tf.reduce_sum(layout["num_windows"])
        check = tf.debugging.Assert(
            total <= limit,
            [
                tf.strings.format(
                    "the request's contexts make {} windows, more than "
                    f"max_windows={limit} of this span model (export_saved_model "
                    "--max_windows): send fewer or shorter contexts per request",
                    total,
                )
            ],
        )
        with tf.control_dependencies([check]):
            return {name: tf.identity(value) for name, value in inputs.items()}

    def max_context_window(self, layout):
        """Per context piece (flat over the batch): the window where it has
        the most context, as the original's `_check_is_max_context`."""
        context_ids = layout["context_ids"]
        token_question = context_ids.value_rowids()
        position = tf.range(
            tf.size(context_ids.flat_values, out_type=tf.int64)
        ) - tf.gather(context_ids.row_starts(), token_question)
        num_windows = tf.gather(layout["num_windows"], token_question)[:, None]
        step = tf.gather(layout["step"], token_question)[:, None]
        max_doc = tf.gather(layout["max_doc"], token_question)[:, None]
        num_tokens = tf.gather(context_ids.row_lengths(), token_question)[:, None]
        # A piece is in at most ceil(max_doc / step) + 1 windows, the last
        # one number position // step: only those are scored.
        reach = tf.reduce_max(
            tf.concat(
                [(layout["max_doc"] + layout["step"] - 1) // layout["step"], [0]], 0
            )
        )
        window = position[:, None] // step - tf.range(reach, -1, -1)[None, :]
        start = window * step
        length = tf.minimum(num_tokens - start, max_doc)
        position = position[:, None]
        inside = (window >= 0) & (window < num_windows) & (position >= start)
        inside &= position < start + length
        # min(left, right) + 0.01 * length, in float64 as the original's floats.
        score = tf.cast(
            tf.minimum(position - start, start + length - 1 - position), tf.float64
        ) + 0.01 * tf.cast(length, tf.float64)
        score = tf.where(inside, score, tf.constant(-1.0, tf.float64))
        best = tf.reduce_max(score, axis=1, keepdims=True)
        # The first window wins a tie.
        return tf.reduce_min(tf.where(score == best, window, tf.int64.max), axis=1)

    # --- answers ------------------------------------------------------------

    def __call__(self, question, context):
        question, context = same_batch_size(
            [request_batch(question, "question"), request_batch(context, "context")],
            ("question", "context"),
        )
        context = self._within_max_context_bytes(context)
        # An empty request is answered as one of an empty question and
        # context, whose answers are then dropped: the same outputs, 0 rows.
        rows = tf.size(question)
        keep = tf.maximum(rows, 1)
        question = tf.concat([question, [""]], 0)[:keep]
        context = tf.concat([context, [""]], 0)[:keep]
        outputs = self._answers(question, context)
        return {name: value[:rows] for name, value in outputs.items()}

    def _answers(self, question, context):
        # Answers are cut from the repaired context; their offsets are then
        # moved to the bytes the client sent.
        byte_map = input_byte_map(context)
        context = repair_utf8(context)
        inputs, layout = self.windows(question, context)
        inputs = self._within_max_windows(inputs, layout)
        outputs = self.model(inputs, training=False)
        start_logits = tf.cast(outputs["start_logits"], tf.float32)
        end_logits = tf.cast(outputs["end_logits"], tf.float32)
        best_window = self.max_context_window(layout)
        context_ids = layout["context_ids"]
        token_question = context_ids.value_rowids()
        position = tf.range(
            tf.size(context_ids.flat_values, out_type=tf.int64)
        ) - tf.gather(context_ids.row_starts(), token_question)

        # Each context piece's logits from its max-context window.
        window_of_token = (
            tf.gather(layout["window_row_start"], token_question) + best_window
        )
        at = tf.stack(
            [
                window_of_token,
                tf.gather(layout["offset"], window_of_token)
                + position
                - tf.gather(layout["doc_start"], window_of_token),
            ],
            axis=1,
        )

        def per_token(values, default):
            ragged = context_ids.with_flat_values(values)
            return ragged.to_tensor(default)

        token_outputs = {
            "start_logits": per_token(tf.gather_nd(start_logits, at), 0.0),
            "end_logits": per_token(tf.gather_nd(end_logits, at), 0.0),
            "token_start": per_token(layout["token_start"].flat_values, _NONE),
            "token_end": per_token(layout["token_end"].flat_values, _NONE),
        }
        answers = self._best_answers(
            context, layout, best_window, start_logits, end_logits
        )
        outputs = {**answers, **token_outputs}
        for name in ("answer", "nbest", "token"):
            for side in ("start", "end"):
                outputs[f"{name}_{side}"] = input_offsets(
                    byte_map, outputs[f"{name}_{side}"], end=side == "end"
                )
        return outputs

    def _candidates(self, layout, best_window, start_logits, end_logits):
        """The original's prelim predictions, per question in its order:
        a ragged [batch, candidates] of scores (-inf where not valid), with
        each candidate's window, start and end position and logits."""
        length = tf.shape(start_logits, out_type=tf.int64)[1]
        top = tf.minimum(tf.constant(self.options.n_best_size, tf.int64), length)
        start_values, start_index = tf.math.top_k(start_logits, tf.cast(top, tf.int32))
        end_values, end_index = tf.math.top_k(end_logits, tf.cast(top, tf.int32))
        start = tf.cast(start_index, tf.int64)[:, :, None]
        end = tf.cast(end_index, tf.int64)[:, None, :]
        offset = layout["offset"][:, None, None]
        doc_end = offset + layout["doc_length"][:, None, None]
        in_doc_start = (start >= offset) & (start < doc_end)
        in_doc_end = (end >= offset) & (end < doc_end)
        # The start piece's max-context window must be this one.
        row_start = tf.gather(layout["context_ids"].row_starts(), layout["question"])
        piece = row_start[:, None, None] + layout["doc_start"][:, None, None]
        piece += start - offset
        window = layout["index"][:, None, None]
        max_context = tf.equal(
            gather_or(best_window, piece, in_doc_start, _NONE), window
        )
        valid = in_doc_start & in_doc_end & max_context & (end >= start)
        valid &= end - start + 1 <= self.options.max_answer_length
        pairs = (
            tf.shape(valid, out_type=tf.int64)[1]
            * tf.shape(valid, out_type=tf.int64)[2]
        )
        start_logit = tf.broadcast_to(start_values[:, :, None], tf.shape(valid))
        end_logit = tf.broadcast_to(end_values[:, None, :], tf.shape(valid))
        # Python adds the float32 logits as doubles.
        score = tf.cast(start_logit, tf.float64) + tf.cast(end_logit, tf.float64)
        score = tf.where(valid, score, tf.constant(float("-inf"), tf.float64))
        num_windows = tf.shape(valid, out_type=tf.int64)[0]
        lengths = layout["num_windows"] * pairs

        def per_question(values):
            return tf.RaggedTensor.from_row_lengths(tf.reshape(values, [-1]), lengths)

        shape = tf.shape(valid, out_type=tf.int64)
        return {
            "score": per_question(score),
            "valid": per_question(valid),
            "window": per_question(
                tf.broadcast_to(tf.range(num_windows)[:, None, None], shape)
            ),
            "start": per_question(tf.broadcast_to(start, shape)),
            "end": per_question(tf.broadcast_to(end, shape)),
            "start_logit": per_question(start_logit),
            "end_logit": per_question(end_logit),
        }

    def _null_candidate(self, layout, start_logits, end_logits):
        """SQuAD 2.0: per question the window with the lowest [CLS] score
        (the first on ties) and its logits."""
        null_score = tf.cast(start_logits[:, 0], tf.float64) + tf.cast(
            end_logits[:, 0], tf.float64
        )
        per_question = tf.RaggedTensor.from_row_lengths(
            null_score, layout["num_windows"]
        )
        lowest = tf.reduce_min(per_question, axis=1)
        is_lowest = tf.equal(null_score, tf.gather(lowest, per_question.value_rowids()))
        index = tf.ragged.range(layout["num_windows"]).flat_values
        first = tf.reduce_min(
            per_question.with_flat_values(tf.where(is_lowest, index, tf.int64.max)),
            axis=1,
        )
        window = layout["window_row_start"] + first
        return {
            "score": lowest,
            "window": window,
            "start_logit": tf.gather(start_logits[:, 0], window),
            "end_logit": tf.gather(end_logits[:, 0], window),
        }

    def _best_answers(self, context, layout, best_window, start_logits, end_logits):
        candidates = self._candidates(layout, best_window, start_logits, end_logits)
        batch = tf.size(layout["num_windows"], out_type=tf.int64)
        is_null = candidates["valid"].with_flat_values(
            tf.zeros_like(candidates["valid"].flat_values)
        )
        if self.options.version_2_with_negative:
            null = self._null_candidate(layout, start_logits, end_logits)
            one = tf.ones([batch], tf.int64)

            def append(ragged, value):
                return tf.concat(
                    [ragged, tf.RaggedTensor.from_row_lengths(value, one)], axis=1
                )

            candidates = {
                "score": append(candidates["score"], null["score"]),
                "valid": append(candidates["valid"], tf.ones([batch], tf.bool)),
                "window": append(candidates["window"], null["window"]),
                "start": append(candidates["start"], tf.zeros([batch], tf.int64)),
                "end": append(candidates["end"], tf.zeros([batch], tf.int64)),
                "start_logit": append(candidates["start_logit"], null["start_logit"]),
                "end_logit": append(candidates["end_logit"], null["end_logit"]),
            }
            is_null = append(is_null, tf.ones([batch], tf.bool))

        # The highest-ranked candidates, stable: ties keep the original order.
        score = candidates["score"].to_tensor(float("-inf"))
        width = tf.shape(score)[1]
        keep = tf.minimum(
            width, CANDIDATES_PER_NBEST_ENTRY * self.options.n_best_size + 1
        )
        order = tf.math.top_k(score, keep).indices
        also = tf.zeros_like(order[:, :0], tf.bool)
        if self.options.version_2_with_negative:
            # The null answer (each row's last candidate) is in the n-best
            # list however low it ranks: add it after the others if needed.
            null_index = tf.cast(candidates["score"].row_lengths() - 1, tf.int32)
            ranked_in = tf.reduce_any(tf.equal(order, null_index[:, None]), axis=1)
            order = tf.concat([order, null_index[:, None]], axis=1)
            also = ~ranked_in[:, None]
            keep += 1

        def ranked(name, default):
            return tf.gather(candidates[name].to_tensor(default), order, batch_dims=1)

        valid = ranked("valid", False)
        valid &= tf.concat(
            [tf.ones_like(order[:, : keep - tf.shape(also)[1]], tf.bool), also], 1
        )
        null = tf.gather(is_null.to_tensor(False), order, batch_dims=1) & valid
        window = ranked("window", 0)
        start, end = ranked("start", 0), ranked("end", 0)
        start_logit = ranked("start_logit", 0.0)
        end_logit = ranked("end_logit", 0.0)
        answer_start, answer_end, answer_text = self._span_text(
            context, layout, window, start, end, valid & ~null
        )
        answer_start = tf.where(valid & ~null, answer_start, _NONE)
        answer_end = tf.where(valid & ~null, answer_end, _NONE)
        answer_text = tf.where(valid & ~null, answer_text, "")

        # n-best: distinct texts in rank order (the null answer is "").
        same = tf.equal(answer_text[:, :, None], answer_text[:, None, :])
        earlier = tf.linalg.band_part(tf.ones([keep, keep], tf.bool), -1, 0)
        earlier &= ~tf.eye(keep, dtype=tf.bool)
        seen = tf.reduce_any(same & earlier[None] & valid[:, None, :], axis=2)
        kept = valid & (null | ~seen)
        kept &= tf.cumsum(tf.cast(kept, tf.int32), axis=1) <= self.options.n_best_size
        if self.options.version_2_with_negative:
            # The null answer is in the list even when it ranks lower.
            kept |= null & ~tf.reduce_any(kept & null, axis=1, keepdims=True)

        def nbest(values, default):
            return tf.ragged.boolean_mask(values, kept).to_tensor(
                default, shape=[None, self.nbest_columns]
            )

        entries = tf.ragged.boolean_mask(tf.cast(start_logit, tf.float64), kept)
        entries += tf.ragged.boolean_mask(tf.cast(end_logit, tf.float64), kept)
        exp = tf.exp(entries - tf.reduce_max(entries, axis=1)[:, None])
        probability = exp / tf.reduce_sum(exp, axis=1)[:, None]
        outputs = {
            "nbest_text": nbest(answer_text, ""),
            "nbest_start": nbest(answer_start, _NONE),
            "nbest_end": nbest(answer_end, _NONE),
            "nbest_start_logit": nbest(start_logit, 0.0),
            "nbest_end_logit": nbest(end_logit, 0.0),
            "nbest_probability": tf.cast(
                probability.to_tensor(0.0, shape=[None, self.nbest_columns]),
                tf.float32,
            ),
        }
        has_entry = tf.reduce_any(kept, axis=1)
        # v1: the top entry; v2: the best non-null entry unless the null
        # score beats it by more than the threshold.
        pick = kept & ~null if self.options.version_2_with_negative else kept
        pick &= tf.equal(tf.cumsum(tf.cast(pick, tf.int32), axis=1), 1)
        picked = tf.reduce_any(pick, axis=1)
        column = tf.argmax(tf.cast(pick, tf.int32), axis=1, output_type=tf.int32)
        nbest_column = tf.reduce_sum(
            tf.cast(kept, tf.int32)
            * tf.cast(tf.range(keep)[None] < column[:, None], tf.int32),
            axis=1,
        )

        def take(values):
            return tf.gather(values, column, batch_dims=1)

        best_score = take(tf.cast(start_logit, tf.float64)) + take(
            tf.cast(end_logit, tf.float64)
        )
        answer = {
            "answer_text": tf.where(picked, take(answer_text), ""),
            "answer_start": tf.where(picked, take(answer_start), _NONE),
            "answer_end": tf.where(picked, take(answer_end), _NONE),
            "answer_score": tf.where(picked, best_score, float("-inf")),
            "answer_probability": tf.where(
                picked,
                tf.gather(outputs["nbest_probability"], nbest_column, batch_dims=1),
                0.0,
            ),
        }
        if self.options.version_2_with_negative:
            null_score = self._null_candidate(layout, start_logits, end_logits)["score"]
            diff = null_score - tf.where(picked, best_score, 0.0)
            to_null = ~picked | (diff > self.options.null_score_diff_threshold)
            null_column = tf.argmax(
                tf.cast(tf.equal(outputs["nbest_text"], ""), tf.int32)
                * tf.cast(
                    tf.range(self.nbest_columns)[None]
                    < tf.reduce_sum(tf.cast(kept, tf.int32), axis=1)[:, None],
                    tf.int32,
                ),
                axis=1,
                output_type=tf.int32,
            )
            answer = {
                "answer_text": tf.where(to_null, "", answer["answer_text"]),
                "answer_start": tf.where(
                    to_null, tf.constant(_NONE, tf.int64), answer["answer_start"]
                ),
                "answer_end": tf.where(
                    to_null, tf.constant(_NONE, tf.int64), answer["answer_end"]
                ),
                "answer_score": tf.where(to_null, null_score, answer["answer_score"]),
                "answer_probability": tf.where(
                    to_null,
                    tf.gather(outputs["nbest_probability"], null_column, batch_dims=1),
                    answer["answer_probability"],
                ),
                "null_score_diff": tf.cast(diff, tf.float32),
            }
        answer["answer_score"] = tf.cast(answer["answer_score"], tf.float32)
        answer["answer_probability"] = tf.where(
            has_entry, answer["answer_probability"], 0.0
        )
        return {**answer, **outputs}

    def _span_text(self, context, layout, window, start, end, valid):
        """Byte offsets and text of spans given as (window, start, end)
        positions [batch, candidates], by the original's get_final_text
        (where `valid`; elsewhere anything in range)."""
        context_ids = layout["context_ids"]
        offset = tf.gather(layout["offset"], window)
        doc_start = tf.gather(layout["doc_start"], window)
        row_start = tf.gather(
            context_ids.row_starts(), tf.gather(layout["question"], window)
        )
        # Candidates that are not valid spans may point anywhere: clip.
        last = tf.size(context_ids.flat_values, out_type=tf.int64) - 1
        first_piece = tf.clip_by_value(row_start + doc_start + start - offset, 0, last)
        last_piece = tf.clip_by_value(row_start + doc_start + end - offset, 0, last)

        words, word_starts, word_ends = text.regex_split_with_offsets(
            context, DOC_WHITESPACE, ""
        )
        word_starts = tf.cast(word_starts, tf.int64)
        word_ends = tf.cast(word_ends, tf.int64)
        # Characters BasicTokenizer drops (or lower-casing and accent
        # stripping change) in each word: when the words of a span have
        # any, get_final_text cannot align them and returns whole words.
        normalized = normalize_words(
            tf.strings.regex_replace(words.flat_values, WHITESPACE, ""),
            self.preprocessor.do_lower_case,
            self.preprocessor.strip_accents,
        )
        changed = tf.strings.length(
            words.flat_values, unit="UTF8_CHAR"
        ) - tf.strings.length(normalized, unit="UTF8_CHAR")
        changed_before = prefix_sums(tf.cast(tf.not_equal(changed, 0), tf.int64))
        # Each piece's word: the last word starting at or before it.
        piece_start = layout["token_start"]
        word_index = tf.searchsorted(
            word_starts.to_tensor(tf.int64.max),
            piece_start.to_tensor(tf.int64.max),
            side="right",
            out_type=tf.int64,
        )
        word_index = tf.RaggedTensor.from_tensor(
            word_index, lengths=piece_start.row_lengths()
        )
        word_index = (
            word_index.flat_values
            - 1
            + tf.gather(words.row_starts(), word_index.value_rowids())
        )
        unknown_before = prefix_sums(
            tf.cast(
                tf.equal(context_ids.flat_values, self.preprocessor.unk_id), tf.int64
            )
        )
        has_pieces = last >= 0
        first_word = gather_or(word_index, first_piece, has_pieces, 0)
        last_word = gather_or(word_index, last_piece, has_pieces, 0)
        has_words = tf.size(words.flat_values) > 0
        unknowns = gather_or(unknown_before, last_piece + 1, has_pieces, 0)
        unknowns -= gather_or(unknown_before, first_piece, has_pieces, 0)
        changes = gather_or(changed_before, last_word + 1, has_words, 0)
        changes -= gather_or(changed_before, first_word, has_words, 0)
        exact = tf.equal(unknowns, 0) & tf.equal(changes, 0) & valid
        span_start = tf.where(
            exact,
            gather_or(piece_start.flat_values, first_piece, has_pieces, 0),
            gather_or(word_starts.flat_values, first_word, has_words, 0),
        )
        span_end = tf.where(
            exact,
            gather_or(layout["token_end"].flat_values, last_piece, has_pieces, 0),
            gather_or(word_ends.flat_values, last_word, has_words, 0),
        )
        span_start, span_end = self._first_occurrence(
            context,
            context_ids,
            word_index,
            first_word,
            first_piece,
            last_piece,
            exact & has_pieces,
            span_start,
            span_end,
        )
        rows = tf.broadcast_to(context[:, None], tf.shape(span_start))
        span_start = tf.where(valid, span_start, 0)
        span_end = tf.where(valid, tf.maximum(span_end, span_start), 0)
        span_text = tf.strings.substr(rows, span_start, span_end - span_start)
        span_text = tf.strings.regex_replace(span_text, DOC_WHITESPACE, " ")
        return span_start, span_end, span_text

    def _first_occurrence(
        self,
        context,
        context_ids,
        word_index,
        first_word,
        first_piece,
        last_piece,
        exact,
        span_start,
        span_end,
    ):
        """Offsets moved to where get_final_text finds the prediction.

        It looks the span's normalised text up with `str.find` in the
        normalised words of the span: when the same text occurs earlier in
        the first word (other case or accents: "##a" of "Anna" gives "A"),
        the answer is that earlier occurrence.
        """
        # The context's normalised text as the original rebuilds a
        # prediction from word pieces: joined by spaces, "##" pieces glued.
        pieces = tf.gather(self._piece_texts, context_ids.flat_values)
        bare = tf.strings.regex_replace(pieces, "^##", "")
        rows = context_ids.value_rowids()
        position = tf.range(
            tf.size(context_ids.flat_values, out_type=tf.int64)
        ) - tf.gather(context_ids.row_starts(), rows)
        glued = tf.strings.regex_full_match(pieces, "##.+") | tf.equal(position, 0)
        space = tf.cast(~glued, tf.int64)
        size = space + tf.cast(tf.strings.length(bare), tf.int64)
        before = tf.cumsum(size, exclusive=True)
        row_base = gather_or(before, context_ids.row_starts(), True, 0)
        piece_start = before - tf.gather(row_base, rows) + space
        piece_end = piece_start + size - space
        normalized_text = tf.strings.reduce_join(
            context_ids.with_flat_values(tf.where(glued, bare, " " + bare)), axis=1
        )

        has_pieces = tf.size(pieces) > 0
        true_start = gather_or(piece_start, first_piece, has_pieces, 0)
        length = gather_or(piece_end, last_piece, has_pieces, 0) - true_start
        word_first_piece = tf.reshape(
            tf.searchsorted(
                word_index[None, :],
                tf.reshape(first_word, [1, -1]),
                side="left",
                out_type=tf.int64,
            ),
            tf.shape(first_word),
        )
        word_start = gather_or(piece_start, word_first_piece, has_pieces, 0)
        # Only exact spans are looked up; Substr refuses positions past the
        # end of its string, so the others read from 0.
        true_start = tf.where(exact, true_start, 0)
        length = tf.where(exact, length, 0)
        word_start = tf.where(exact, word_start, 0)
        room = true_start - word_start
        width = tf.reduce_max(tf.concat([tf.reshape(room, [-1]), [0]], 0))
        shift = tf.range(width)[None, None, :]
        shape = tf.shape(room, out_type=tf.int64)
        text_3d = tf.broadcast_to(
            normalized_text[:, None, None], tf.concat([shape, [width]], 0)
        )
        length_3d = tf.broadcast_to(length[:, :, None], tf.shape(text_3d))
        wanted = tf.strings.substr(
            tf.broadcast_to(normalized_text[:, None], shape), true_start, length
        )
        found_at = tf.strings.substr(
            text_3d,
            word_start[:, :, None] + tf.minimum(shift, room[:, :, None]),
            length_3d,
        )
        match = (shift < room[:, :, None]) & tf.equal(found_at, wanted[:, :, None])
        first = tf.reduce_min(tf.where(match, shift, width), axis=2)
        moved = first < room
        start_at = tf.where(moved, word_start + first, 0)
        skipped = tf.strings.substr(
            tf.broadcast_to(normalized_text[:, None], shape),
            start_at,
            tf.where(moved, true_start - start_at, 0),
        )
        # Characters moved, spaces (which the original strips) not counted.
        back = tf.cast(
            tf.strings.length(skipped, unit="UTF8_CHAR")
            - tf.strings.length(tf.strings.regex_replace(skipped, "[^ ]", "")),
            tf.int64,
        )

        # Byte offsets of the context's non-whitespace characters.
        chars, char_starts = tf.strings.unicode_split_with_offsets(context, "UTF-8")
        keep = chars.with_flat_values(
            ~tf.strings.regex_full_match(chars.flat_values, DOC_WHITESPACE)
        )
        char_ends = char_starts + tf.cast(tf.strings.length(chars), tf.int64)
        char_starts = tf.ragged.boolean_mask(char_starts, keep).to_tensor(tf.int64.max)
        char_ends = tf.ragged.boolean_mask(char_ends, keep).to_tensor(0)
        # One column more, so that the gathers below stay in range when no
        # context of the batch has a character (all empty or whitespace).
        rows = tf.shape(char_starts)[0]
        char_starts = tf.concat(
            [char_starts, tf.fill([rows, 1], tf.constant(tf.int64.max))], 1
        )
        char_ends = tf.concat([char_ends, tf.zeros([rows, 1], tf.int64)], 1)
        first_char = tf.searchsorted(
            char_starts, span_start, side="left", out_type=tf.int64
        )
        last_char = (
            tf.searchsorted(char_starts, span_end, side="left", out_type=tf.int64) - 1
        )
        limit = tf.maximum(tf.shape(char_starts, out_type=tf.int64)[1] - 2, 0)
        moved &= tf.shape(char_starts)[1] > 1
        new_start = tf.gather(
            char_starts, tf.clip_by_value(first_char - back, 0, limit), batch_dims=1
        )
        new_end = tf.gather(
            char_ends, tf.clip_by_value(last_char - back, 0, limit), batch_dims=1
        )
        return (
            tf.where(moved, new_start, span_start),
            tf.where(moved, new_end, span_end),
        )


def prefix_sums(values):
    """[0, v0, v0 + v1, ...]: sums over [a, b] are `p[b + 1] - p[a]`."""
    return tf.concat([tf.zeros([1], values.dtype), tf.cumsum(values)], 0)


def gather_or(values, index, ok, default):
    """`values[index]` where `ok`, else `default` (and no index is read out
    of range, even when `values` is empty)."""
    size = tf.size(values, out_type=tf.int64)
    ok = ok & (index >= 0) & (index < size)
    padded = tf.concat([values, tf.cast([default], values.dtype)], 0)
    return tf.gather(padded, tf.where(ok, index, size))
