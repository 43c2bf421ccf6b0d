"""`BertPreprocessor`: raw strings to BERT inputs, inside the TensorFlow graph.

What a SavedModel needs to take text: the original's `FullTokenizer` and the
packing of `run_classifier.convert_single_example`, rebuilt from ops that the
stock TF Serving model server links in (tensorflow-text's BertTokenizer op
family since TF Serving 2.3, plus core TF ops), so no Python runs at serving
time.
"""

import os

import keras
import tensorflow as tf
import tensorflow_text as text

from bert_tf.text import tokenization
from bert_tf.text.tokenizer_json import is_tokenizer_json
from bert_tf.text.tokenizer_json import tokenizer_json_vocab_bytes

# Python's str.split() after the original's _clean_text: tab/newline/CR and Zs
# became " "; U+2028/U+2029 are the only other separators that survive
# cleaning (the remaining Python whitespace characters are Cc and are dropped).
WHITESPACE = r"[\t\n\r\p{Zs}\x{2028}\x{2029}]+"
# _clean_text drops NUL, U+FFFD and controls (Cc, Cf); \t\n\r are split on
# before this runs.
_CONTROL = r"[\x{0}\x{FFFD}\p{Cc}\p{Cf}]"
_NONSPACING_MARK = r"\p{Mn}"
# _is_punctuation (the four ASCII symbol ranges and every Unicode P*) and
# _is_chinese_char: each such character is a token of its own.
_ASCII_SYMBOLS = r"\x{21}-\x{2F}\x{3A}-\x{40}\x{5B}-\x{60}\x{7B}-\x{7E}"
_CJK = (
    r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}"
)
_OWN_TOKEN = rf"[{_ASCII_SYMBOLS}\p{{P}}{_CJK}]"
# The same without CJK (Hugging Face's tokenize_chinese_chars=False).
_PUNCTUATION_TOKEN = rf"[{_ASCII_SYMBOLS}\p{{P}}]"
# The original's WordpieceTokenizer turns words longer than this many code
# points into [UNK]; tensorflow-text counts bytes instead, so the character
# rule is applied before it and its byte limit is set out of the way.
_MAX_INPUT_CHARS_PER_WORD = 200
_MAX_BYTES_PER_WORD = 4 * _MAX_INPUT_CHARS_PER_WORD + 1
# The arguments of tensorflow-text's fast WordPiece tokenizers
# (`FastBertTokenizer` here, `FastWordpieceTokenizer` in the LiteRT
# preprocessor): their byte limit is the nearest they have to the original's
# 200-character one.
FAST_WORDPIECE_ARGUMENTS = {
    "suffix_indicator": "##",
    "max_bytes_per_word": _MAX_INPUT_CHARS_PER_WORD,
    "token_out_type": tf.int64,
    "unknown_token": "[UNK]",
}

TOKENIZERS = ("bert", "fast_bert")
# The vocabulary's file name among a `.keras` file's assets.
_VOCAB_ASSET = "vocab.txt"
PADDINGS = ("max_length", "longest")


def _vocabulary_entry(key, doc):
    """A read-only `BertPreprocessor` property: an entry of its vocabulary's
    ids, read once the vocabulary is loaded (a deferred one is loaded first)."""

    def entry(self):
        self._require_vocabulary()
        return self._ids[key]

    return property(entry, doc=doc)


