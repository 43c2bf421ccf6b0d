"""`MilvusStore`: passage vectors in a Milvus collection (Milvus Lite file or server).

``uri`` is a file path ending in ``.db`` for Milvus Lite (embedded, nothing to
start) or ``http://host:19530`` for a Milvus server or cluster; the client
calls are the same. The collection records the fingerprint of the model that
filled it (a collection property), so vectors of two models are never mixed.
Database errors become one `UserInputError` line naming the URI / collection.
"""

import glob
import logging
import os

import numpy as np

from bert_tf.errors import UserInputError
from bert_tf.retrieval.vector_store import METRICS
from bert_tf.retrieval.vector_store import SearchResults
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.retrieval.vector_store import VectorStore

INDEX_TYPES = ("FLAT", "HNSW", "IVF_FLAT")
FINGERPRINT_PROPERTY = "bert_tf.fingerprint"
# Milvus's limits: a VARCHAR's bytes, rows of one search, rows of one request.
MAX_ID_BYTES = 1024
MAX_TOP_K = 16384
_WRITE_BATCH = 512
_SEARCH_BATCH = 256
_READ_BATCH = 4096

__all__ = ["INDEX_TYPES", "MilvusStore"]


def _quiet_client_logs():
    """Silences pymilvus's and Milvus Lite's own logging.

    pymilvus logs every failed call with its traceback and warns once per
    iterator on Milvus Lite; Milvus Lite's in-process gRPC server logs a
    traceback for each method it lacks (AllocTimestamp, asked for by every
    query iterator, which then falls back to a client-side timestamp). The
    store turns real failures into one-line errors. Called after pymilvus is
    imported: its import configures its loggers afresh.
    """
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)


def _is_server(uri):
    return uri.startswith(("http://", "https://", "tcp://", "grpc://"))


