"""The rows of a `MilvusStore`: written in batches, read back by id or all."""

import logging

import numpy as np

from bert_tf.retrieval import quantized_vectors
from bert_tf.retrieval.milvus_connection import is_server
from bert_tf.retrieval.milvus_schema import FLOAT_FIELD
from bert_tf.retrieval.milvus_schema import MAX_ID_BYTES
from bert_tf.retrieval.milvus_schema import MAX_TEXT_BYTES
from bert_tf.retrieval.milvus_schema import SPARSE_FIELD
from bert_tf.retrieval.milvus_schema import SPLADE_FIELD
from bert_tf.retrieval.milvus_schema import TEXT_FIELD
from bert_tf.retrieval.milvus_schema import TITLE_FIELD
from bert_tf.retrieval.milvus_schema import VECTOR_FIELD
from bert_tf.retrieval.vector_store import StoredPassage

# Milvus's limit on the rows of one request.
_WRITE_BATCH = 512
_READ_BATCH = 4096

__all__ = ["MilvusRows", "fit_bytes"]


def fit_bytes(text, limit=MAX_TEXT_BYTES):
    """`text` cut to at most `limit` UTF-8 bytes on a character boundary
    (a VARCHAR's limit), and whether it was cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


# The one weight of a passage whose SPLADE weights are all 0: Milvus refuses an
# empty sparse vector (and a zero weight). No vocabulary has that id, and an
# empty query asks for `bm25.NO_TERM`, another, so such a passage scores 0.
NO_SPLADE_TERM = 2**32 - 3


def _non_empty(vector):
    """A SPLADE vector as Milvus takes it (`NO_SPLADE_TERM` if empty)."""
    return vector if vector else {NO_SPLADE_TERM: 1.0}


class MilvusRows:
    """`MilvusStore`'s rows: `upsert`, `delete`, `update_sparse` and reads.

    A mixin of `MilvusStore`: it uses the store's client, settings, `_call`
    and `_error`.

    Flushing: a Milvus Lite file is flushed after each write, so a killed
    run keeps what it reported (its server dies with the process). A server
    keeps every write it acknowledged (in its write-ahead log) whatever
    happens to the client, so a server's rows are flushed once, by
    `flush`, at the end of an index run: Milvus advises against a flush per
    insert (each seals a small segment), and `milvus-lite server` fails
    concurrent flushes of one collection (``current_seq is monotonic``:
    its flush swaps the memtable outside its lock, so two flushes from two
    writers can commit out of order), what parallel Beam writers did.
    """

    def _flush_written(self):
        """After a write: flushes a Milvus Lite file (see the class doc)."""
        if not is_server(self.uri):
            self.flush()

    def flush(self):
        """Makes every row written so far durable and sealed (one flush)."""
        self._call("flushing", self._client.flush, self.collection)

    def _rows(self, fields):
        iterator = self._call(
            "reading the collection",
            self._client.query_iterator,
            self.collection,
            batch_size=_READ_BATCH,
            filter="",
            output_fields=fields,
        )
        try:
            while True:
                batch = self._call("reading the collection", iterator.next)
                if not batch:
                    return
                yield from batch
        finally:
            iterator.close()

    def stored_passages(self):
        return {
            row["id"]: StoredPassage(row["id"], row["doc_id"], row["text_hash"])
            for row in self._rows(["id", "doc_id", "text_hash"])
        }

    def rows_of(self, passage_ids):
        """{passage id: `StoredPassage`} of these rows, with their text and
        title where the collection keeps them (unknown ids are left out)."""
        fields = ["id", "doc_id", "text_hash"]
        fields += [TEXT_FIELD] if self.stores_text else []
        fields += [TITLE_FIELD] if self.stores_title else []
        return {
            row["id"]: StoredPassage(
                row["id"],
                row["doc_id"],
                row["text_hash"],
                row.get(TEXT_FIELD) or "",
                row.get(TITLE_FIELD) or "",
            )
            for row in self._rows_of("reading passages", passage_ids, fields)
        }

    def _rows_of(self, what, passage_ids, fields):
        """The rows of these passage ids (each once), `fields` of each."""
        passage_ids = sorted(set(passage_ids))
        for start in range(0, len(passage_ids), _READ_BATCH):
            yield from self._call(
                what,
                self._client.query,
                self.collection,
                ids=passage_ids[start : start + _READ_BATCH],
                output_fields=fields,
            )

    def __len__(self):
        # Strong: every write acknowledged so far (a server's default,
        # Bounded, may leave out the last seconds' writes, which the end of
        # an index run counts).
        result = self._call(
            "counting rows",
            self._client.query,
            self.collection,
            filter="",
            output_fields=["count(*)"],
            consistency_level="Strong",
        )
        return int(result[0]["count(*)"])

    def _vector_rows(self, vectors):
        """Per row, {field: value} of the dense fields."""
        if not self.dense:
            return [{} for _ in vectors]
        if self.vector_type == "float32":
            return [{VECTOR_FIELD: v} for v in vectors]
        if self.vector_type == "int8":
            if self.int8_scale is None:
                raise self._error(
                    "an int8 collection needs its scale "
                    "(set_int8_scale) before rows are written"
                )
            codes = quantized_vectors.int8_codes(vectors, self.int8_scale)
        else:
            codes = quantized_vectors.binary_signs(vectors)
        if is_server(self.uri):
            searched = codes if self.vector_type == "int8" else np.packbits(codes, 1)
            searched = [c if c.dtype == np.int8 else c.tobytes() for c in searched]
        elif self.vector_type == "int8":
            searched = codes.astype(np.float32)
        else:
            searched = np.where(codes, 1.0, -1.0).astype(np.float32)
        return [
            {VECTOR_FIELD: c, FLOAT_FIELD: v.tolist()}
            for c, v in zip(searched, vectors, strict=True)
        ]

    def upsert(self, passages, vectors, sparse=None, splade=None):
        """See `VectorStore.upsert`; `sparse`: with `lexical`, each passage's
        BM25 vector ({term id: weight}) (`vectors` may be None without
        `dense`); `splade`: with `splade`, each passage's SPLADE vector
        ({vocabulary id: weight}). Each row keeps its passage's text and title (the text is
        what Milvus's BM25 function reads), cut to `MAX_TEXT_BYTES` UTF-8
        bytes where longer (counted in `truncated_texts`, and logged)."""
        if self.dense:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
                raise self._error(
                    f"vectors of shape {vectors.shape}, the "
                    f"collection holds dimension {self.dimension}"
                )
        else:
            vectors = [None] * len(passages)
        if self.lexical and not self.bm25_function and sparse is None:
            raise self._error("BM25 collection, sparse= missing")
        if self.splade and splade is None:
            raise self._error(
                "holds SPLADE vectors; index it with its splade_checkpoint"
            )
        for passage in passages:
            if len(passage.id.encode("utf-8")) > MAX_ID_BYTES:
                raise self._error(
                    f"passage id {passage.id[:40]!r}... is longer "
                    f"than Milvus's {MAX_ID_BYTES} bytes"
                )
        truncated = 0
        for start in range(0, len(passages), _WRITE_BATCH):
            end = start + _WRITE_BATCH
            rows = [
                {
                    "id": passage.id,
                    "doc_id": passage.doc_id,
                    "text_hash": passage.text_hash,
                }
                | dense
                for passage, dense in zip(
                    passages[start:end],
                    self._vector_rows(vectors[start:end]),
                    strict=True,
                )
            ]
            for row, passage in zip(rows, passages[start:end], strict=True):
                for field, value, kept in (
                    (TEXT_FIELD, passage.text, self.stores_text),
                    (TITLE_FIELD, passage.title, self.stores_title),
                ):
                    if kept:
                        row[field], cut = fit_bytes(value)
                        truncated += cut
            if self.lexical and not self.bm25_function:
                for row, vector in zip(rows, sparse[start:end], strict=True):
                    row[SPARSE_FIELD] = vector
            if self.splade:
                for row, vector in zip(rows, splade[start:end], strict=True):
                    row[SPLADE_FIELD] = _non_empty(vector)
            self._call("writing rows", self._client.upsert, self.collection, rows)
        # Durable before returning, so a killed run keeps what it reported.
        self._flush_written()
        if truncated:
            self.truncated_texts += truncated
            logging.warning(
                "%s: %d passage texts or titles longer than Milvus's %d bytes "
                "were cut to fit (their vectors are of the whole text)",
                self._where,
                truncated,
                MAX_TEXT_BYTES,
            )

    def update_sparse(self, passage_ids, sparse):
        """Replaces the BM25 vectors of these rows (the rest of each row stays)."""
        passage_ids = list(passage_ids)
        for start in range(0, len(passage_ids), _WRITE_BATCH):
            rows = [
                {"id": pid, SPARSE_FIELD: vector}
                for pid, vector in zip(
                    passage_ids[start : start + _WRITE_BATCH],
                    sparse[start : start + _WRITE_BATCH],
                    strict=True,
                )
            ]
            self._call(
                "writing BM25 vectors",
                self._client.upsert,
                self.collection,
                rows,
                partial_update=True,
            )
        if passage_ids:
            self._flush_written()

    def delete(self, passage_ids):
        passage_ids = list(passage_ids)
        for start in range(0, len(passage_ids), _WRITE_BATCH):
            self._call(
                "deleting rows",
                self._client.delete,
                self.collection,
                ids=passage_ids[start : start + _WRITE_BATCH],
            )
        if passage_ids:
            self._flush_written()

    def vectors(self):
        if not self.dense:
            raise self._error("holds no dense vectors (BM25 only)")
        field = FLOAT_FIELD if self.quantized else VECTOR_FIELD
        passages, vectors = [], []
        for row in self._rows(["id", "doc_id", "text_hash", field]):
            passages.append(StoredPassage(row["id"], row["doc_id"], row["text_hash"]))
            vectors.append(np.asarray(row[field], dtype=np.float32))
        if not vectors:
            return [], np.zeros((0, self.dimension), np.float32)
        return passages, np.stack(vectors)

    def lexical_vectors(self):
        """{passage id: stored BM25 sparse vector} of every row."""
        return self.sparse_vectors(SPARSE_FIELD)

    def sparse_vectors(self, field=SPLADE_FIELD):
        """{passage id: stored sparse vector ({id: weight})} of every row, of
        `field` (SPLADE's by default; an empty one as it was written, without
        `NO_SPLADE_TERM`)."""
        rows = {row["id"]: row[field] for row in self._rows(["id", field])}
        if field == SPLADE_FIELD:
            for vector in rows.values():
                vector.pop(NO_SPLADE_TERM, None)
        return rows
