"""SQuAD reading, feature conversion and TFRecords of ``run_squad.py``.

Reproduces the data side of google-research/bert's ``run_squad.py``:
``SquadExample``, ``read_squad_examples``, ``InputFeatures``,
``convert_examples_to_features`` (also as the generator `generate_features`:
query truncation, sliding document windows, ``_improve_answer_span``,
``_check_is_max_context``, training targets) and ``FeatureWriter``, which
writes the original's TFRecord schema (`write_features` streams examples to
it, one feature at a time):

===============  =======  ==============  ==========================
feature          dtype    shape           written
===============  =======  ==============  ==========================
unique_ids       int64    scalar          always (from 1000000000)
input_ids        int64    [seq_length]    always
input_mask       int64    [seq_length]    always
segment_ids      int64    [seq_length]    always
start_positions  int64    scalar          training
end_positions    int64    scalar          training
is_impossible    int64    scalar          training (never parsed)
===============  =======  ==============  ==========================

On every file the original can read, examples and features are identical.
Differences, all on inputs where the original crashed or said nothing:

* Malformed JSON, bytes that are not UTF-8, a missing field, a question id
  used twice or an answer offset outside its context raises
  `bert_tf.errors.UserInputError` (a ValueError) naming the file and the
  question id (or the article, paragraph and question index where there is
  no id), instead of a bare KeyError/IndexError/UnicodeDecodeError or, for a
  repeated id, a prediction silently lost.
* A SQuAD 2.0 file (a question marked ``is_impossible``) read without
  ``version_2_with_negative``, or a labelled 1.1 file (no ``is_impossible``
  field) read with it, raises naming the flag, instead of failing later in
  scoring.
* Answers skipped because their text is not in the context (as the original
  does) are counted: the returned list has ``num_skipped_answers`` and
  ``skipped_answers`` (question ids), and the count is logged at the end.
* ``first_answer_only=True`` reads training targets from the first gold answer
  of questions that have several (dev sets), for oracle tests and for training
  on dev-style files; the original required exactly one answer.
* A window budget ``max_seq_length - len(query) - 3`` below 1 raises instead of
  looping forever.
"""

import array
import collections
import collections.abc
import dataclasses
import json

import tensorflow as tf
from absl import logging

from bert_tf.data_prep.local_files import check_not_a_pipe
from bert_tf.data_prep.sliding_windows import window_starts
from bert_tf.errors import UserInputError
from bert_tf.text import tokenization

__all__ = [
    "FIRST_UNIQUE_ID",
    "FeatureWriter",
    "InputFeatures",
    "SquadExample",
    "SquadExamples",
    "convert_examples_to_features",
    "feature_spec",
    "generate_features",
    "is_whitespace",
    "parse_squad_record",
    "read_squad_examples",
    "write_features",
]

FIRST_UNIQUE_ID = 1000000000

# How many examples convert_examples_to_features logs in full, as the original.
_NUM_LOGGED_EXAMPLES = 20


@dataclasses.dataclass
class SquadExample:
    """One question with its (whitespace-split) context.

    For prediction examples, or impossible ones, ``orig_answer_text`` is None
    (resp. "") and positions are None (resp. -1). Positions index
    ``doc_tokens`` (whitespace words), inclusive.
    """

    qas_id: str
    question_text: str
    doc_tokens: list
    orig_answer_text: str | None = None
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool = False

    def __str__(self):
        parts = [
            f"qas_id: {tokenization.printable_text(self.qas_id)}",
            f"question_text: {tokenization.printable_text(self.question_text)}",
            f"doc_tokens: [{' '.join(self.doc_tokens)}]",
        ]
        if self.start_position is not None:
            parts.append(f"start_position: {self.start_position}")
            parts.append(f"end_position: {self.end_position}")
            parts.append(f"is_impossible: {self.is_impossible}")
        return ", ".join(parts)


