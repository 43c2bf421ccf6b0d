"""Passages into a vector store: the corpus cut by a tower's tokenizer, embedded where new or changed.

The retrieval floor's indexing, shared by run_retrieval.py (--do_index), the
re-ranking task and the export of a corpus: it knows nothing of flags or
tasks (the caller passes the dual encoder, the passages and the store).
"""

import hashlib

import numpy as np
from absl import logging

from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.retrieval.bm25 import DEFAULT_B
from bert_tf.retrieval.bm25 import DEFAULT_K1
from bert_tf.retrieval.bm25 import BM25Statistics
from bert_tf.retrieval.bm25 import lexical_terms
from bert_tf.retrieval.dual_encoder import DualEncoder
from bert_tf.retrieval.quantized_vectors import fit_int8_scale
from bert_tf.retrieval.splade_vectors import splade_vectors
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.training.progress import progress_bar

# Passages embedded and written per step of `index_corpus` (what a kill can lose).
INDEX_CHUNK = 256
# Passages embedded to fit an int8 collection's scale (all of a smaller corpus).
INT8_FIT_SAMPLE = 10000

__all__ = [
    "INDEX_CHUNK",
    "INT8_FIT_SAMPLE",
    "PassageSplitter",
    "index_corpus",
    "passages_of",
    "stored_passage",
    "stored_passages_of",
    "text_hash",
    "towers_at",
    "write_passages",
]


