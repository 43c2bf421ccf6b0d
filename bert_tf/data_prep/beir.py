"""BEIR retrieval data: corpus, queries, qrels, and passages of long documents.

The layout every BEIR dataset uses (``data_dir/``):

- ``corpus.jsonl``: one JSON object a line, ``{"_id", "title", "text"}``
  (``title`` may be missing or empty);
- ``queries.jsonl``: ``{"_id", "text"}`` a line;
- ``qrels/<split>.tsv``: a header line, then ``query-id<TAB>corpus-id<TAB>score``
  rows (integer graded relevance; 0 means judged not relevant).

Every malformed line is one `UserInputError` naming ``file:line``; nothing is
skipped silently. A document longer than ``passage_length`` word pieces is
cut into passages ``passage_stride`` pieces apart, on word boundaries
(`split_passages`); a search ranks passages and `fold_to_documents` gives each
document the score of its best passage, so results and metrics are per
document, as the qrels are.
"""

import json
import os
from typing import NamedTuple

from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.data_prep.sliding_windows import check_window_and_stride
from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_DIR = "qrels"
# The separator of a passage id: "<document id>#<passage index>".
PASSAGE_SEPARATOR = "#"

__all__ = [
    "Document",
    "Passage",
    "Query",
    "corpus_document",
    "fold_to_documents",
    "json_objects",
    "passage_body",
    "qrels_path",
    "read_corpus",
    "read_qrels",
    "read_queries",
    "split_passages",
]


class Document(NamedTuple):
    """A corpus entry: its id, title (maybe empty) and text."""

    id: str
    title: str
    text: str


class Query(NamedTuple):
    """A query: its id and text."""

    id: str
    text: str


class Passage(NamedTuple):
    """A window of a document: its own id, its document's id, the text the
    encoder embeds (the title, then the window's words) and the document's
    title."""

    id: str
    doc_id: str
    text: str
    title: str = ""

    @property
    def body(self):
        """The window's words: `text` without the title it starts with."""
        return passage_body(self.text, self.title)


def _json_lines(path):
    """Yields (line number, object) of a JSON-lines file; blank lines skipped."""
    with open(path, "rb") as f:
        yield from json_objects(f, path)


def json_objects(raw_lines, path):
    """(line number, object) of JSON-lines bytes read from `path` (any file
    object: local, gzip, gs://); blank lines skipped, a bad line an error
    naming path:line."""
    for number, raw in enumerate(raw_lines, start=1):
        where = f"{path}:{number}"
        line = decode_line(raw, path, number)
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise UserInputError(f"{where}: not a JSON object ({e.msg})") from None
        if not isinstance(obj, dict):
            raise UserInputError(f"{where}: not a JSON object")
        yield number, obj


def _string_field(obj, key, where, required):
    value = obj.get(key)
    if value is None:
        if required:
            raise UserInputError(f"{where}: no {key!r} field")
        return ""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and key == "_id":
        # Some BEIR corpora write numeric ids; they are names, kept as text.
        return str(value)
    if not isinstance(value, str):
        raise UserInputError(
            f"{where}: {key!r} must be a string, got {type(value).__name__}"
        )
    return value


def _read_entries(path, make):
    entries = {}
    for number, obj in _json_lines(path):
        where = f"{path}:{number}"
        entry = make(obj, where)
        if not entry.id:
            raise UserInputError(f"{where}: empty '_id'")
        if any(c.isspace() for c in entry.id):
            # run.tsv's TREC lines are 6 whitespace-separated fields.
            raise UserInputError(
                f"{where}: _id {entry.id!r} holds whitespace, which TREC run "
                "files (qid Q0 docid rank score run) cannot hold"
            )
        if entry.id in entries:
            raise UserInputError(f"{where}: duplicate _id {entry.id!r}")
        entries[entry.id] = entry
    if not entries:
        raise UserInputError(f"{path}: no entries")
    return entries


def corpus_document(obj, where):
    """The `Document` of one corpus.jsonl object (`where`: its file:line)."""
    return Document(
        _string_field(obj, "_id", where, required=True),
        _string_field(obj, "title", where, required=False),
        _string_field(obj, "text", where, required=True),
    )