class SquadExamples(list):
    """The list of examples read from a file, with what was skipped.

    Attributes:
      num_skipped_answers: answers whose text was not found in the context;
        their questions are not in the list (the original's behaviour).
      skipped_answers: the question ids of those.
    """

    def __init__(self, *args):
        super().__init__(*args)
        self.skipped_answers = []

    @property
    def num_skipped_answers(self):
        return len(self.skipped_answers)


def is_whitespace(c):
    """The original's whitespace for splitting contexts (not str.isspace)."""
    return c in (" ", "\t", "\r", "\n") or ord(c) == 0x202F


def _split_context(paragraph_text):
    """Returns (doc_tokens, char_to_word_offset) of a context."""
    doc_tokens = []
    char_to_word_offset = []
    prev_is_whitespace = True
    for c in paragraph_text:
        if is_whitespace(c):
            prev_is_whitespace = True
        else:
            if prev_is_whitespace:
                doc_tokens.append(c)
            else:
                doc_tokens[-1] += c
            prev_is_whitespace = False
        # Whitespace maps to the word before it (-1 before the first word).
        char_to_word_offset.append(len(doc_tokens) - 1)
    return doc_tokens, char_to_word_offset


def _field(obj, key, input_file, where, kind=None):
    """obj[key], or a UserInputError naming the file and `where`."""
    if not isinstance(obj, dict):
        raise UserInputError(
            f"{input_file}: {where}: expected a JSON object, got {type(obj).__name__}"
        )
    if key not in obj:
        raise UserInputError(f"{input_file}: {where}: missing field {key!r}")
    value = obj[key]
    if kind is not None and not isinstance(value, kind):
        raise UserInputError(
            f"{input_file}: {where}: field {key!r} has type {type(value).__name__}"
        )
    return value


def _load_json(input_file):
    if "://" not in input_file:
        check_not_a_pipe(input_file)
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        data = reader.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise UserInputError(
            f"{input_file}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x} at "
            f"offset {exc.start}); SQuAD files are UTF-8 JSON"
        ) from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UserInputError(
            f"{input_file}:{exc.lineno}:{exc.colno}: malformed JSON: {exc.msg}"
        ) from exc


def _check_version(input_file, dataset, version_2_with_negative):
    """A SQuAD 2.0 file needs version_2_with_negative, a 1.1 file must not
    have it: scored the other way, the answers and the metric disagree."""
    questions = [
        qa
        for entry in dataset
        if isinstance(entry, dict)
        for paragraph in entry.get("paragraphs") or ()
        if isinstance(paragraph, dict)
        for qa in paragraph.get("qas") or ()
        if isinstance(qa, dict)
    ]
    impossible = next((qa for qa in questions if qa.get("is_impossible")), None)
    if impossible is not None and not version_2_with_negative:
        raise UserInputError(
            f"{input_file}: question id {impossible.get('id')!r} has no answer "
            "(is_impossible): this is a SQuAD 2.0 file; pass "
            "version_2_with_negative=True",
            argument="version_2_with_negative",
        )
    labelled = any(qa.get("answers") for qa in questions)
    marked = any("is_impossible" in qa for qa in questions)
    if version_2_with_negative and labelled and not marked:
        raise UserInputError(
            f"{input_file}: no question has an 'is_impossible' field: this is a "
            "SQuAD 1.1 file; pass version_2_with_negative=False",
            argument="version_2_with_negative",
        )