def text_hash(text):
    """The hash a store keeps of the text a row was embedded from."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def stored_passage(passage):
    """The store's row of a `beir.Passage` (a `StoredPassage`): its id,
    document, text hash, text and title, what every indexing path writes."""
    return StoredPassage(
        passage.id, passage.doc_id, text_hash(passage.text), passage.text, passage.title
    )


def stored_passages_of(passages):
    """The `StoredPassage` rows of `beir.Passage`s (`stored_passage`)."""
    return [stored_passage(p) for p in passages]


class PassageSplitter:
    """Cuts `beir.Document`s into passages as a document tower reads them.

    Counts word pieces with the tower's own tokenizer (its vocabulary and
    every setting of its tokenizer files: lower-casing, accent stripping,
    CJK splitting) and refuses passages longer than the tower reads. It
    pickles (without its cache of word counts), so a Beam worker cuts
    documents exactly as `passages_of` does in one process.

    Args:
      preprocessor: the document tower's `BertPreprocessor`.
      passage_length: word pieces per passage (None: the tower's
        max_seq_length - 2, what it reads of one passage without the title).
      passage_stride: word pieces between passage starts (None: half of
        `passage_length`).

    Example:

    ```python
    split = PassageSplitter(towers.document_encoder.preprocessor, 200)
    passages = split(beir.read_corpus("squad_beir"))
    ```
    """

    def __init__(self, preprocessor, passage_length=None, passage_stride=None):
        reads = preprocessor.seq_length - 2  # [CLS] passage [SEP]
        if passage_length and passage_length > reads:
            # Longer passages would be stored, and cut to `reads` when embedded.
            raise UserInputError(
                f"passage_length={passage_length}: the document tower reads "
                f"{reads} word pieces of a passage (max_seq_length "
                f"{preprocessor.seq_length} - 2); pass at most {reads}",
                argument="passage_length",
            )
        self.tokenizer = preprocessor.python_tokenizer()
        self.length = passage_length or reads
        self.stride = passage_stride or max(self.length // 2, 1)
        self._pieces = {}

    def __getstate__(self):
        return self.__dict__ | {"_pieces": {}}

    def count_pieces(self, word):
        """Word pieces of a whitespace-separated word (at least 1)."""
        if word not in self._pieces:
            self._pieces[word] = len(self.tokenizer.tokenize(word)) or 1
        return self._pieces[word]

    def __call__(self, corpus, taken=()):
        """The `beir.Passage`s of {doc id: `beir.Document`}, in corpus order;
        `taken`: ids of other documents (a part of a corpus cut alone; see
        `beir.split_passages`)."""
        return beir.split_passages(
            corpus, self.count_pieces, self.length, self.stride, taken
        )


def passages_of(corpus, towers, passage_length=None, passage_stride=None):
    """The corpus's `beir.Passage`s, cut by the document tower's tokenizer
    (`PassageSplitter`; the arguments as its).

    Example:

    ```python
    passages = passages_of(beir.read_corpus("squad_beir"), towers)
    ```
    """
    split = PassageSplitter(
        towers.document_encoder.preprocessor, passage_length, passage_stride
    )
    passages = split(corpus)
    logging.info(
        "%d documents -> %d passages (passage_length=%d, passage_stride=%d)",
        len(corpus),
        len(passages),
        split.length,
        split.stride,
    )
    return passages


def write_passages(store, passages, vectors, sparse=None, splade=None):
    """Upserts `beir.Passage`s into `store` as `index_corpus` writes them:
    their `stored_passages_of` rows, `vectors` (None without dense vectors),
    `sparse` (their BM25 vectors, for a store with `lexical` ones) and
    `splade` (their SPLADE vectors, for a store with `splade` ones). Each
    row carries its passage's text and title (`stored_passage`).

    Example:

    ```python
    write_passages(store, chunk, towers.encode_documents([p.text for p in chunk]))
    ```
    """
    extra = {} if sparse is None else {"sparse": sparse}
    if splade is not None:
        extra["splade"] = splade
    store.upsert(stored_passages_of(passages), vectors, **extra)


def index_corpus(
    towers,
    passages,
    store,
    batch_size=64,
    bm25_k1=DEFAULT_K1,
    bm25_b=DEFAULT_B,
    splade=None,
):
    """Embeds the passages that are new or changed into `store`; removes those
    the corpus no longer has. Returns {"embedded", "kept", "removed",
    "bm25_rewritten", "texts_truncated"} counts (texts and titles cut to a
    Milvus VARCHAR's bytes).

    Each chunk of passages is written as soon as it is embedded, so a killed
    run loses at most one chunk and the next run embeds only what is missing.
    Passages go longest first over the whole corpus, not chunk by chunk, so
    each encoder batch holds passages of about one length and pads little.

    A store with BM25 vectors (`store.lexical`) gets them from the statistics
    of `passages` (`BM25Statistics` with `bm25_k1`, `bm25_b`): when those
    differ from the ones its rows were written with (a passage added,
    changed or removed, other k1/b), the kept rows' BM25 vectors are
    rewritten too (no embedding), and the new statistics recorded last, so
    a killed run redoes the rewrite. An int8 store without a scale gets one
    fitted on up to `INT8_FIT_SAMPLE` of the passages first. A store with
    SPLADE vectors (`store.splade`) gets `splade`'s `encode_document`
    vectors (a `BertSparseEncoder`) of each new or changed passage.

    Example:

    ```python
    with MilvusStore("/tmp/index.db", "corpus", 384, towers.fingerprint()) as store:
        counts = index_corpus(towers, passages, store)
    ```
    """
    if getattr(store, "splade", False) and splade is None:
        raise UserInputError(
            "the collection holds SPLADE vectors: index it with "
            "retrieval_mode=splade (or hybrid with splade in hybrid_sides) and "
            "the splade_checkpoint that filled it",
            argument="splade_checkpoint",
        )
    stored = store.stored_passages()
    if not store.stores_text:
        logging.warning(
            "The collection was made before passage texts were kept: searches "
            "show ids and scores only (re-index with overwrite to keep them)"
        )
    wanted = {s.id: s for s in stored_passages_of(passages)}
    removed = [pid for pid in stored if pid not in wanted]
    if removed:
        logging.info("Removing %d passages no longer in the corpus", len(removed))
        store.delete(removed)
    todo = [
        p
        for p in passages
        if p.id not in stored or stored[p.id].key != wanted[p.id].key
    ]
    todo.sort(key=lambda p: -len(p.text))
    kept = len(passages) - len(todo)
    logging.info(
        "Indexing: %d passages already in the store, %d to %s",
        kept,
        len(todo),
        "embed"
        if store.dense or getattr(store, "splade", False)
        else "write (BM25 only: nothing to embed)",
    )
    lexical = store.lexical and not store.bm25_function
    if lexical:
        stats = BM25Statistics(
            [lexical_terms(p.text) for p in passages], bm25_k1, bm25_b
        )
        sparse_of = dict(zip(wanted, stats.passage_vectors(), strict=True))
    embedded = {}
    if store.dense and getattr(store, "vector_type", "") == "int8":
        if store.int8_scale is None and todo:
            sample = todo[:: max(len(todo) // INT8_FIT_SAMPLE, 1)][:INT8_FIT_SAMPLE]
            logging.info("Fitting the int8 scale on %d passages", len(sample))
            vectors = towers.encode_documents([p.text for p in sample], batch_size)
            store.set_int8_scale(fit_int8_scale(vectors))
            embedded = dict(zip((p.id for p in sample), vectors, strict=True))
    bar = progress_bar(len(todo), unit_name="passage")
    for start in range(0, len(todo), INDEX_CHUNK):
        chunk = todo[start : start + INDEX_CHUNK]
        vectors = None
        if store.dense:
            missing = [p for p in chunk if p.id not in embedded]
            if missing:
                new = towers.encode_documents([p.text for p in missing], batch_size)
                embedded.update(zip((p.id for p in missing), new, strict=True))
            vectors = np.stack([embedded.pop(p.id) for p in chunk])
        sparse = [sparse_of[p.id] for p in chunk] if lexical else None
        learned = None
        if getattr(store, "splade", False):
            learned = splade_vectors(
                splade, [p.text for p in chunk], "document", batch_size
            )
        write_passages(store, chunk, vectors, sparse, learned)
        bar.update(start + len(chunk))
    rewritten = 0
    if lexical and store.bm25_digest != stats.digest:
        changed = {p.id for p in todo}
        kept_ids = [pid for pid in wanted if pid not in changed]
        logging.info("BM25 statistics: rewriting %d kept passages", len(kept_ids))
        store.update_sparse(kept_ids, [sparse_of[pid] for pid in kept_ids])
        store.set_bm25_digest(stats.digest)
        rewritten = len(kept_ids)
    # A server's writes are sealed once, here (`MilvusRows`).
    store.flush()
    return {
        "embedded": len(todo),
        "kept": kept,
        "removed": len(removed),
        "bm25_rewritten": rewritten,
        "texts_truncated": store.truncated_texts,
    }


def towers_at(path, **kwargs):
    """The dual encoder at `path`: a run_retrieval output_dir's trained
    towers, or a sentence-transformers directory / BERT checkpoint (shared
    towers; `kwargs` as `BertSentenceEncoder.from_checkpoint`'s)."""
    if DualEncoder.saved_in(path):
        return DualEncoder.load(path)
    return DualEncoder.from_checkpoint(path, **kwargs)
