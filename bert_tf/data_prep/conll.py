"""CoNLL named-entity files: reading, tag schemes, and BERT tagging features.

Files come in the forms NER corpora use: one token per line, a blank line
between sentences, columns separated by tabs (when a line has a tab) or else
by spaces; the first column is the token and the last one its tag (CoNLL-2003:
`token POS chunk tag`; WNUT-17 and most others: `token<TAB>tag`); a file with
a single column holds tokens without tags (text to predict). `-DOCSTART-`
lines are document separators and are skipped.

Tags follow one of three schemes, named with `tag_scheme`:

- `iob1` (CoNLL-2003's original files): `I-X` inside or at the start of an
  entity; `B-X` only starts an entity right after another `X` entity.
- `iob2` (also called BIO): every entity starts with `B-X`.
- `bioes` (IOBES): `B-X` begins, `I-X` continues and `E-X` ends a multi-token
  entity; `S-X` is a one-token entity.

Every file is converted to IOB2, the scheme the model is trained on, through
its entities: entities are read as conlleval reads them (an `I-X` after `O`
or after another type starts an entity), so an ill-formed but unambiguous
sequence keeps its meaning. With `strict=True` such a sequence is an error
instead (e.g. `I-X` after `O` in an IOB2 file).

Features follow the BERT paper's tagging recipe: each word is cut into
WordPiece tokens with the original tokenizer, the first token of a word
carries the word's label and the others are ignored by the loss and the
metric. A sentence longer than `max_seq_length - 2` tokens is cut into windows
`doc_stride` tokens apart (as run_squad cuts documents); each word is scored
in exactly one window, the one where it has the most context on both sides
(the original's `_check_is_max_context` rule), so no word is dropped.
"""

import collections
import dataclasses

import numpy as np
from absl import logging

from bert_tf.data_prep.local_files import open_input_file
from bert_tf.data_prep.sliding_windows import check_window_and_stride
from bert_tf.data_prep.sliding_windows import window_starts
from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError

TAG_SCHEMES = ("iob1", "iob2", "bioes")
SCHEME_PREFIXES = {"iob1": "IB", "iob2": "IB", "bioes": "BIES"}
DOCSTART = "-DOCSTART-"
# Label id of the sub-tokens, special tokens and padding the loss ignores.
IGNORED_LABEL = -1


class ConllFormatError(UserInputError):
    """Bad input in a CoNLL file; the message starts with `file:line:`."""


@dataclasses.dataclass
class TaggedSentence:
    """One sentence: its words, their IOB2 tags (None without tags), and
    where it starts (`file:line`)."""

    words: list
    tags: list
    source: str


def read_conll(path, tag_scheme="iob2", strict=False):
    """Reads a CoNLL file into `TaggedSentence`s with IOB2 tags.

    Args:
        path: the file (UTF-8).
        tag_scheme: "iob1", "iob2" or "bioes": how the file's tags are written.
        strict: stop at an ill-formed tag sequence instead of reading it as
            conlleval does.

    Raises:
        ConllFormatError: `file:line: reason` for an undecodable line, an
            empty file, a line with another column count than the file's
            first one, or a tag outside the scheme.
    """
    if tag_scheme not in TAG_SCHEMES:
        raise UserInputError(
            f"tag_scheme must be one of {TAG_SCHEMES}, got {tag_scheme!r}"
        )
    with open_input_file(path) as f:
        raw_lines = f.read().split(b"\n")
    sentences, words, tags = [], [], []
    columns, start_line, repaired, docstarts = None, None, 0, 0

    def flush():
        nonlocal words, tags, repaired
        if words:
            source = f"{path}:{start_line}"
            if columns == 1:
                iob2 = None
            else:
                iob2, fixed = _to_iob2(tags, tag_scheme, strict, path, start_line)
                repaired += fixed
            sentences.append(TaggedSentence(words, iob2, source))
        words, tags = [], []

    for number, raw in enumerate(raw_lines, start=1):
        line = decode_line(raw, path, number, ConllFormatError).rstrip("\r\n")
        if not line.strip():
            flush()
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        fields = [field.strip() for field in fields]
        if fields[0] == DOCSTART:
            flush()
            docstarts += 1
            continue
        if columns is None:
            columns = len(fields)
        if len(fields) != columns:
            raise ConllFormatError(
                f"{path}:{number}: {len(fields)} columns, but the file's first "
                f"token line has {columns} ({line!r})"
            )
        if not fields[0] or (columns > 1 and not fields[-1]):
            raise ConllFormatError(f"{path}:{number}: empty token or tag ({line!r})")
        if columns > 1:
            _check_tag(fields[-1], tag_scheme, path, number)
            tags.append((fields[-1], number))
        if not words:
            start_line = number
        words.append(fields[0])
    flush()
    if not sentences:
        raise ConllFormatError(f"{path}:1: no token lines (empty file?)")
    logging.info(
        "%s: %d sentences, %d words, %d -DOCSTART- lines skipped, "
        "%d ill-formed tag transitions read as conlleval does",
        path,
        len(sentences),
        sum(len(s.words) for s in sentences),
        docstarts,
        repaired,
    )
    return sentences