def read_squad_examples(
    input_file, is_training, version_2_with_negative=False, first_answer_only=False
):
    """Reads a SQuAD json file into a list of `SquadExample`.

    Args:
      input_file: SQuAD json path (``{"data": [{"paragraphs": [...]}]}``).
      is_training: read answers and compute word positions. A question must
        then have exactly one answer unless it is impossible (UserInputError).
        In prediction mode answers are not read at all.
      version_2_with_negative: read ``is_impossible`` (SQuAD 2.0) when
        training; impossible questions get positions -1 and text "".
      first_answer_only: when training, take the first of several gold
        answers instead of raising (for dev files, e.g. oracle tests).

    Returns:
      A `SquadExamples` list; answers not found in their context are skipped
      with a warning, and counted in ``num_skipped_answers``.

    Raises:
      UserInputError (a ValueError): malformed JSON or UTF-8, a missing
        field, a repeated question id, a SQuAD version that does not match
        `version_2_with_negative`, a wrong answer count or an
        answer offset outside the context, naming the file and question id.
    """
    input_data = _field(_load_json(input_file), "data", input_file, "top level", list)
    _check_version(input_file, input_data, version_2_with_negative)
    examples = SquadExamples()
    # Question id -> where it was first seen: predictions are keyed by id, so
    # a repeated id would silently lose one.
    seen_ids = {}
    for article_index, entry in enumerate(input_data):
        article_where = f"data[{article_index}]"
        paragraphs = _field(entry, "paragraphs", input_file, article_where, list)
        for paragraph_index, paragraph in enumerate(paragraphs):
            where = f"{article_where}.paragraphs[{paragraph_index}]"
            paragraph_text = _field(paragraph, "context", input_file, where, str)
            qas = _field(paragraph, "qas", input_file, where, list)
            doc_tokens, char_to_word_offset = _split_context(paragraph_text)
            for qa_index, qa in enumerate(qas):
                qa_where = f"{where}.qas[{qa_index}]"
                qas_id = _field(qa, "id", input_file, qa_where)
                if qas_id in seen_ids:
                    raise UserInputError(
                        f"{input_file}: question id {qas_id!r} appears twice: "
                        f"{seen_ids[qas_id]} and {qa_where}"
                    )
                seen_ids[qas_id] = qa_where
                qa_where = f"question id {qas_id!r}"
                question_text = _field(qa, "question", input_file, qa_where, str)
                start_position = None
                end_position = None
                orig_answer_text = None
                is_impossible = False
                if is_training:
                    if version_2_with_negative:
                        is_impossible = bool(
                            _field(qa, "is_impossible", input_file, qa_where)
                        )
                    if not is_impossible:
                        answers = _field(qa, "answers", input_file, qa_where, list)
                        if len(answers) != 1 and not (first_answer_only and answers):
                            raise UserInputError(
                                f"{input_file}: {qa_where}: for training, each "
                                "question should have exactly 1 answer, got "
                                f"{len(answers)} (run_squad.py "
                                "--train_answer=first trains on the first)"
                            )
                        answer = answers[0]
                        orig_answer_text = _field(
                            answer, "text", input_file, qa_where, str
                        )
                        answer_offset = _field(
                            answer, "answer_start", input_file, qa_where, int
                        )
                        answer_end = answer_offset + len(orig_answer_text) - 1
                        if (
                            not orig_answer_text
                            or answer_offset < 0
                            or answer_end >= len(char_to_word_offset)
                        ):
                            raise UserInputError(
                                f"{input_file}: {qa_where}: answer "
                                f"{orig_answer_text!r} at {answer_offset} is "
                                f"outside the context ({len(paragraph_text)} "
                                "characters)"
                            )
                        start_position = char_to_word_offset[answer_offset]
                        end_position = char_to_word_offset[answer_end]
                        # Only answers recoverable from the document are kept:
                        # a mismatch means an offset or normalisation problem
                        # in the data, which would train on the wrong span.
                        actual_text = " ".join(
                            doc_tokens[start_position : end_position + 1]
                        )
                        cleaned_answer_text = " ".join(
                            tokenization.whitespace_tokenize(orig_answer_text)
                        )
                        if start_position < 0 or (
                            actual_text.find(cleaned_answer_text) == -1
                        ):
                            logging.warning(
                                "Could not find answer: '%s' vs. '%s' (%s)",
                                actual_text,
                                cleaned_answer_text,
                                qas_id,
                            )
                            examples.skipped_answers.append(qas_id)
                            continue
                    else:
                        start_position = -1
                        end_position = -1
                        orig_answer_text = ""
                examples.append(
                    SquadExample(
                        qas_id=qas_id,
                        question_text=question_text,
                        # Shared by the questions of a paragraph, which lets
                        # feature conversion tokenize each context once.
                        doc_tokens=doc_tokens,
                        orig_answer_text=orig_answer_text,
                        start_position=start_position,
                        end_position=end_position,
                        is_impossible=is_impossible,
                    )
                )
    if examples.skipped_answers:
        logging.warning(
            "%s: skipped %d question(s) whose answer text is not in the "
            "context (first: %s)",
            input_file,
            examples.num_skipped_answers,
            ", ".join(str(q) for q in examples.skipped_answers[:5]),
        )
    if not examples:
        # Else training stops later at "0 examples / batch" without the file,
        # and a prediction run writes empty predictions.
        raise UserInputError(
            f"{input_file}: no question to read (data holds no paragraph with a "
            "question, or every answer was skipped)"
        )
    logging.info("%s: read %d examples", input_file, len(examples))
    return examples


