"""`TaggerSignatures`: the SavedModel signatures of a `BertTokenClassifier`
(named-entity tagger).

`serving_default` takes raw `text` [batch] (tokenized in the graph by
`BertPreprocessor`, cut to `seq_length - 2` word pieces) and returns:

- `logits` [B, L, tags] and `tag_ids` [B, L] (argmax at every position; for
  a CRF tagger, `BertTokenClassifier(crf=True)`, the Viterbi path over the
  words at their first pieces, in the graph);
- `tags` [B, L]: the predicted tag at the first word piece of each word,
  "" elsewhere (continuation pieces, [CLS], [SEP], padding) — the BERT
  paper's recipe, as run_ner.py trains; a word is what the original's basic
  tokenizer makes (whitespace- and punctuation-split pieces);
- `token_start`, `token_end` [B, L]: each position's UTF-8 byte span in the
  text as the client sent it (-1 outside it), from
  `BertPreprocessor.tokenize_with_offsets`; NUL bytes and invalid UTF-8,
  which the tokenizer drops, count, so slicing the request's text there
  gives the piece (and at `entity_start`/`entity_end` the entity);
- the entities, read from the word tags as conlleval reads them (an `I-X`
  after `O` or another type starts an entity), padded to the most entities
  of the batch: `entity_type` (string, "" padding), `entity_text`,
  `entity_start` / `entity_end` (byte offsets in the text as sent, end
  exclusive, -1 padding; `entity_text` is those bytes without NUL and
  invalid UTF-8), `entity_score` (mean probability of the entity's word tags,
  by the softmax of their logits; 0 padding), and `num_entities` [B].

`serve_tokenized` takes int32 `input_ids`, `input_mask`, `segment_ids` and
returns `logits`, `tag_ids` and `tags` (word starts found from the ids: not a
`##` piece, not [CLS]/[SEP]/padding).
"""

import tensorflow as tf

from bert_tf.serving.signature_module import SignatureModule
from bert_tf.serving.signature_module import model_inputs
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import concat_rows
from bert_tf.text.preprocessing import input_byte_map
from bert_tf.text.preprocessing import input_offsets
from bert_tf.text.preprocessing import repair_utf8
from bert_tf.text.preprocessing import request_batch
from bert_tf.text.preprocessing import take_prefix

# Tag prefixes, as codes: the model's labels are IOB2 tags.
_OUTSIDE, _BEGIN, _INSIDE = 0, 1, 2


def parse_iob2_labels(label_list):
    """(prefix codes, type index per label, entity types) of IOB2 tags."""
    prefixes, type_index, types = [], [], []
    for label in label_list:
        if label == "O":
            prefixes.append(_OUTSIDE)
            type_index.append(-1)
            continue
        prefix, sep, entity_type = label.partition("-")
        if prefix not in ("B", "I") or not sep or not entity_type:
            raise ValueError(
                f"tagger labels must be IOB2 tags (O, B-TYPE, I-TYPE), got {label!r}"
            )
        if entity_type not in types:
            types.append(entity_type)
        prefixes.append(_BEGIN if prefix == "B" else _INSIDE)
        type_index.append(types.index(entity_type))
    return prefixes, type_index, types