def _check_tag(tag, scheme, path, number):
    if tag == "O":
        return
    prefix, sep, entity_type = tag.partition("-")
    if not sep or not entity_type or prefix not in SCHEME_PREFIXES[scheme]:
        allowed = ", ".join(f"{p}-TYPE" for p in SCHEME_PREFIXES[scheme])
        raise ConllFormatError(
            f"{path}:{number}: tag {tag!r} is not in the {scheme} scheme "
            f"(O, {allowed}; see tag_scheme)",
            argument="tag_scheme",
        )


def _to_iob2(numbered_tags, scheme, strict, path, first_line):
    """IOB2 tags of one sentence, and how many ill-formed transitions it had."""
    tags = [tag for tag, _ in numbered_tags]
    iob2 = canonical_tags(tags, "iob2")
    # The file's tags, rewritten from their entities in their own scheme, are
    # the file's tags exactly when the sequence was well-formed.
    canonical = canonical_tags(tags, scheme)
    bad = [i for i, (a, b) in enumerate(zip(tags, canonical, strict=True)) if a != b]
    if strict and bad:
        i = bad[0]
        where = f"after {tags[i - 1]!r}" if i else "at the sentence start"
        raise ConllFormatError(
            f"{path}:{numbered_tags[i][1]}: ill-formed {scheme} sequence: "
            f"{tags[i]!r} {where} (expected {canonical[i]!r}; "
            "strict_tags=False reads it as conlleval does)",
            argument="strict_tags",
        )
    return iob2, len(bad)


def entity_spans(tags):
    """(type, first, last) of each entity in `tags`, as conlleval reads them.

    Works for IOB1, IOB2 and BIOES alike, and for ill-formed sequences.
    """
    from bert_tf.metrics.entity import get_entities

    return get_entities(list(tags))


def spans_to_tags(spans, length, scheme):
    """Writes entity spans `(type, first, last)` as tags of `scheme`."""
    tags = ["O"] * length
    for entity_type, first, last in spans:
        for i in range(first, last + 1):
            tags[i] = f"I-{entity_type}"
        if scheme == "iob2":
            tags[first] = f"B-{entity_type}"
        elif scheme == "bioes":
            if first == last:
                tags[first] = f"S-{entity_type}"
            else:
                tags[first] = f"B-{entity_type}"
                tags[last] = f"E-{entity_type}"
    if scheme == "iob1":
        # B- only where an entity directly follows one of the same type.
        ends = {(entity_type, last) for entity_type, _, last in spans}
        for entity_type, first, _ in spans:
            if (entity_type, first - 1) in ends:
                tags[first] = f"B-{entity_type}"
    return tags


def canonical_tags(tags, scheme):
    """`tags` rewritten from their entities in `scheme` (well-formed)."""
    return spans_to_tags(entity_spans(tags), len(tags), scheme)


def label_list_from(sentences, entity_types=None):
    """IOB2 tags in label-id order: O, then B-/I- of each entity type.

    The types are `entity_types` when given (and every tag must use one), else
    those of `sentences`, sorted.
    """
    seen = collections.OrderedDict()
    for sentence in sentences:
        for i, tag in enumerate(sentence.tags or ()):
            if tag != "O":
                seen.setdefault(tag[2:], f"{sentence.source} (word {i + 1})")
    if entity_types:
        unknown = [t for t in seen if t not in entity_types]
        if unknown:
            raise ConllFormatError(
                f"{seen[unknown[0]]}: entity type {unknown[0]!r} is not in "
                f"labels={','.join(entity_types)}",
                argument="labels",
            )
        types = list(entity_types)
    else:
        types = sorted(seen)
    return ["O"] + [f"{p}-{t}" for t in types for p in "BI"]


def check_labels(sentences, label_list, path):
    """Every tag of `sentences` must be in `label_list` (the training file's)."""
    known = set(label_list)
    for sentence in sentences:
        for i, tag in enumerate(sentence.tags or ()):
            if tag not in known:
                raise ConllFormatError(
                    f"{sentence.source}: {path} has entity type {tag[2:]!r} (word "
                    f"{i + 1}), which the training file does not have; give the "
                    "types with labels=",
                    argument="labels",
                )


@dataclasses.dataclass
class TaggingFeatures:
    """Model inputs of a list of sentences, as int32 arrays [windows, seq].

    `label_ids` is the label of each scored position (IGNORED_LABEL
    elsewhere); `word_index` is, for each scored position, the index of its
    word in its sentence (-1 elsewhere); `sentence_index` [windows] is the
    sentence each window comes from; `counts` are the logged counts (words,
    tokens, windows, ...). Each word is scored in exactly one window.
    """

    input_ids: np.ndarray
    input_mask: np.ndarray
    segment_ids: np.ndarray
    label_ids: np.ndarray
    word_index: np.ndarray
    sentence_index: np.ndarray
    counts: dict = dataclasses.field(default_factory=dict)

    def model_inputs(self):
        return {
            "input_ids": self.input_ids,
            "input_mask": self.input_mask,
            "segment_ids": self.segment_ids,
            "label_ids": self.label_ids,
        }