@dataclasses.dataclass
class InputFeatures:
    """One window of one example, padded to max_seq_length.

    ``token_to_orig_map`` and ``token_is_max_context`` are keyed by position in
    ``tokens`` and hold doc tokens only (`DocPositionMap`s: read-only
    mappings). Positions are None in prediction mode.
    """

    unique_id: int
    example_index: int
    doc_span_index: int
    tokens: list
    token_to_orig_map: dict
    token_is_max_context: dict
    input_ids: list
    input_mask: list
    segment_ids: list
    start_position: int | None = None
    end_position: int | None = None
    is_impossible: bool | None = None


DocSpan = collections.namedtuple("DocSpan", ["start", "length"])


class DocPositionMap(collections.abc.Mapping):
    """A read-only ``{position in tokens: value}`` over one window's document
    tokens (consecutive positions from `start`), kept as one array.

    The prediction features of a whole dev set stay in memory until the
    predictions are written; as dicts, these two maps per window were most of
    that memory.
    """

    __slots__ = ("convert", "entries", "start")

    def __init__(self, start, entries, convert=int):
        self.start = start
        self.entries = entries
        self.convert = convert

    def __getitem__(self, position):
        index = position - self.start
        if 0 <= index < len(self.entries):
            return self.convert(self.entries[index])
        raise KeyError(position)

    def __len__(self):
        return len(self.entries)

    def __iter__(self):
        return iter(range(self.start, self.start + len(self.entries)))

    def __repr__(self):
        return repr(dict(self.items()))


def _improve_answer_span(
    doc_tokens, input_start, input_end, tokenizer, orig_answer_text
):
    """Returns token positions that better match the annotated answer.

    Word positions cover whole whitespace words, e.g. "(1895-1943)." for the
    answer "1895". The first (leftmost start, then longest) sub-span of the
    word span whose WordPieces equal the answer's is returned; otherwise the
    input span.
    """
    tok_answer_text = " ".join(tokenizer.tokenize(orig_answer_text))
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            text_span = " ".join(doc_tokens[new_start : new_end + 1])
            if text_span == tok_answer_text:
                return new_start, new_end
    return input_start, input_end


def _check_is_max_context(doc_spans, cur_span_index, position):
    """Whether `cur_span_index` is the best window for token `position`.

    A token appears in several windows; the one that scores best gives it the
    most context: min(left, right) context plus 0.01 * window length (the
    length breaks ties in favour of longer windows; the first wins a full tie).
    """
    best_score = None
    best_span_index = None
    for span_index, doc_span in enumerate(doc_spans):
        end = doc_span.start + doc_span.length - 1
        if position < doc_span.start or position > end:
            continue
        num_left_context = position - doc_span.start
        num_right_context = end - position
        score = min(num_left_context, num_right_context) + 0.01 * doc_span.length
        if best_score is None or score > best_score:
            best_score = score
            best_span_index = span_index
    return cur_span_index == best_span_index