class MilvusStore(VectorStore):
    """A Milvus collection of passage vectors, opened or created.

    Args:
      uri: ``<path>.db`` (Milvus Lite) or ``http://host:19530``.
      collection: the collection's name.
      dimension: the vectors' size; an existing collection must have it.
      fingerprint: the model's fingerprint; an existing collection must have
        been filled by the same model.
      metric: ``"IP"`` (default), ``"COSINE"`` or ``"L2"``.
      index_type: ``"FLAT"`` (exact, default), ``"HNSW"`` or ``"IVF_FLAT"``.
      index_params: build parameters, e.g. ``{"M": 16, "efConstruction": 200}``
        (HNSW) or ``{"nlist": 128}`` (IVF_FLAT).
      search_params: e.g. ``{"ef": 64}`` (HNSW) or ``{"nprobe": 16}``.
      overwrite: drop an existing collection of that name first.
      flag: the flag `uri` came from, for error messages.

    Raises:
      UserInputError: the URI cannot be reached, or the collection holds
        another dimension, model, metric or index type.

    Example:

    ```python
    with MilvusStore("/tmp/out/index.db", "corpus", 384, fingerprint) as store:
        store.upsert(passages, vectors)
        results = store.search(query_vectors, top_k=10)
    ```
    """

    def __init__(
        self,
        uri,
        collection,
        dimension,
        fingerprint,
        metric="IP",
        index_type="FLAT",
        index_params=None,
        search_params=None,
        overwrite=False,
        flag="--milvus_uri",
    ):
        if metric not in METRICS:
            raise UserInputError(f"--metric_type={metric}: expected one of {METRICS}")
        if index_type not in INDEX_TYPES:
            raise UserInputError(
                f"--index_type={index_type}: expected one of {INDEX_TYPES}"
            )
        self.uri = uri
        self.collection = collection
        self.dimension = int(dimension)
        self.fingerprint = fingerprint
        self.metric = metric
        self.index_type = index_type
        self.search_params = dict(search_params or {})
        self._where = f"{flag}={uri} collection {collection!r}"
        self._client = self._connect(uri, flag)
        try:
            if overwrite and self._client.has_collection(collection):
                self._client.drop_collection(collection)
            if self._client.has_collection(collection):
                self._check_existing()
                # A collection whose writer was killed is left released.
                self._load_collection()
            else:
                self._create(dict(index_params or {}))
        except Exception:
            self.close()
            raise

    @staticmethod
    def _connect(uri, flag):
        try:
            from pymilvus import MilvusClient
            from pymilvus.exceptions import MilvusException
        except ImportError as error:
            raise UserInputError(
                f"{flag}={uri}: Milvus needs the retrieval extra ({error}): "
                "pip install '.[retrieval]' (pymilvus and milvus-lite)"
            ) from None

        _quiet_client_logs()
        options = {}
        if not _is_server(uri):
            if not uri.endswith(".db"):
                raise UserInputError(
                    f"{flag}={uri}: a Milvus Lite file must end in .db "
                    "(or give http://host:19530 for a server)"
                )
            directory = os.path.dirname(os.path.abspath(uri))
            if not os.path.isdir(directory):
                raise UserInputError(f"{flag}={uri}: no directory {directory}")
            if os.path.exists(uri) and not os.path.isdir(uri):
                # Milvus Lite keeps a database in a directory of that name.
                raise UserInputError(
                    f"{flag}={uri}: a file, not a Milvus Lite database (a "
                    "directory Milvus Lite makes); choose another path"
                )
            # pymilvus pings every 10 s; Milvus Lite's in-process gRPC server
            # keeps gRPC's default of at most one ping per 5 min, answers a
            # long call or idle spell with GOAWAY "too_many_pings" and logs it.
            # A connection inside the process needs no keepalive.
            options["grpc_options"] = {"grpc.keepalive_time_ms": 2**31 - 1}
        try:
            return MilvusClient(uri=uri, timeout=10, **options)
        except MilvusException as e:
            # pymilvus's own message is often empty; what failed under it
            # (e.g. an OSError of Milvus Lite) is the cause to show.
            cause, seen = e, {id(e)}
            # (A chain may loop back on itself.)
            while (below := cause.__cause__ or cause.__context__) is not None:
                if id(below) in seen:
                    break
                seen.add(id(below))
                cause = below
            reason = e.message or ""
            if cause is not e:
                reason = f"{reason}: {type(cause).__name__}: {cause}".lstrip(": ")
            hint = "" if _is_server(uri) else "; is another process using this file?"
            raise UserInputError(
                f"{flag}={uri}: cannot connect ({reason or type(e).__name__}{hint})"
            ) from None

    @property
    def embedded(self):
        """Whether this is a Milvus Lite file (not a server or cluster)."""
        return not _is_server(self.uri)

    def _load_collection(self):
        """Loads the collection; for a Milvus Lite file, once more after
        removing its index files if they cannot be read.

        Milvus Lite writes a segment's index file (derived from the
        segment's vectors, rebuilt when missing) in place, so a run killed
        while writing it leaves a truncated file that fails every later load.
        The rows themselves are intact: the index is rebuilt from them.
        """
        from pymilvus.exceptions import MilvusException

        try:
            self._client.load_collection(self.collection)
            return
        except MilvusException as e:
            if _is_server(self.uri):
                message = " ".join(str(e.message).split())
                raise UserInputError(
                    f"{self._where}: loading failed ({message})"
                ) from None
            error = " ".join(str(e.message).split())
        pattern = os.path.join(
            self.uri, "collections", self.collection, "partitions", "*", "indexes", "*"
        )
        index_files = glob.glob(pattern)
        for path in index_files:
            os.remove(path)
        logging.warning(
            "%s: could not be loaded (%s); removed its %d index file(s), left "
            "incomplete by a killed run, and rebuilt them from the stored rows",
            self._where,
            error,
            len(index_files),
        )
        self._call("loading", self._client.load_collection, self.collection)

    def _call(self, what, function, *args, **kwargs):
        """Runs a client call; a database error becomes one line."""
        from pymilvus.exceptions import MilvusException

        try:
            return function(*args, **kwargs)
        except MilvusException as e:
            message = " ".join(str(e.message).split())
            raise UserInputError(f"{self._where}: {what} failed ({message})") from None

    def _create(self, index_params):
        from pymilvus import DataType
        from pymilvus import MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(
            "id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES
        )
        schema.add_field("doc_id", DataType.VARCHAR, max_length=MAX_ID_BYTES)
        schema.add_field("text_hash", DataType.VARCHAR, max_length=64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=self.dimension)
        index = self._client.prepare_index_params()
        index.add_index(
            field_name="vector",
            index_type=self.index_type,
            metric_type=self.metric,
            params=index_params,
        )
        self._call(
            "creating the collection",
            self._client.create_collection,
            self.collection,
            schema=schema,
            index_params=index,
            properties={FINGERPRINT_PROPERTY: self.fingerprint},
        )

    def _check_existing(self):
        info = self._call(
            "describing the collection",
            self._client.describe_collection,
            self.collection,
        )
        fields = {field["name"]: field for field in info["fields"]}
        if "vector" not in fields or "doc_id" not in fields:
            raise UserInputError(
                f"{self._where}: not a bert_tf collection (no vector/doc_id fields); "
                "choose another --milvus_collection"
            )
        dimension = int(fields["vector"]["params"]["dim"])
        if dimension != self.dimension:
            raise UserInputError(
                f"{self._where}: holds vectors of dimension {dimension}, the model "
                f"makes {self.dimension}; use another --milvus_collection or "
                "--overwrite_index"
            )
        fingerprint = info.get("properties", {}).get(FINGERPRINT_PROPERTY)
        if fingerprint != self.fingerprint:
            raise UserInputError(
                f"{self._where}: was indexed with another model (fingerprint "
                f"{fingerprint}, this model {self.fingerprint}); use another "
                "--milvus_collection or --overwrite_index to re-embed the corpus"
            )
        index = self._call(
            "describing the index",
            self._client.describe_index,
            self.collection,
            "vector",
        )
        found = (index.get("index_type"), index.get("metric_type"))
        if found != (self.index_type, self.metric):
            raise UserInputError(
                f"{self._where}: was built with --index_type={found[0]} "
                f"--metric_type={found[1]}, not {self.index_type}/{self.metric}; "
                "use those flags or --overwrite_index"
            )

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

    def __len__(self):
        result = self._call(
            "counting rows",
            self._client.query,
            self.collection,
            filter="",
            output_fields=["count(*)"],
        )
        return int(result[0]["count(*)"])

    def upsert(self, passages, vectors):
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dimension:
            raise UserInputError(
                f"{self._where}: vectors of shape {vectors.shape}, the collection "
                f"holds dimension {self.dimension}"
            )
        for passage in passages:
            if len(passage.id.encode("utf-8")) > MAX_ID_BYTES:
                raise UserInputError(
                    f"{self._where}: passage id {passage.id[:40]!r}... is longer "
                    f"than Milvus's {MAX_ID_BYTES} bytes"
                )
        for start in range(0, len(passages), _WRITE_BATCH):
            rows = [
                {
                    "id": passage.id,
                    "doc_id": passage.doc_id,
                    "text_hash": passage.text_hash,
                    "vector": vector,
                }
                for passage, vector in zip(
                    passages[start : start + _WRITE_BATCH],
                    vectors[start : start + _WRITE_BATCH],
                    strict=True,
                )
            ]
            self._call("writing rows", self._client.upsert, self.collection, rows)
        # Durable before returning, so a killed run keeps what it reported.
        self._call("flushing", self._client.flush, self.collection)

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
            self._call("flushing", self._client.flush, self.collection)

    def search(self, queries, top_k):
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dimension:
            raise UserInputError(
                f"{self._where}: queries of shape {queries.shape}, the collection "
                f"holds dimension {self.dimension}"
            )
        top_k = min(int(top_k), MAX_TOP_K)
        search_params = dict(self.search_params)
        if "ef" in search_params:
            # HNSW explores `ef` candidates: fewer than the `top_k` asked
            # for would return fewer (an evaluation asks top k x the most
            # passages of a document, more than --hnsw_ef).
            search_params["ef"] = max(search_params["ef"], top_k)
        params = {"metric_type": self.metric, "params": search_params}
        ids, scores = [], []
        for start in range(0, len(queries), _SEARCH_BATCH):
            hits = self._call(
                "searching",
                self._client.search,
                self.collection,
                data=list(queries[start : start + _SEARCH_BATCH]),
                limit=top_k,
                search_params=params,
            )
            for query_hits in hits:
                ids.append([hit["id"] for hit in query_hits])
                distances = [float(hit["distance"]) for hit in query_hits]
                # Higher is better everywhere: L2 gives distances.
                scores.append(
                    [-d for d in distances] if self.metric == "L2" else distances
                )
        return SearchResults(ids, scores)

    def vectors(self):
        passages, vectors = [], []
        for row in self._rows(["id", "doc_id", "text_hash", "vector"]):
            passages.append(StoredPassage(row["id"], row["doc_id"], row["text_hash"]))
            vectors.append(np.asarray(row["vector"], dtype=np.float32))
        if not vectors:
            return [], np.zeros((0, self.dimension), np.float32)
        return passages, np.stack(vectors)

    def close(self):
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()