def convert_sentences_to_features(
    sentences, label_list, max_seq_length, tokenizer, doc_stride
):
    """`TaggingFeatures` of `sentences`; logs how many words were split, empty,
    and how many sentences needed more than one window."""
    window = max_seq_length - 2  # [CLS] and [SEP]
    check_window_and_stride(
        window,
        doc_stride,
        "max_seq_length - 2",
        "doc_stride",
        {"window": "max_seq_length", "stride": ("doc_stride", "max_seq_length")},
    )
    label_map = {label: i for i, label in enumerate(label_list)}
    cls_id, sep_id = tokenizer.convert_tokens_to_ids(["[CLS]", "[SEP]"])
    rows = collections.defaultdict(list)
    counts = collections.Counter()
    for sentence_index, sentence in enumerate(sentences):
        tokens, first_token = [], []
        for word in sentence.words:
            pieces = tokenizer.tokenize(word)
            if not pieces:
                counts["words without tokens (given [UNK])"] += 1
                pieces = ["[UNK]"]
            first_token.append(len(tokens))
            tokens.extend(pieces)
        counts["words"] += len(sentence.words)
        counts["tokens"] += len(tokens)
        ids = tokenizer.convert_tokens_to_ids(tokens)
        starts = window_starts(len(tokens), window, doc_stride)
        if len(starts) > 1:
            counts["sentences cut into windows"] += 1
        # Each word's first token is scored in the window where it has most
        # context: the largest min(left, right), ties to the longer window.
        best = {}
        for w, start in enumerate(starts):
            length = min(window, len(tokens) - start)
            for word, position in enumerate(first_token):
                if start <= position < start + length:
                    score = min(position - start, start + length - 1 - position)
                    score += 0.01 * length
                    if word not in best or score > best[word][0]:
                        best[word] = (score, w)
        for w, start in enumerate(starts):
            length = min(window, len(tokens) - start)
            labels = np.full(max_seq_length, IGNORED_LABEL, np.int32)
            word_index = np.full(max_seq_length, -1, np.int32)
            for word, position in enumerate(first_token):
                if best[word][1] == w:
                    word_index[position - start + 1] = word
                    if sentence.tags is not None:
                        labels[position - start + 1] = label_map[sentence.tags[word]]
            input_ids = np.zeros(max_seq_length, np.int32)
            input_ids[: length + 2] = [cls_id, *ids[start : start + length], sep_id]
            mask = np.zeros(max_seq_length, np.int32)
            mask[: length + 2] = 1
            rows["input_ids"].append(input_ids)
            rows["input_mask"].append(mask)
            rows["label_ids"].append(labels)
            rows["word_index"].append(word_index)
            rows["sentence_index"].append(sentence_index)
        counts["windows"] += len(starts)
    logging.info(
        "Features: %d sentences -> %s",
        len(sentences),
        ", ".join(f"{count} {name}" for name, count in counts.items()),
    )
    input_ids = np.stack(rows["input_ids"])
    return TaggingFeatures(
        input_ids=input_ids,
        input_mask=np.stack(rows["input_mask"]),
        segment_ids=np.zeros_like(input_ids),
        label_ids=np.stack(rows["label_ids"]),
        word_index=np.stack(rows["word_index"]),
        sentence_index=np.array(rows["sentence_index"], np.int32),
        counts=dict(counts),
    )


def words_predictions(features, position_label_ids, sentences):
    """The label id of every word of every sentence, from per-position ids
    [windows, seq]; each word is read from its scoring window."""
    predicted = [[None] * len(s.words) for s in sentences]
    for row in range(len(features.sentence_index)):
        sentence = predicted[features.sentence_index[row]]
        for position in np.flatnonzero(features.word_index[row] >= 0):
            sentence[features.word_index[row, position]] = int(
                position_label_ids[row, position]
            )
    missing = sum(p is None for s in predicted for p in s)
    if missing:
        raise AssertionError(f"{missing} words have no prediction")
    return predicted


def write_predictions(path, sentences, predicted_tags, scheme):
    """CoNLL lines `token [gold] predicted`, tags in `scheme`, a blank line
    after each sentence: the input conlleval re-scores."""
    with open(path, "w", encoding="utf-8") as f:
        for sentence, predicted in zip(sentences, predicted_tags, strict=True):
            predicted = canonical_tags(predicted, scheme)
            gold = sentence.tags
            if gold is not None:
                gold = canonical_tags(gold, scheme)
            for i, word in enumerate(sentence.words):
                columns = [word] + ([gold[i]] if gold is not None else [])
                f.write(" ".join(columns + [predicted[i]]) + "\n")
            f.write("\n")


__all__ = [
    "ConllFormatError",
    "IGNORED_LABEL",
    "TAG_SCHEMES",
    "TaggedSentence",
    "TaggingFeatures",
    "canonical_tags",
    "check_labels",
    "convert_sentences_to_features",
    "entity_spans",
    "label_list_from",
    "read_conll",
    "spans_to_tags",
    "window_starts",
    "words_predictions",
    "write_predictions",
]