def _doc_spans(num_tokens, max_tokens_for_doc, doc_stride):
    """The sliding windows over `num_tokens` document tokens (none without
    tokens, as in the original)."""
    if not num_tokens:
        return []
    return [
        DocSpan(start=start, length=min(num_tokens - start, max_tokens_for_doc))
        for start in window_starts(num_tokens, max_tokens_for_doc, doc_stride)
    ]


def generate_features(
    examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training
):
    """Yields the windowed `InputFeatures` of `examples`, in order, as they are
    built.

    Examples are taken from the iterable one at a time and nothing is kept
    between them but the last context's WordPieces, so a consumer that writes
    each feature away (`write_features`) holds one example's windows at a
    time, whatever the size of the dataset.

    Args:
      examples: an iterable of `SquadExample`s.
      tokenizer: a ``tokenization.FullTokenizer``.
      max_seq_length: total length of [CLS] query [SEP] doc [SEP] + padding.
      doc_stride: how far each window starts after the previous one.
      max_query_length: questions are cut to this many WordPieces.
      is_training: compute start/end targets (0/0 when the answer is not
        entirely in the window, which is still kept, or is impossible).
    """
    for feature in _windowed_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training
    ):
        if feature.example_index < _NUM_LOGGED_EXAMPLES:
            _log_feature(feature, logs_answer=is_training)
        yield feature