def read_corpus(data_dir):
    """``data_dir/corpus.jsonl`` as {id: `Document`}, in file order."""
    return _read_entries(os.path.join(data_dir, CORPUS_FILE), corpus_document)


def read_queries(data_dir):
    """``data_dir/queries.jsonl`` as {id: `Query`}, in file order."""

    def make(obj, where):
        query = Query(
            _string_field(obj, "_id", where, required=True),
            _string_field(obj, "text", where, required=True),
        )
        if not query.text.strip():
            # Searched, it would rank the corpus by its [CLS] [SEP] alone.
            raise UserInputError(f"{where}: query {query.id!r} has no text")
        return query

    return _read_entries(os.path.join(data_dir, QUERIES_FILE), make)


def qrels_path(data_dir, split):
    """The path of ``data_dir/qrels/<split>.tsv``."""
    return os.path.join(data_dir, QRELS_DIR, f"{split}.tsv")


def read_task_files(data_dir, train_split=None, eval_split=None):
    """(corpus, queries, qrels) of a run: ``qrels`` holds ``"train"`` and/or
    ``"eval"`` for the splits given, each checked against the corpus and
    queries."""
    corpus = read_corpus(data_dir)
    queries = read_queries(data_dir)
    qrels = {}
    for name, split in (("train", train_split), ("eval", eval_split)):
        if split is not None:
            qrels[name] = read_qrels(data_dir, split, queries, corpus)
    return corpus, queries, qrels


def training_fingerprints(data_dir, split):
    """The fingerprints of the files a run trains on (corpus, queries and
    ``qrels/<split>.tsv``): part of the run's identity, so that resuming on
    changed data is refused."""
    paths = [os.path.join(data_dir, name) for name in (CORPUS_FILE, QUERIES_FILE)]
    return [file_fingerprint(path) for path in [*paths, qrels_path(data_dir, split)]]


def read_qrels(data_dir, split, queries=None, corpus=None):
    """``qrels/<split>.tsv`` as {query id: {corpus id: score}}, in file order.

    Args:
      data_dir: the BEIR directory.
      split: e.g. ``"test"``, ``"dev"``, ``"train"``.
      queries, corpus: when given, every query id and corpus id of the file
        must be one of theirs (a typo would otherwise just lower the metrics).

    Raises:
      UserInputError: a malformed or unknown row, naming ``file:line``.
    """
    path = qrels_path(data_dir, split)
    qrels = {}
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            where = f"{path}:{number}"
            line = decode_line(raw, path, number).rstrip("\r\n")
            if not line.strip():
                continue
            columns = line.split("\t")
            if number == 1 and columns[:2] == ["query-id", "corpus-id"]:
                continue
            if len(columns) != 3:
                raise UserInputError(
                    f"{where}: expected 3 tab-separated columns "
                    f"(query-id, corpus-id, score), got {len(columns)}"
                )
            query_id, corpus_id, score = columns
            try:
                score = int(score)
            except ValueError:
                raise UserInputError(
                    f"{where}: score {score!r} is not an integer"
                ) from None
            if queries is not None and query_id not in queries:
                raise UserInputError(
                    f"{where}: query-id {query_id!r} is not in queries"
                )
            if corpus is not None and corpus_id not in corpus:
                raise UserInputError(
                    f"{where}: corpus-id {corpus_id!r} is not in corpus"
                )
            judged = qrels.setdefault(query_id, {})
            if corpus_id in judged:
                raise UserInputError(
                    f"{where}: ({query_id!r}, {corpus_id!r}) is judged twice"
                )
            judged[corpus_id] = score
    if not qrels:
        raise UserInputError(f"{path}: no judgements")
    return qrels


def _windows(piece_counts, passage_length, passage_stride):
    """(first word, end word) windows of at most `passage_length` pieces.

    Windows start on word boundaries at most `passage_stride` pieces apart; a
    word longer than a whole window gets a window of its own (the encoder
    truncates it) rather than being dropped.
    """
    offsets = [0]
    for count in piece_counts:
        offsets.append(offsets[-1] + count)
    num_words = len(piece_counts)
    windows = []
    start = 0
    while True:
        end = start
        while end < num_words and offsets[end + 1] - offsets[start] <= passage_length:
            end += 1
        end = max(end, start + 1)
        windows.append((start, end))
        if end >= num_words:
            return windows
        # The last word starting at most `passage_stride` pieces later: the
        # stride is an upper bound, so consecutive passages always overlap by
        # at least passage_length - passage_stride pieces.
        target = offsets[start] + passage_stride
        following = start + 1
        while following + 1 < end and offsets[following + 1] <= target:
            following += 1
        start = following


