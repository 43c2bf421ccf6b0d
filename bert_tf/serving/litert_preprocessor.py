"""`LiteRTPreprocessor`: raw strings to BERT inputs with ops LiteRT runs.

`BertPreprocessor` (the SavedModel's) needs TensorFlow ops that LiteRT lacks
(regex splits, hash tables, ragged gathers). This one uses only
`text.FastBertTokenizer` (tensorflow-text's `FastBertNormalize` and
`FastWordpieceTokenizeWithOffsets`, which have LiteRT kernels in
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`), `RaggedTensorToTensor`
(also there) and TFLite builtins: the `[CLS] a [SEP] b [SEP]` layout is built
by index arithmetic on dense [batch, tokens] matrices instead of ragged
concatenation (`combine_segments`' `RaggedGather` has no LiteRT kernel).

The ids are the original `FullTokenizer`'s except on the rare characters
listed in `bert_tf.serving.litert_exporter.TOKENIZER_DIFFERENCES`.
"""

import tensorflow as tf
import tensorflow_text as text

from bert_tf.text import tokenization
from bert_tf.text.preprocessing import FAST_WORDPIECE_ARGUMENTS
from bert_tf.text.preprocessing import truncated_pair_lengths


class LiteRTPreprocessor(tf.Module):
    """Tokenizes and packs one or two string segments for a LiteRT model.

    The packing is the original's (`[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`,
    segment ids 0 then 1, the original pair truncation, an empty second
    segment packs as a single one). Rows are padded to the batch's longest
    row, never past `seq_length`.

    Args:
        vocab_file: the model's vocab.txt (one token per line, no duplicates)
            or tokenizer.json.
        do_lower_case: lower-case and strip accents, as the original.
        seq_length: the longest packed row.

    Example:
    >>> pre = LiteRTPreprocessor("vocab.txt", True, 128)
    >>> pre.pack_texts([tf.constant(["hello world"])])["input_ids"]
    [[101, 7592, 2088, 102]]
    """

    # The graphs it feeds run on LiteRT's builtin ops: a family's signatures
    # then avoid string selects and TensorLists (`TaggerSignatures`).
    builtin_ops = True

    def __init__(
        self,
        vocab_file,
        do_lower_case=True,
        seq_length=128,
        strip_accents=None,
        tokenize_chinese_chars=None,
    ):
        super().__init__(name="litert_preprocessor")
        if seq_length < 3:
            raise ValueError(f"seq_length must be >= 3, got {seq_length}")
        strip_accents, tokenize_chinese_chars = tokenization.resolve_tokenizer_options(
            vocab_file, strip_accents, tokenize_chinese_chars
        )
        strip = bool(do_lower_case if strip_accents is None else strip_accents)
        if strip != bool(do_lower_case) or not tokenize_chinese_chars:
            # FastBertNormalizer has one switch for all three.
            raise ValueError(
                f"{vocab_file}: the LiteRT tokenizer strips accents exactly when "
                "lower-casing and splits Chinese characters; this tokenizer has "
                f"do_lower_case={bool(do_lower_case)}, strip_accents={strip}, "
                f"tokenize_chinese_chars={tokenize_chinese_chars} (export a "
                "SavedModel instead)"
            )
        vocab = tokenization.load_vocab(vocab_file)
        tokens = list(vocab)
        for token in ("[CLS]", "[SEP]", "[UNK]"):
            if token not in vocab:
                raise ValueError(f"{vocab_file}: the vocabulary has no {token}")
        if [vocab[t] for t in tokens] != list(range(len(tokens))):
            raise ValueError(
                f"{vocab_file}: the LiteRT tokenizer needs one token per line "
                "without duplicates"
            )
        self.vocab_file = vocab_file
        self.do_lower_case = bool(do_lower_case)
        self.seq_length = int(seq_length)
        self.vocab_size = len(tokens)
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        # Word starts (not a "##" piece): where the tagger reads its tags.
        self.continuation = [token.startswith("##") for token in tokens]
        # text.FastBertTokenizer's two halves, called one by one so that the
        # offsets map back to the input with a dense gather: its ragged
        # gather needs RaggedRange, which LiteRT has no kernel for.
        self._normalizer = text.FastBertNormalizer(
            lower_case_nfd_strip_accents=self.do_lower_case
        )
        self._wordpiece = text.FastWordpieceTokenizer(
            vocab=tokens, **FAST_WORDPIECE_ARGUMENTS
        )

    def tokenize(self, texts):
        """Dense word pieces of `texts` [batch].

        Returns `(ids, lengths, starts, ends)`: int64 [batch, tokens] ids
        (0 past a row's end), int64 [batch] token counts, and each token's
        UTF-8 byte span in its string.
        """
        normalized, offsets = self._normalizer.normalize_with_offsets(texts)
        ids, starts, ends = self._wordpiece.tokenize_with_offsets(normalized)
        # `offsets[i]`: where byte i of the normalized string comes from.
        offsets = offsets.to_tensor(0)

        def original(positions):
            return tf.gather(offsets, positions.to_tensor(0), batch_dims=1)

        return ids.to_tensor(0), ids.row_lengths(), original(starts), original(ends)

    @staticmethod
    def at_positions(values, token_index, kept):
        """`values` [B, pieces] (e.g. `tokenize`'s byte offsets) at each
        packed position of `pack`'s `token_index`, -1 where not `kept`."""
        index = tf.maximum(token_index, 0)
        return tf.where(
            kept, tf.gather(values, index, batch_dims=1), tf.constant(-1, tf.int64)
        )

    def pack_texts(self, texts):
        """`pack` of the tokens of one or two string tensors [batch]."""
        return self.pack([self.tokenize(t)[:2] for t in texts])[0]

    def pack(self, segments, kept=None):
        """Packs 1 or 2 dense token segments as the original.

        Args:
            segments: `(ids, lengths)` per segment, as `tokenize` gives.
            kept: int64 [batch] tokens kept per segment (default: the
                original's truncation rule); every segment then ends with
                [SEP].

        Returns `(inputs, token_index, segment)`: the model's int32 inputs
        [batch, width]; for each position the index of its token in its
        segment (-1 at [CLS], [SEP] and padding) and the segment (0 or 1).
        """
        budget = self.seq_length
        lengths = [length for _, length in segments]
        has_b = None
        if kept is None and len(segments) == 1:
            kept = [tf.minimum(lengths[0], budget - 2)]
        elif kept is None:
            has_b = lengths[1] > 0
            pair_a, pair_b = truncated_pair_lengths(lengths[0], lengths[1], budget - 3)
            kept = [tf.where(has_b, pair_a, tf.minimum(lengths[0], budget - 2)), pair_b]
        kept = [tf.cast(k, tf.int64) for k in kept]
        # Row layout: [CLS] at 0; segment i at [begin_i, begin_i + kept_i),
        # its [SEP] right after (the second [SEP] only when b has tokens).
        positions_used = 1 + kept[0] + 1
        begins = [tf.ones_like(kept[0])]
        seps = [kept[0] + 1]
        if len(segments) == 2:
            with_sep = tf.ones_like(kept[1], tf.bool) if has_b is None else has_b
            begins.append(kept[0] + 2)
            seps.append(tf.where(with_sep, kept[0] + 2 + kept[1], -1))
            positions_used += kept[1] + tf.cast(with_sep, tf.int64)
        width = tf.reduce_max(positions_used)
        position = tf.expand_dims(tf.range(width, dtype=tf.int64), 0)
        input_ids = tf.where(position == 0, tf.constant(self.cls_id, tf.int64), 0)
        token_index = tf.fill(tf.shape(input_ids), tf.constant(-1, tf.int64))
        segment = tf.zeros_like(input_ids)
        for index, (ids, _) in enumerate(segments):
            begin = tf.expand_dims(begins[index], 1)
            inside = (position >= begin) & (position < begin + kept[index][:, None])
            # A padding column keeps the gather in range for rows (and
            # batches) whose segment has no tokens.
            padded = tf.concat([ids, tf.zeros_like(ids[:, :1])], axis=1)
            last = tf.cast(tf.shape(padded)[1] - 1, tf.int64)
            within = tf.clip_by_value(position - begin, 0, last)
            input_ids = tf.where(
                inside, tf.gather(padded, within, batch_dims=1), input_ids
            )
            token_index = tf.where(inside, within, token_index)
            sep = position == tf.expand_dims(seps[index], 1)
            input_ids = tf.where(sep, tf.constant(self.sep_id, tf.int64), input_ids)
            if index == 1:
                segment = tf.where(inside | sep, tf.ones_like(segment), segment)
        mask = position < tf.expand_dims(positions_used, 1)
        inputs = {
            "input_ids": tf.cast(input_ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "segment_ids": tf.cast(segment, tf.int32),
        }
        return inputs, token_index, segment