def _windowed_features(
    examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training
):
    unique_id = FIRST_UNIQUE_ID
    cached_doc = (None, None)
    for example_index, example in enumerate(examples):
        query_tokens = tokenizer.tokenize(example.question_text)
        if len(query_tokens) > max_query_length:
            query_tokens = query_tokens[0:max_query_length]

        # Questions of one paragraph share doc_tokens (see read_squad_examples):
        # tokenize it once. Same result as tokenizing per question.
        if cached_doc[0] is example.doc_tokens:
            tok_to_orig_index, orig_to_tok_index, all_doc_tokens = cached_doc[1]
        else:
            tok_to_orig_index = []
            orig_to_tok_index = []
            all_doc_tokens = []
            for i, token in enumerate(example.doc_tokens):
                orig_to_tok_index.append(len(all_doc_tokens))
                for sub_token in tokenizer.tokenize(token):
                    tok_to_orig_index.append(i)
                    all_doc_tokens.append(sub_token)
            cached_doc = (
                example.doc_tokens,
                (tok_to_orig_index, orig_to_tok_index, all_doc_tokens),
            )

        tok_start_position = None
        tok_end_position = None
        if is_training and example.is_impossible:
            tok_start_position = -1
            tok_end_position = -1
        if is_training and not example.is_impossible:
            tok_start_position = orig_to_tok_index[example.start_position]
            if example.end_position < len(example.doc_tokens) - 1:
                tok_end_position = orig_to_tok_index[example.end_position + 1] - 1
            else:
                tok_end_position = len(all_doc_tokens) - 1
            tok_start_position, tok_end_position = _improve_answer_span(
                all_doc_tokens,
                tok_start_position,
                tok_end_position,
                tokenizer,
                example.orig_answer_text,
            )

        # The -3 accounts for [CLS], [SEP] and [SEP].
        max_tokens_for_doc = max_seq_length - len(query_tokens) - 3
        if max_tokens_for_doc < 1:
            raise UserInputError(
                f"question {example.qas_id}: max_seq_length={max_seq_length} "
                f"leaves no room for the document after a {len(query_tokens)}"
                "-token query (need max_seq_length > max_query_length + 3)"
            )
        doc_spans = _doc_spans(len(all_doc_tokens), max_tokens_for_doc, doc_stride)

        for doc_span_index, doc_span in enumerate(doc_spans):
            tokens = ["[CLS]", *query_tokens, "[SEP]"]
            segment_ids = [0] * len(tokens)
            doc_offset = len(tokens)
            orig_indexes = array.array("i")
            is_max_context = bytearray()
            for i in range(doc_span.length):
                split_token_index = doc_span.start + i
                orig_indexes.append(tok_to_orig_index[split_token_index])
                is_max_context.append(
                    _check_is_max_context(doc_spans, doc_span_index, split_token_index)
                )
                tokens.append(all_doc_tokens[split_token_index])
                segment_ids.append(1)
            token_to_orig_map = DocPositionMap(doc_offset, orig_indexes)
            token_is_max_context = DocPositionMap(
                doc_offset, bytes(is_max_context), bool
            )
            tokens.append("[SEP]")
            segment_ids.append(1)

            input_ids = tokenizer.convert_tokens_to_ids(tokens)
            # The mask has 1 for real tokens and 0 for padding tokens.
            input_mask = [1] * len(input_ids)
            padding = max_seq_length - len(input_ids)
            input_ids = input_ids + [0] * padding
            input_mask = input_mask + [0] * padding
            segment_ids = segment_ids + [0] * padding

            start_position = None
            end_position = None
            if is_training and not example.is_impossible:
                doc_start = doc_span.start
                doc_end = doc_span.start + doc_span.length - 1
                if tok_start_position >= doc_start and tok_end_position <= doc_end:
                    doc_offset = len(query_tokens) + 2
                    start_position = tok_start_position - doc_start + doc_offset
                    end_position = tok_end_position - doc_start + doc_offset
                else:
                    # Kept with the [CLS] target, as the original (whose
                    # comment says such windows are thrown out) does.
                    start_position = 0
                    end_position = 0
            if is_training and example.is_impossible:
                start_position = 0
                end_position = 0

            yield InputFeatures(
                unique_id=unique_id,
                example_index=example_index,
                doc_span_index=doc_span_index,
                tokens=tokens,
                token_to_orig_map=token_to_orig_map,
                token_is_max_context=token_is_max_context,
                input_ids=input_ids,
                input_mask=input_mask,
                segment_ids=segment_ids,
                start_position=start_position,
                end_position=end_position,
                is_impossible=example.is_impossible,
            )
            unique_id += 1


def convert_examples_to_features(
    examples,
    tokenizer,
    max_seq_length,
    doc_stride,
    max_query_length,
    is_training,
    output_fn,
):
    """The original's interface to `generate_features`: each `InputFeatures`
    is passed to `output_fn`, in order, as it is built.

    Returns:
      The number of features.
    """
    count = 0
    for feature in generate_features(
        examples, tokenizer, max_seq_length, doc_stride, max_query_length, is_training
    ):
        output_fn(feature)
        count += 1
    return count


def write_features(
    examples,
    tokenizer,
    record_file,
    max_seq_length,
    doc_stride,
    max_query_length,
    is_training,
):
    """Converts `examples` (any iterable, consumed one at a time) and writes
    each feature to `record_file` as soon as it is built.

    Returns ``(num_features, features)``. Training features are not kept.
    Prediction features are kept for writing the predictions, without their
    padded ids (those are in the file): tokens and position maps only, so a
    whole dev set costs tens of MiB, not hundreds.
    """
    kept = []
    with FeatureWriter(record_file, is_training) as writer:
        for feature in generate_features(
            examples,
            tokenizer,
            max_seq_length,
            doc_stride,
            max_query_length,
            is_training,
        ):
            writer.process_feature(feature)
            if not is_training:
                kept.append(
                    dataclasses.replace(
                        feature, input_ids=None, input_mask=None, segment_ids=None
                    )
                )
    return writer.num_features, kept