class TaggerSignatures(SignatureModule):
    """The tagger's `serving_default` (raw `text`) and `serve_tokenized`.

    Args:
        model: a `BertTokenClassifier`.
        preprocessor: its `BertPreprocessor`.
        label_list: the model's IOB2 tags in label-id order (required).

    Example:
    >>> module = TaggerSignatures(model, preprocessor, ["O", "B-PER", "I-PER"])
    >>> module.serve_text(tf.constant(["Ada Lovelace wrote it."]))["entity_text"]
    """

    family = "tagger"

    def __init__(self, model, preprocessor, label_list=None):
        if label_list is None or len(label_list) != model.num_labels:
            raise ValueError(
                f"a tagger export needs its {model.num_labels} IOB2 tags in label "
                f"order (label_list), got {label_list!r}"
            )
        super().__init__(model, preprocessor)
        self.labels = [str(label) for label in label_list]
        prefixes, type_index, self.types = parse_iob2_labels(self.labels)
        self._prefix = tf.constant(prefixes, tf.int32)
        self._type = tf.constant(type_index, tf.int32)
        vocab = tokenization.load_vocab(preprocessor.vocab_file)
        continuation = [False] * (max(vocab.values()) + 1)
        for token, index in vocab.items():
            continuation[index] = token.startswith("##")
        self._continuation = tf.constant(continuation, tf.bool)

    def text_endpoint(self):
        return self.serve_text, [tf.TensorSpec([None], tf.string, "text")]

    def tokenize_for_warmup(self, inputs):
        return self.preprocessor(inputs["text"])

    def _tags(self, inputs, word_start):
        logits = tf.cast(self.model(inputs, training=False)["logits"], tf.float32)
        tag_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
        crf = getattr(self.model, "crf", None)
        # A LiteRT file's graph: builtin ops only (no TensorLists, no
        # string select).
        builtin = getattr(self.preprocessor, "builtin_ops", False)
        if crf is not None:
            # The chain runs over the words, as run_ner.py trains it.
            decode = crf.decode_in_place if builtin else crf.decode
            tag_ids = tf.where(word_start, decode(logits, word_start), tag_ids)
        if builtin:
            # A gather of a string table ("" at num_labels), not a select.
            none = tf.fill(tf.shape(tag_ids), len(self.labels))
            table = tf.constant([*self.labels, ""])
            tags = tf.gather(table, tf.where(word_start, tag_ids, none))
        else:
            tags = tf.where(
                word_start, tf.gather(tf.constant(self.labels), tag_ids), ""
            )
        return logits, tag_ids, tags

    def litert_metadata(self):
        """The family's entries of a LiteRT file's metadata."""
        crf = getattr(self.model, "crf", None)
        decoding = "argmax"
        if crf is not None:
            decoding = "viterbi_iob2" if crf.iob2_labels else "viterbi"
        return {"labels": self.labels, "decoding": decoding}

    def metadata(self):
        return {**super().metadata(), **self.litert_metadata()}

    def litert_text_endpoint(self):
        """A LiteRT file's `serving_default` over a `LiteRTPreprocessor`:
        `logits`, `tag_ids`, `tags` and each position's byte span
        (`token_start`, `token_end`, -1 outside the text); the entities are
        read outside the file (`LiteRTModel.entities`)."""

        def serve_text(text):
            ids, lengths, starts, ends = self.preprocessor.tokenize(text)
            inputs, token_index, _ = self.preprocessor.pack([(ids, lengths)])
            in_text = token_index >= 0
            word_start = in_text & ~tf.gather(self._continuation, inputs["input_ids"])
            logits, tag_ids, tags = self._tags(inputs, word_start)
            return {
                "logits": logits,
                "tag_ids": tag_ids,
                "tags": tags,
                "token_start": self.preprocessor.at_positions(
                    starts, token_index, in_text
                ),
                "token_end": self.preprocessor.at_positions(ends, token_index, in_text),
            }

        return serve_text, self.text_endpoint()[1]

    def serve_tokenized(self, input_ids, input_mask, segment_ids):
        inputs = model_inputs(input_ids, input_mask, segment_ids)
        special = (input_ids == self.preprocessor.cls_id) | (
            input_ids == self.preprocessor.sep_id
        )
        word_start = (
            (input_mask > 0) & ~special & ~tf.gather(self._continuation, input_ids)
        )
        logits, tag_ids, tags = self._tags(inputs, word_start)
        return {"logits": logits, "tag_ids": tag_ids, "tags": tags}

    def serve_text(self, text):
        # Entity texts are cut from the repaired text; the offsets are then
        # moved to the bytes the client sent.
        text = request_batch(text, "text")
        byte_map = input_byte_map(text)
        text = repair_utf8(text)
        seq_length = self.preprocessor.seq_length
        ids, starts, ends = self.preprocessor.tokenize_with_offsets(text)
        length = tf.minimum(ids.row_lengths(), seq_length - 2)
        inputs = self.preprocessor.pack([ids], lengths=[length])
        # As wide as the packed ids: seq_length, or the request's longest row
        # with padding="longest".
        shape = tf.shape(inputs["input_ids"], out_type=tf.int64)

        def at_positions(values):
            # [CLS] first, then the kept pieces; -1 for [SEP] and padding.
            lead = tf.fill([tf.shape(length)[0], 1], tf.constant(-1, tf.int64))
            kept = take_prefix(values, length)
            rows = concat_rows([tf.RaggedTensor.from_tensor(lead), kept])
            return rows.to_tensor(-1, shape=shape)

        token_start, token_end = at_positions(starts), at_positions(ends)
        in_text = token_start >= 0
        word_start = in_text & ~tf.gather(self._continuation, inputs["input_ids"])
        logits, tag_ids, tags = self._tags(inputs, word_start)
        # The chosen tag's probability (the argmax's, unless a CRF chose).
        probability = tf.gather(tf.nn.softmax(logits, axis=-1), tag_ids, batch_dims=2)
        entities = self._entities(
            text, in_text, word_start, tag_ids, probability, token_start, token_end
        )
        outputs = {
            "logits": logits,
            "tag_ids": tag_ids,
            "tags": tags,
            "token_start": token_start,
            "token_end": token_end,
            **entities,
        }
        for name in ("token", "entity"):
            for side in ("start", "end"):
                outputs[f"{name}_{side}"] = input_offsets(
                    byte_map, outputs[f"{name}_{side}"], end=side == "end"
                )
        return outputs

    def _entities(
        self, text, in_text, word_start, tag_ids, probability, token_start, token_end
    ):
        """Entities of the word tags, as conlleval reads them, padded per row."""
        batch = tf.shape(text, out_type=tf.int64)[0]
        where = tf.where(in_text)  # row-major: [positions, 2]
        starts_word = tf.gather_nd(word_start, where)
        # Every row's first piece starts a word, so words never span rows.
        token_word = tf.cumsum(tf.cast(starts_word, tf.int32)) - 1
        num_words = tf.reduce_sum(tf.cast(starts_word, tf.int32))
        word_row = tf.math.unsorted_segment_max(where[:, 0], token_word, num_words)
        word_begin = tf.math.unsorted_segment_min(
            tf.gather_nd(token_start, where), token_word, num_words
        )
        word_end = tf.math.unsorted_segment_max(
            tf.gather_nd(token_end, where), token_word, num_words
        )
        at_words = tf.boolean_mask(where, starts_word)
        word_tag = tf.gather_nd(tag_ids, at_words)
        word_probability = tf.gather_nd(probability, at_words)
        prefix = tf.gather(self._prefix, word_tag)
        entity_type = tf.gather(self._type, word_tag)
        # The previous word of the same row (none: O).
        first_of_row = (word_row != tf.roll(word_row, 1, axis=0)) | (
            tf.range(num_words) == 0
        )
        prev_prefix = tf.where(first_of_row, _OUTSIDE, tf.roll(prefix, 1, axis=0))
        prev_type = tf.where(first_of_row, -1, tf.roll(entity_type, 1, axis=0))
        inside = prefix != _OUTSIDE
        begins = (prefix == _BEGIN) | (
            inside & ((prev_prefix == _OUTSIDE) | (prev_type != entity_type))
        )
        entity_of_word = tf.cumsum(tf.cast(begins, tf.int32)) - 1
        num_entities = tf.reduce_sum(tf.cast(begins, tf.int32))
        ids = tf.boolean_mask(entity_of_word, inside)

        def per_entity(values, reduce):
            return reduce(tf.boolean_mask(values, inside), ids, num_entities)

        row = per_entity(word_row, tf.math.unsorted_segment_max)
        begin = per_entity(word_begin, tf.math.unsorted_segment_min)
        end = per_entity(word_end, tf.math.unsorted_segment_max)
        score = per_entity(word_probability, tf.math.unsorted_segment_mean)
        type_name = tf.gather(
            tf.constant(self.types or [""]),
            per_entity(entity_type, tf.math.unsorted_segment_max),
        )
        entity_text = tf.strings.substr(
            tf.gather(text, row), begin, end - begin, unit="BYTE"
        )

        def padded(values, default):
            ragged = tf.RaggedTensor.from_value_rowids(values, row, nrows=batch)
            return ragged.to_tensor(default)

        return {
            "entity_type": padded(type_name, ""),
            "entity_text": padded(entity_text, ""),
            "entity_start": padded(begin, tf.constant(-1, tf.int64)),
            "entity_end": padded(end, tf.constant(-1, tf.int64)),
            "entity_score": padded(score, 0.0),
            "num_entities": tf.math.bincount(
                tf.cast(row, tf.int32),
                minlength=tf.cast(batch, tf.int32),
                maxlength=tf.cast(batch, tf.int32),
            ),
        }