@keras.saving.register_keras_serializable(package="bert_tf")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes and packs one or two string segments into BERT inputs.

    The ids equal `tokenization.FullTokenizer` followed by the original's
    packing: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, segment ids 0 then 1,
    zero padding, and the original truncation (a single segment is cut to
    `seq_length - 2`; a pair loses tokens from the end of the longer segment,
    the second one on ties, until it fits).

    Padding: `padding="max_length"` (default) pads every row to `seq_length`,
    the original's fixed shape, which `tf.data` pipelines, XLA and TPUs want.
    `padding="longest"` pads each batch only to its longest row (never past
    `seq_length`): what a server wants, since a 25-token sentence then costs
    25 positions, not 128. The model's outputs at real positions are the same
    either way (padded keys are masked out).

    With `tokenizer="bert"` (default) only ops that stock TF Serving has
    shipped since 2.3 are used: `RegexSplitWithOffsets`, `NormalizeUTF8`,
    `WordpieceTokenizeWithOffsets`, and core string, lookup and ragged ops.
    `tokenizer="fast_bert"` uses `text.FastBertTokenizer` (needs TF Serving
    >= 2.12; its normalisation differs from the original on rare characters).

    Args:
        vocab_file: str. The model's vocab.txt, or a Hugging Face
            tokenizer.json (WordPiece; its normalizer's settings apply unless
            given here).
        do_lower_case: bool. Lower-case and strip accents, as the original.
        seq_length: int. Length of the packed outputs (with
            `padding="longest"`: the most they can have).
        tokenizer: "bert" or "fast_bert".
        padding: "max_length" or "longest" (see above).
        strip_accents: None (strip when lower-casing, the original's rule),
            True or False: Hugging Face `BertTokenizer`'s switch.
        tokenize_chinese_chars: bool. Split CJK ideographs into tokens of
            their own (default True, the original's rule).

    Call arguments: `inputs`, a string tensor [batch] (one segment) or a
    tuple/list of two (a pair); scalar strings (one example, as an unbatched
    `tf.data` map passes them) give [seq_length] outputs.

    Saved in a `.keras` file, the vocabulary goes with it as an asset, so the
    file loads after `vocab_file` has moved or gone.

    Returns: a dict of int32 [batch, seq_length] tensors `input_ids`,
    `input_mask` and `segment_ids` ([batch, longest row] with
    `padding="longest"`).

    Example:

    ```python
    preprocessor = bert_tf.BertPreprocessor("vocab.txt", True, 128)
    preprocessor(tf.constant(["hello world"]))["input_ids"][0, :4]
    # [101, 7592, 2088, 102]
    ```
    """

    def __init__(
        self,
        vocab_file,
        do_lower_case=True,
        seq_length=128,
        tokenizer="bert",
        padding="max_length",
        strip_accents=None,
        tokenize_chinese_chars=None,
        **kw,
    ):
        from_assets = kw.pop("_vocabulary_from_assets", False)
        super().__init__(**kw)
        if tokenizer not in TOKENIZERS:
            raise ValueError(
                f"tokenizer must be one of {TOKENIZERS}, got {tokenizer!r}"
            )
        if padding not in PADDINGS:
            raise ValueError(f"padding must be one of {PADDINGS}, got {padding!r}")
        if seq_length < 3:
            raise ValueError(f"seq_length must be >= 3, got {seq_length}")
        strip_accents, tokenize_chinese_chars = tokenization.resolve_tokenizer_options(
            None if from_assets else vocab_file, strip_accents, tokenize_chinese_chars
        )
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        # Resolved (never None), so a config restored without the file says it.
        self.strip_accents = bool(
            do_lower_case if strip_accents is None else strip_accents
        )
        self.tokenize_chinese_chars = tokenize_chinese_chars
        if tokenizer == "fast_bert" and (
            self.strip_accents != bool(do_lower_case) or not tokenize_chinese_chars
        ):
            raise ValueError(
                "tokenizer='fast_bert' strips accents exactly when lower-casing and "
                f"splits Chinese characters; got strip_accents={self.strip_accents}, "
                f"tokenize_chinese_chars={tokenize_chinese_chars} (use tokenizer='bert')"
            )
        self.seq_length = seq_length
        self.tokenizer = tokenizer
        self.padding = padding
        self._vocab_bytes = None
        self._ids = None
        # A layer restored from a `.keras` file gets its vocabulary from the
        # file's assets (`load_assets`), wherever vocab_file was when saved:
        # the path in its config (which an untrusted file may point anywhere,
        # at a FIFO or a device) is not opened then. A layer made by
        # `from_config` outside a load reads it on first use.
        self._deferred_vocab_file = vocab_file if from_assets else None
        if not from_assets:
            self._set_vocabulary(vocab_file)
        # No weights: usable (and exportable) without a build step.
        self.built = True

    # --- vocabulary ---------------------------------------------------------

    def _set_vocabulary(self, vocab_file):
        """Builds the lookup tables from `vocab_file` (keeps its bytes, which
        `save_assets` writes into a `.keras` file)."""
        if is_tokenizer_json(vocab_file):
            # Kept as vocab.txt bytes: what `.keras` assets and exports write.
            self._vocab_bytes = tokenizer_json_vocab_bytes(vocab_file)
        else:
            with open(vocab_file, "rb") as f:
                self._vocab_bytes = f.read()
        # The same token -> id map as FullTokenizer (stripped lines, the last
        # occurrence of a duplicate wins), stored in the graph as constants.
        vocab = tokenization.load_vocab(vocab_file)
        for token in ("[CLS]", "[SEP]", "[UNK]"):
            if token not in vocab:
                raise ValueError(f"{vocab_file}: the vocabulary has no {token}")
        self._ids = {
            "cls": vocab["[CLS]"],
            "sep": vocab["[SEP]"],
            "unk": vocab["[UNK]"],
            "size": len(vocab),
        }
        self._deferred_vocab_file = None
        tokens = list(vocab)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(tokens),
                tf.constant([vocab[t] for t in tokens], tf.int64),
            ),
            default_value=-1,
        )
        if self.tokenizer == "bert":
            self._wordpiece = text.WordpieceTokenizer(
                self._table,
                suffix_indicator="##",
                max_bytes_per_word=_MAX_BYTES_PER_WORD,
                token_out_type=tf.int64,
                unknown_token="[UNK]",
            )
        else:
            ids = [vocab[t] for t in tokens]
            if ids != list(range(len(ids))):
                raise ValueError(
                    f"{vocab_file}: tokenizer='fast_bert' needs one token per line "
                    "without duplicates"
                )
            self._fast = text.FastBertTokenizer(
                vocab=tokens,
                lower_case_nfd_strip_accents=self.do_lower_case,
                **FAST_WORDPIECE_ARGUMENTS,
            )

    def save_assets(self, dir_path):
        with open(os.path.join(dir_path, _VOCAB_ASSET), "wb") as f:
            f.write(self._require_vocabulary())

    def load_assets(self, dir_path):
        self._set_vocabulary(os.path.join(dir_path, _VOCAB_ASSET))

    def _require_vocabulary(self):
        if self._vocab_bytes is None and self._deferred_vocab_file:
            if os.path.exists(self._deferred_vocab_file):
                with tf.init_scope():  # the tables, also when first used in a graph
                    self._set_vocabulary(self._deferred_vocab_file)
        if self._vocab_bytes is None:
            raise ValueError(
                f"BertPreprocessor has no vocabulary: {self.vocab_file} does not "
                "exist and no saved assets were loaded"
            )
        return self._vocab_bytes

    cls_id = _vocabulary_entry("cls", "The id of [CLS].")
    sep_id = _vocabulary_entry("sep", "The id of [SEP].")
    unk_id = _vocabulary_entry("unk", "The id of [UNK].")
    vocab_size = _vocabulary_entry(
        "size", "The number of distinct tokens of the vocabulary."
    )

    # --- tokenization -------------------------------------------------------

    def tokenize_with_offsets(self, texts):
        """Word pieces of `texts` [batch] and where they come from.

        Returns `(ids, starts, ends)`, int64 ragged [batch, tokens]: the ids,
        and for each token the byte span in its (UTF-8-cleaned) input string
        of the characters it was made from ("##ana" of "Banana": "ana"). A
        word whose normalisation changes its number of characters (a
        decomposed accent, a control character) maps back whole, as the
        original's `get_final_text` does when its character alignment fails.
        """
        self._require_vocabulary()
        texts = repair_utf8(texts)
        if self.tokenizer == "fast_bert":
            ids, starts, ends = self._fast.tokenize_with_offsets(texts)
            return (
                ids.merge_dims(1, -1),
                starts.merge_dims(1, -1),
                ends.merge_dims(1, -1),
            )
        words, word_starts, word_ends, normalized, pieces, piece_starts, too_long = (
            self._split(texts)
        )
        # [batch, words, pieces, word pieces]; offsets in bytes of the piece.
        ids, wp_starts, wp_ends = self._word_pieces(pieces, too_long)
        # Each word piece's bytes in its normalized word (a too-long piece,
        # now one [UNK], covers its whole piece).
        token_piece = ids.values.values.value_rowids()
        piece_bytes = tf.cast(tf.strings.length(pieces.flat_values), tf.int64)
        in_piece_start = tf.where(
            tf.gather(too_long, token_piece),
            tf.constant(0, tf.int64),
            tf.cast(wp_starts.flat_values, tf.int64),
        )
        in_piece_end = tf.where(
            tf.gather(too_long, token_piece),
            tf.gather(piece_bytes, token_piece),
            tf.cast(wp_ends.flat_values, tf.int64),
        )
        piece_start = tf.cast(
            tf.gather(piece_starts.flat_values, token_piece), tf.int64
        )
        normalized_start = piece_start + in_piece_start
        normalized_end = piece_start + in_piece_end
        # Back to the input's bytes through character positions, which
        # lower-casing and accent stripping keep when they keep the count.
        token_word = tf.gather(pieces.values.value_rowids(), token_piece)
        word_text = tf.gather(words.flat_values, token_word)
        normalized_text = tf.gather(normalized.flat_values, token_word)
        same_count = tf.equal(
            tf.strings.length(words.flat_values, unit="UTF8_CHAR"),
            tf.strings.length(normalized.flat_values, unit="UTF8_CHAR"),
        )

        def to_input_bytes(normalized_offset):
            chars = tf.strings.length(
                tf.strings.substr(
                    normalized_text, tf.zeros_like(normalized_offset), normalized_offset
                ),
                unit="UTF8_CHAR",
            )
            prefix = tf.strings.substr(
                word_text, tf.zeros_like(chars), chars, unit="UTF8_CHAR"
            )
            return tf.cast(tf.strings.length(prefix), tf.int64)

        exact = tf.gather(same_count, token_word)
        word_start = tf.gather(tf.cast(word_starts.flat_values, tf.int64), token_word)
        word_end = tf.gather(tf.cast(word_ends.flat_values, tf.int64), token_word)
        flat_start = tf.where(
            exact, word_start + to_input_bytes(normalized_start), word_start
        )
        flat_end = tf.where(
            exact, word_start + to_input_bytes(normalized_end), word_end
        )
        ids = ids.merge_dims(1, -1)
        return ids, ids.with_flat_values(flat_start), ids.with_flat_values(flat_end)

    def _split(self, texts):
        """The original's BasicTokenizer on repaired `texts`: words (at
        whitespace) with their byte spans, the normalized words, their pieces
        (punctuation and CJK characters split off) [batch, words, pieces]
        with byte starts, and which pieces are too long to look up."""
        words, word_starts, word_ends = text.regex_split_with_offsets(
            texts, WHITESPACE, ""
        )
        normalized = normalize_words(words, self.do_lower_case, self.strip_accents)
        own = _OWN_TOKEN if self.tokenize_chinese_chars else _PUNCTUATION_TOKEN
        pieces, piece_starts, _ = text.regex_split_with_offsets(normalized, own, own)
        too_long = (
            tf.strings.length(pieces.flat_values, unit="UTF8_CHAR")
            > _MAX_INPUT_CHARS_PER_WORD
        )
        return words, word_starts, word_ends, normalized, pieces, piece_starts, too_long

    def python_tokenizer(self):
        """The `tokenization.FullTokenizer` with this layer's vocabulary and
        settings (for host-side work: passages, answer texts)."""
        return tokenization.FullTokenizer(
            self.vocab_file,
            self.do_lower_case,
            strip_accents=self.strip_accents,
            tokenize_chinese_chars=self.tokenize_chinese_chars,
        )

    def tokenize(self, texts):
        """Word-piece ids of `texts` [batch]: int64 ragged [batch, tokens].

        The ids of `tokenize_with_offsets` without the offsets' ops: half
        the graph, which the model's inputs and tf.data maps carry.
        """
        if self.tokenizer == "fast_bert":
            return self.tokenize_with_offsets(texts)[0]
        self._require_vocabulary()
        *_, pieces, _, too_long = self._split(repair_utf8(texts))
        return self._word_pieces(pieces, too_long)[0].merge_dims(1, -1)

    def _word_pieces(self, pieces, too_long):
        """WordPiece ids [batch, words, pieces, word pieces] of `pieces`, with
        each one's byte offsets in its piece; a too-long piece is one [UNK]."""
        unk_pieces = pieces.with_flat_values(
            tf.where(too_long, "[UNK]", pieces.flat_values)
        )
        return self._wordpiece.tokenize_with_offsets(unk_pieces)

    # --- packing ----------------------------------------------------------

    def pack(self, segments, lengths=None):
        """Truncates and packs 1 or 2 ragged id segments as the original.

        As the original's convert_single_example, a second segment with no
        tokens makes a single-segment row (no second [SEP], cut to
        seq_length - 2). `lengths` (int64 [batch] per segment) replaces the
        truncation rule; every segment then ends with [SEP].
        """
        seq_length = self.seq_length
        row_lengths = [segment.row_lengths() for segment in segments]
        with_sep = [tf.ones_like(row_lengths[0])] * len(segments)
        if lengths is None and len(segments) == 1:
            lengths = [tf.minimum(row_lengths[0], seq_length - 2)]
        elif lengths is None:
            has_b = row_lengths[1] > 0
            pair_a, pair_b = truncated_pair_lengths(
                row_lengths[0], row_lengths[1], seq_length - 3
            )
            lengths = [
                tf.where(has_b, pair_a, tf.minimum(row_lengths[0], seq_length - 2)),
                pair_b,
            ]
            with_sep[1] = tf.cast(has_b, tf.int64)
        # Never more than a row holds (as a prefix of the row would be).
        lengths = [
            tf.minimum(tf.cast(length, tf.int64), tf.cast(row_length, tf.int64))
            for length, row_length in zip(lengths, row_lengths, strict=True)
        ]
        # Row layout: [CLS] at 0, then per segment its kept tokens and its
        # [SEP]. Built with dense index arithmetic on the segments' flat
        # values: ragged concatenation and masking would add over a thousand
        # ops (most of them ragged validity checks) to every graph that
        # tokenizes, and tf.data instantiates that graph again for each
        # iterator (each epoch, evaluate and predict call).
        with_sep = [tf.cast(sep, tf.int64) for sep in with_sep]
        used = 1 + sum(lengths[i] + with_sep[i] for i in range(len(segments)))
        if self.padding == "max_length":
            width = seq_length
        else:
            # An empty batch still has [CLS] and [SEP] columns: the model
            # reads position 0 (the pooler), and gives 0 rows.
            width = tf.reduce_max(tf.concat([used, [2]], 0))
        position = tf.expand_dims(tf.range(width, dtype=tf.int64), 0)
        ids = tf.where(position == 0, tf.constant(self.cls_id, tf.int64), 0)
        ids = tf.tile(ids, tf.stack([tf.size(used), 1]))
        type_ids = tf.zeros_like(ids)
        begin = tf.ones_like(used)
        for index, segment in enumerate(segments):
            offset = position - tf.expand_dims(begin, 1)
            inside = (offset >= 0) & (offset < tf.expand_dims(lengths[index], 1))
            # A trailing zero keeps the gather in range where nothing is read.
            values = tf.concat(
                [tf.cast(segment.values, tf.int64), tf.zeros([1], tf.int64)], 0
            )
            starts = tf.cast(segment.row_starts(), tf.int64)
            flat = tf.expand_dims(starts, 1) + offset
            read = tf.gather(
                values, tf.where(inside, flat, tf.size(values, tf.int64) - 1)
            )
            ids = tf.where(inside, read, ids)
            sep = (offset == tf.expand_dims(lengths[index], 1)) & tf.expand_dims(
                with_sep[index] > 0, 1
            )
            ids = tf.where(sep, tf.constant(self.sep_id, tf.int64), ids)
            type_ids = tf.where(inside | sep, tf.constant(index, tf.int64), type_ids)
            begin = begin + lengths[index] + with_sep[index]
        mask = position < tf.expand_dims(used, 1)
        return {
            "input_ids": tf.cast(ids, tf.int32),
            "input_mask": tf.cast(mask, tf.int32),
            "segment_ids": tf.cast(type_ids, tf.int32),
        }

    def call(self, inputs):
        self._require_vocabulary()
        segments = _segments(inputs)
        strings = [_as_strings(s) for s in segments]
        # One example (scalar strings, as an unbatched tf.data.map passes
        # them) is packed as a batch of one and returned without the batch.
        scalar = all(s.shape.rank == 0 for s in strings)
        if scalar:
            strings = [tf.reshape(s, [1]) for s in strings]
        strings = [_as_batch(s) for s in strings]
        if len(strings) == 2:
            strings = same_batch_size(strings, ("first segment", "second segment"))
            # One tokenizer graph for both segments (half the ops of two).
            rows = tf.shape(strings[0], out_type=tf.int64)[0]
            ids = self.tokenize(tf.concat(strings, 0))
            segments = [ids[:rows], ids[rows:]]
        else:
            segments = [self.tokenize(strings[0])]
        packed = self.pack(segments)
        if scalar:
            return {key: value[0] for key, value in packed.items()}
        return packed

    def compute_output_spec(self, inputs):
        scalar = all(len(getattr(s, "shape", (None,))) == 0 for s in _segments(inputs))
        length = self.seq_length if self.padding == "max_length" else None
        shape = (length,) if scalar else (None, length)
        spec = keras.KerasTensor(shape, dtype="int32")
        return {"input_ids": spec, "input_mask": spec, "segment_ids": spec}

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocab_file": self.vocab_file,
                "do_lower_case": self.do_lower_case,
                "seq_length": self.seq_length,
                "tokenizer": self.tokenizer,
                "padding": self.padding,
                "strip_accents": self.strip_accents,
                "tokenize_chinese_chars": self.tokenize_chinese_chars,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        # From a `.keras` file, the vocabulary comes with the assets.
        return cls(**config, _vocabulary_from_assets=True)


def normalize_words(words, do_lower_case, strip_accents=None):
    """What the original's BasicTokenizer does to the characters of
    whitespace-free `words`: drops NUL, U+FFFD and control characters and,
    when lower-casing, lower-cases, decomposes (NFD) and drops the
    non-spacing marks. (Splitting at punctuation adds no characters.)
    `strip_accents` (None: as `do_lower_case`) decides the last two."""
    words = tf.strings.regex_replace(words, _CONTROL, "")
    if do_lower_case:
        words = tf.strings.lower(words, encoding="utf-8")
    if do_lower_case if strip_accents is None else strip_accents:
        words = text.normalize_utf8(words, "NFD")
        words = tf.strings.regex_replace(words, _NONSPACING_MARK, "")
    return words


def truncated_pair_lengths(length_a, length_b, budget):
    """Segment lengths after the original's `_truncate_seq_pair`.

    The original pops from the longer segment (from b on ties) until the pair
    fits `budget`. In closed form: nothing changes if it fits; a segment no
    longer than half the budget (b: floor, a: floor) keeps its length and the
    other gets the rest; otherwise a keeps ceil(budget/2) and b floor(budget/2).
    """
    length_a = tf.cast(length_a, tf.int64)
    length_b = tf.cast(length_b, tf.int64)
    budget = tf.cast(budget, tf.int64)
    half_down = budget // 2
    half_up = budget - half_down
    fits = length_a + length_b <= budget
    new_a = tf.where(
        fits | (length_a <= half_down),
        length_a,
        tf.where(length_b <= half_down, budget - length_b, half_up),
    )
    new_b = tf.where(
        fits | (length_b <= half_down),
        length_b,
        tf.where(length_a <= half_down, budget - length_a, half_down),
    )
    return [new_a, new_b]


def request_batch(texts, name):
    """`texts`, checked to be a [batch] vector when the graph runs.

    A SavedModel's string input is declared [batch], but a model server
    hands the graph the tensor a client sent as it is, and the tokenizer
    would read a [n, m] tensor as n * m rows. Any other shape than [batch] is
    an InvalidArgumentError naming the input (`name`, the op's name) and
    the shape. (An `EnsureShape` op: graph optimisation folds rank and size
    comparisons to the declared rank, and keeps this one.)
    """
    return tf.ensure_shape(texts, [None], name=f"{name}_must_be_a_batch_vector")


def same_batch_size(tensors, names):
    """`tensors`, checked to have as many rows as each other.

    A mismatch raises ValueError naming both inputs and sizes when the shapes
    are known, else fails at run time (InvalidArgumentError) with that
    message, before any tokenization.
    """
    first, first_name = tensors[0], names[0]
    checks = []
    for tensor, name in zip(tensors[1:], names[1:], strict=True):
        rows_a, rows_b = first.shape[0], tensor.shape[0]
        if rows_a is not None and rows_b is not None:
            if rows_a != rows_b:
                raise ValueError(
                    f"{first_name} has {rows_a} rows but {name} has {rows_b}: "
                    "they must have the same batch size"
                )
            continue
        size_a, size_b = tf.shape(first)[0], tf.shape(tensor)[0]
        message = tf.strings.format(
            f"{first_name} has {{}} rows but {name} has {{}}: they must have the "
            "same batch size",
            (size_a, size_b),
        )
        checks.append(tf.debugging.Assert(tf.equal(size_a, size_b), [message]))
    if not checks:
        return list(tensors)
    with tf.control_dependencies(checks):
        return [tf.identity(tensor) for tensor in tensors]


def concat_rows(pieces):
    """Row-wise concatenation of ragged [batch, (len)] tensors, as
    `tf.concat(pieces, axis=1)`.

    TensorFlow's own ragged concat permutes rows with an integer Transpose,
    which oneDNN builds log as an error line ("oneDNN supports DT_INT64 only
    on platforms with AVX-512") in every process that tokenizes; the same
    permutation is computed here with index arithmetic.
    """
    count = len(pieces)
    rows = pieces[0].nrows()
    stacked = tf.concat(pieces, axis=0)
    order = tf.range(rows * count)
    # Row i of piece p sits at p * rows + i; output row i takes pieces 0..count-1.
    permuted = tf.gather(stacked, (order % count) * rows + order // count)
    return tf.RaggedTensor.from_row_splits(
        permuted.values, permuted.row_splits[::count], validate=False
    )


def take_prefix(ragged, lengths):
    """The first `lengths[i]` values of each row of a 2-D ragged tensor."""
    positions = tf.ragged.range(ragged.row_lengths())
    return tf.ragged.boolean_mask(ragged, positions < tf.expand_dims(lengths, 1))


def repair_utf8(texts):
    # As the original's convert_to_unicode: bytes.decode("utf-8", "ignore").
    texts = tf.strings.unicode_transcode(
        texts, "UTF-8", "UTF-8", errors="ignore", replace_control_characters=False
    )
    # RegexSplitWithOffsets stops at a NUL byte; the original drops NULs anyway.
    return tf.strings.regex_replace(texts, r"\x{0}", "")


def input_byte_map(texts):
    """Where each byte of `repair_utf8(texts)` came from in `texts` [batch].

    Returns an int64 ragged [batch, repaired bytes + 1]: entry `i` of a row
    is the offset in the row as given of byte `i` of the repaired row; the
    last entry is the end of the row's last kept character (0 if none).
    `input_offsets` turns offsets in the repaired text (which tokenization
    and answer texts use) into offsets in the bytes a client sent.
    """
    codepoints, starts = tf.strings.unicode_decode_with_offsets(
        texts, "UTF-8", errors="ignore", replace_control_characters=False
    )
    # The characters repair_utf8 keeps: valid UTF-8, not NUL.
    keep = tf.not_equal(codepoints, 0)
    codepoints = tf.ragged.boolean_mask(codepoints, keep)
    starts = tf.ragged.boolean_mask(starts, keep)
    code = codepoints.flat_values
    size = tf.where(
        code < 0x80, 1, tf.where(code < 0x800, 2, tf.where(code < 0x10000, 3, 4))
    )
    size = tf.cast(size, tf.int64)
    per_byte = tf.repeat(starts.flat_values, size) + tf.ragged.range(size).flat_values
    row_bytes = tf.reduce_sum(codepoints.with_flat_values(size), axis=1)
    ends = tf.maximum(
        tf.reduce_max(starts.with_flat_values(starts.flat_values + size), axis=1), 0
    )
    per_byte = tf.RaggedTensor.from_row_lengths(per_byte, row_bytes)
    return concat_rows([per_byte, tf.RaggedTensor.from_tensor(ends[:, None])])


def input_offsets(byte_map, offsets, end):
    """`offsets` [batch, ...] in the repaired rows as offsets in the rows as
    given (`input_byte_map`); -1 stays -1. `end`: exclusive end offsets (they
    map to just after the byte before them, so dropped bytes after a span
    stay outside it)."""
    offsets = tf.cast(offsets, tf.int64)
    rank = offsets.shape.rank
    rows = tf.range(tf.shape(offsets, out_type=tf.int64)[0])
    rows = tf.reshape(rows, tf.concat([[-1], tf.ones([rank - 1], tf.int32)], 0))
    rows = tf.broadcast_to(rows, tf.shape(offsets, out_type=tf.int64))
    base = tf.gather(byte_map.row_starts(), rows)
    limit = tf.gather(byte_map.row_lengths(), rows) - 1
    at = tf.clip_by_value(offsets - 1 if end else offsets, 0, limit)
    mapped = tf.gather(byte_map.flat_values, base + at)
    if end:
        mapped = tf.where(offsets > 0, mapped + 1, mapped)
    return tf.where(offsets < 0, offsets, mapped)


def _segments(inputs):
    segments = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
    if not 1 <= len(segments) <= 2:
        raise ValueError(f"BertPreprocessor takes 1 or 2 segments, got {len(segments)}")
    return segments


def _as_strings(inputs):
    inputs = tf.convert_to_tensor(inputs)
    if inputs.dtype != tf.string:
        raise TypeError(f"BertPreprocessor expects strings, got {inputs.dtype.name}")
    return inputs


def _as_batch(inputs):
    if inputs.shape.rank == 2 and inputs.shape[1] == 1:
        inputs = tf.squeeze(inputs, axis=1)
    if inputs.shape.rank != 1:
        raise ValueError(
            f"BertPreprocessor expects a [batch] string tensor, got {inputs.shape}"
        )
    return inputs