def split_passages(corpus, count_pieces, passage_length, passage_stride, taken=()):
    """The passages of every document of `corpus`, in corpus order.

    A document whose text has at most `passage_length` word pieces is one
    passage with the document's id; a longer one is cut on whitespace word
    boundaries into windows of at most `passage_length` pieces starting at most
    `passage_stride` pieces apart (the last one reaching the end), with ids
    ``<doc id>#<n>``. Every passage's text is the title, a space, and the
    window's words (the text alone without a title). A passage id is never
    another document's or passage's: ``<doc id>##<n>`` when ``<doc id>#<n>``
    is a document's id.

    Args:
      corpus: {id: `Document`} (`read_corpus`).
      count_pieces: ``count_pieces(word) -> int``, the word pieces of a
        whitespace-separated word (the encoder's tokenizer).
      passage_length: most word pieces of text in a passage.
      passage_stride: pieces between the starts of consecutive passages.
      taken: ids of documents outside `corpus` (when a corpus is cut in
        parts: its ids containing `PASSAGE_SEPARATOR`, the only ones a
        passage id can equal).

    Returns:
      A list of `Passage`.

    Example:

    >>> corpus = {"d": Document("d", "", "a b c d e")}
    >>> [p.text for p in split_passages(corpus, lambda w: 1, 3, 2)]
    ['a b c', 'c d e']
    """
    check_window_and_stride(
        passage_length,
        passage_stride,
        "passage_length",
        "passage_stride",
        {"window": "passage_length", "stride": ("passage_stride", "passage_length")},
    )
    passages = []
    # Ids in use: every document's (a one-passage document's passage has
    # it) and every passage's so far.
    taken = set(corpus).union(taken)
    for doc in corpus.values():
        words = doc.text.split()
        counts = [count_pieces(word) for word in words]
        prefix = f"{doc.title} " if doc.title else ""
        if sum(counts) <= passage_length:
            text = (prefix + " ".join(words)).strip()
            passages.append(Passage(doc.id, doc.id, text, doc.title))
            continue
        windows = _windows(counts, passage_length, passage_stride)
        separator = PASSAGE_SEPARATOR
        # "coll#0" of a long "coll" must not be a document named "coll#0"
        # (one of the two would be lost): a longer separator then.
        while any(f"{doc.id}{separator}{i}" in taken for i in range(len(windows))):
            separator += PASSAGE_SEPARATOR
        for index, (start, end) in enumerate(windows):
            passage_id = f"{doc.id}{separator}{index}"
            taken.add(passage_id)
            passages.append(
                Passage(
                    passage_id, doc.id, prefix + " ".join(words[start:end]), doc.title
                )
            )
    return passages


def passage_body(text, title):
    """A passage's words: its `text` without the `title` that
    `split_passages` puts first (`text` itself when it does not start with it).

    >>> passage_body("Super Bowl 50 Denver won.", "Super Bowl 50")
    'Denver won.'
    """
    title, text = title.strip(), text.lstrip()
    if not title or not text.startswith(title):
        return text
    rest = text[len(title) :]
    if rest and not rest[0].isspace():
        return text  # the title is only the start of the first word
    return rest.lstrip()


def fold_to_documents(ranked_passages, passage_doc_ids, top_k):
    """Per-document results from per-passage ones: each document's best passage.

    Args:
      ranked_passages: list of (passage id, score), best first.
      passage_doc_ids: {passage id: document id}.
      top_k: how many documents to keep.

    Returns:
      list of (document id, score), best first, at most `top_k`, each
      document once.
    """
    seen = set()
    documents = []
    for passage_id, score in ranked_passages:
        doc_id = passage_doc_ids[passage_id]
        if doc_id in seen:
            continue
        seen.add(doc_id)
        documents.append((doc_id, score))
        if len(documents) == top_k:
            break
    return documents