def _log_feature(feature, logs_answer):
    # Only the first examples reach here; skip the string building entirely
    # when INFO is not shown.
    if logging.get_verbosity() < logging.INFO:
        return
    logging.info("*** Example ***")
    logging.info("unique_id: %s", feature.unique_id)
    logging.info("example_index: %s", feature.example_index)
    logging.info("doc_span_index: %s", feature.doc_span_index)
    logging.info("tokens: %s", " ".join(feature.tokens))
    logging.info(
        "token_to_orig_map: %s",
        " ".join(f"{x}:{y}" for x, y in feature.token_to_orig_map.items()),
    )
    logging.info(
        "token_is_max_context: %s",
        " ".join(f"{x}:{y}" for x, y in feature.token_is_max_context.items()),
    )
    logging.info("input_ids: %s", " ".join(str(x) for x in feature.input_ids))
    logging.info("input_mask: %s", " ".join(str(x) for x in feature.input_mask))
    logging.info("segment_ids: %s", " ".join(str(x) for x in feature.segment_ids))
    if logs_answer:
        if feature.is_impossible:
            logging.info("impossible example")
        else:
            start, end = feature.start_position, feature.end_position
            answer_text = " ".join(feature.tokens[start : end + 1])
            logging.info("start_position: %d", start)
            logging.info("end_position: %d", end)
            logging.info("answer: %s", tokenization.printable_text(answer_text))


def _int_feature(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))


class FeatureWriter:
    """Writes `InputFeatures` to a TFRecord file (the original's schema).

    Use as ``writer.process_feature`` for ``output_fn``; ``close()`` (or a
    ``with`` block) flushes the file. ``num_features`` counts records.
    """

    def __init__(self, filename, is_training):
        self.filename = filename
        self.is_training = is_training
        self.num_features = 0
        self._writer = tf.io.TFRecordWriter(str(filename))

    def process_feature(self, feature):
        """Serializes one `InputFeatures` and appends it to the file."""
        self.num_features += 1
        features = collections.OrderedDict()
        features["unique_ids"] = _int_feature([feature.unique_id])
        features["input_ids"] = _int_feature(feature.input_ids)
        features["input_mask"] = _int_feature(feature.input_mask)
        features["segment_ids"] = _int_feature(feature.segment_ids)
        if self.is_training:
            features["start_positions"] = _int_feature([feature.start_position])
            features["end_positions"] = _int_feature([feature.end_position])
            features["is_impossible"] = _int_feature([int(bool(feature.is_impossible))])
        example = tf.train.Example(features=tf.train.Features(feature=features))
        # Sorted map entries: the same bytes in every process (see
        # classifier_records).
        self._writer.write(example.SerializeToString(deterministic=True))

    __call__ = process_feature

    def close(self):
        self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()


def feature_spec(seq_length, is_training):
    """The ``tf.io.FixedLenFeature`` dict read back (no ``is_impossible``)."""
    spec = {
        "unique_ids": tf.io.FixedLenFeature([], tf.int64),
        "input_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
        "input_mask": tf.io.FixedLenFeature([seq_length], tf.int64),
        "segment_ids": tf.io.FixedLenFeature([seq_length], tf.int64),
    }
    if is_training:
        spec["start_positions"] = tf.io.FixedLenFeature([], tf.int64)
        spec["end_positions"] = tf.io.FixedLenFeature([], tf.int64)
    return spec


def parse_squad_record(serialized, seq_length, is_training):
    """Parses one serialized record; int64 features become int32.

    As the original's input_fn_builder, ``is_impossible`` is not parsed.
    """
    example = tf.io.parse_single_example(
        serialized, feature_spec(seq_length, is_training)
    )
    # tf.Example only supports tf.int64, but the TPU only supports tf.int32.
    return {name: tf.cast(tensor, tf.int32) for name, tensor in example.items()}
