"""`MilvusStore`: passage vectors in a Milvus collection (Milvus Lite file or server).

``uri`` is a file path ending in ``.db`` for Milvus Lite (embedded, nothing to
start) or ``http://host:19530`` for a Milvus server or cluster; the client
calls are the same. The collection records the fingerprint of the model that
filled it (a collection property), so vectors of two models are never mixed,
and keeps each passage's text and title, so a hit is shown without the corpus.
Database errors become one `UserInputError` line naming the URI / collection.
"""

import glob
import json
import logging
import os

import numpy as np

from bert_tf.errors import UserInputError
from bert_tf.retrieval import quantized_vectors
from bert_tf.retrieval.bm25 import DEFAULT_B
from bert_tf.retrieval.bm25 import DEFAULT_K1
from bert_tf.retrieval.bm25 import NO_TERM
from bert_tf.retrieval.vector_store import FUSIONS
from bert_tf.retrieval.vector_store import METRICS
from bert_tf.retrieval.vector_store import SearchResults
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.retrieval.vector_store import VectorStore

INDEX_TYPES = ("FLAT", "HNSW", "IVF_FLAT")
FINGERPRINT_PROPERTY = "bert_tf.fingerprint"
VECTOR_TYPE_PROPERTY = "bert_tf.vector_type"
INT8_SCALE_PROPERTY = "bert_tf.int8_scale"
BM25_DIGEST_PROPERTY = "bert_tf.bm25_digest"
# How the collection was filled (model, passages, search settings: JSON),
# what a search of the collection alone reads (`set_index_settings`).
INDEX_SETTINGS_PROPERTY = "bert_tf.index_settings"
# Fields: the searched vector (float32, int8 codes or sign bits), the float32
# copy of a quantized one (rescoring), the BM25 sparse vector, the passage's
# text (what was embedded; Milvus's own BM25 function reads it) and its
# document's title. Collections made before the text was kept lack the two.
VECTOR_FIELD = "vector"
FLOAT_FIELD = "float_vector"
SPARSE_FIELD = "sparse"
TEXT_FIELD = "text"
TITLE_FIELD = "title"
MAX_TEXT_BYTES = 65535
# Milvus's limits: a VARCHAR's bytes, rows of one search, rows of one request.
MAX_ID_BYTES = 1024
MAX_TOP_K = 16384
_WRITE_BATCH = 512
_SEARCH_BATCH = 256
_READ_BATCH = 4096
_MAX_MESSAGE = 400

__all__ = ["INDEX_TYPES", "MilvusStore", "fit_bytes"]


def fit_bytes(text, limit=MAX_TEXT_BYTES):
    """`text` cut to at most `limit` UTF-8 bytes on a character boundary
    (a VARCHAR's limit), and whether it was cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text, False
    return data[:limit].decode("utf-8", errors="ignore"), True


def _quiet_client_logs():
    """Silences pymilvus's and Milvus Lite's own logging.

    pymilvus logs every failed call with its traceback and warns once per
    iterator on Milvus Lite; Milvus Lite's in-process gRPC server logs a
    traceback for each method it lacks (AllocTimestamp, asked for by every
    query iterator, which then falls back to a client-side timestamp). The
    store turns real failures into one-line errors. Called after pymilvus is
    imported: its import configures its loggers afresh.

    Milvus Lite logs its server's start and stop and every background index
    build ("bg: built 1 segment indexes") at INFO, and faiss, which it loads,
    logs each CPU variant it tries (with the ModuleNotFoundError of those it
    lacks): 10 of run_retrieval's 27 lines were theirs. Their warnings stay.
    """
    logging.getLogger("pymilvus").setLevel(logging.CRITICAL)
    logging.getLogger("grpc._server").setLevel(logging.CRITICAL)
    for name in ("milvus_lite", "faiss"):
        logging.getLogger(name).setLevel(logging.WARNING)


def _is_server(uri):
    return uri.startswith(("http://", "https://", "tcp://", "grpc://"))


def _describe(dense, lexical, bm25_function, vector_type):
    parts = [f"{vector_type} dense vectors"] if dense else []
    if lexical:
        parts.append("Milvus BM25" if bm25_function else "BM25 sparse vectors")
    return " + ".join(parts)


def _argument_of(flag):
    """The `UserInputError` argument of the parameter `flag` that gave a URI
    and of the collection: ``uri`` and ``collection`` are the tools'
    --milvus_uri and --milvus_collection; a tool that names the URI otherwise
    (bert-tf-search's --index) has --collection."""
    if flag == "uri":
        return {"uri": "milvus_uri", "collection": "milvus_collection"}
    return {flag: flag.lstrip("-"), "collection": "collection"}


def check_milvus_uri(uri, flag="uri"):
    """A server URI, or a Milvus Lite file ending in .db in an existing
    directory; needs neither pymilvus nor TensorFlow, so a tool checks it
    before loading anything.

    Raises:
        UserInputError: naming `flag` (the parameter that gave `uri`;
            the tools' --milvus_uri).
    """
    argument = _argument_of(flag)
    if _is_server(uri):
        return
    if not uri.endswith(".db"):
        raise UserInputError(
            f"{flag}={uri}: a Milvus Lite file must end in .db "
            "(or give http://host:19530 for a server)",
            argument=argument,
        )
    directory = os.path.dirname(os.path.abspath(uri))
    if not os.path.isdir(directory):
        raise UserInputError(f"{flag}={uri}: no directory {directory}", argument)
    if os.path.exists(uri) and not os.path.isdir(uri):
        # Milvus Lite keeps a database in a directory of that name.
        raise UserInputError(
            f"{flag}={uri}: a file, not a Milvus Lite database (a "
            "directory Milvus Lite makes); choose another path",
            argument=argument,
        )


class MilvusStore(VectorStore):
    """A Milvus collection of passage vectors, opened or created.

    Args:
      uri: ``<path>.db`` (Milvus Lite) or ``http://host:19530``.
      collection: the collection's name.
      dimension: the vectors' size; an existing collection must have it.
        None: open an existing collection as it is (its dimension,
        fingerprint, metric, index and fields; `existing`).
      fingerprint: the model's fingerprint; an existing collection must have
        been filled by the same model.
      metric: ``"IP"`` (default), ``"COSINE"`` or ``"L2"``.
      index_type: ``"FLAT"`` (exact, default), ``"HNSW"`` or ``"IVF_FLAT"``.
      index_params: build parameters, e.g. ``{"M": 16, "efConstruction": 200}``
        (HNSW) or ``{"nlist": 128}`` (IVF_FLAT).
      search_params: e.g. ``{"ef": 64}`` (HNSW) or ``{"nprobe": 16}``.
      overwrite: drop an existing collection of that name first.
      flag: the flag `uri` came from, for error messages.
      dense: a dense vector field (`search`); False: BM25 only; None: as
        the existing collection has it (a new one gets none).
      lexical: a BM25 sparse vector field (`search_lexical`,
        `hybrid_search`), written from `bert_tf.retrieval.bm25`'s vectors;
        None: as the existing collection has it (a new one gets none).
      vector_type: how the dense vectors are kept and searched: ``float32``,
        ``int8`` or ``binary`` (`bert_tf.retrieval.quantized_vectors`). A
        server stores INT8_VECTOR / BINARY_VECTOR (Hamming); Milvus Lite has
        neither type, so it keeps the codes (int8 values, or +-1 for the
        bits) in a FLOAT_VECTOR searched by inner product, which ranks
        exactly as int8 inner product / Hamming distance do. Quantized
        collections keep each float32 vector beside it (rescoring,
        `vectors`).
      rescore_k: with a quantized `vector_type`, `search` takes the
        `rescore_k` best by the codes and orders them by the float32 inner
        product (0: the codes' order).
      bm25_function: the sparse vectors made by Milvus's own BM25 function
        from a text field (servers only: Milvus Lite has no such function),
        with `bm25_k1` and `bm25_b`.

    Raises:
      UserInputError: the URI cannot be reached, or the collection holds
        another dimension, model, metric, index type or set of fields (or,
        opened as it is, does not exist).

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
        flag="uri",
        dense=True,
        lexical=False,
        vector_type="float32",
        rescore_k=0,
        bm25_function=False,
        bm25_k1=DEFAULT_K1,
        bm25_b=DEFAULT_B,
    ):
        as_it_is = dimension is None
        if vector_type not in quantized_vectors.VECTOR_TYPES:
            raise UserInputError(
                f"vector_type={vector_type}: expected one of "
                f"{quantized_vectors.VECTOR_TYPES}"
            )
        if bm25_function and not _is_server(uri):
            raise UserInputError(
                f"{flag}={uri}: Milvus Lite has no BM25 function; compute BM25 "
                "here (bm25_function=False) or give a server URI",
                argument=_argument_of(flag),
            )
        if metric not in METRICS and not as_it_is:
            raise UserInputError(
                f"metric={metric}: expected one of {METRICS}",
                argument={"metric": "metric_type"},
            )
        if index_type not in INDEX_TYPES and not as_it_is:
            raise UserInputError(
                f"index_type={index_type}: expected one of {INDEX_TYPES}",
                argument="index_type",
            )
        self.uri = uri
        self.collection = collection
        self.dimension = None if as_it_is else int(dimension)
        self.fingerprint = fingerprint
        self.metric = metric
        self.index_type = index_type
        self.search_params = dict(search_params or {})
        self.dense = dense
        self.lexical = True if bm25_function else lexical
        self.vector_type = vector_type
        self.rescore_k = int(rescore_k)
        self.bm25_function = bool(bm25_function)
        self.bm25_params = {"bm25_k1": bm25_k1, "bm25_b": bm25_b}
        self.int8_scale = None
        # Whether rows keep the passage's text and title (new collections do).
        self.stores_text = self.stores_title = True
        # Texts and titles cut to MAX_TEXT_BYTES so far (`upsert`).
        self.truncated_texts = 0
        self._properties = {}
        self._flag = flag
        self._where = f"{flag}={uri} collection {collection!r}"
        self._client = self._connect(uri, flag)
        try:
            if overwrite and self._client.has_collection(collection):
                self._client.drop_collection(collection)
            if self._client.has_collection(collection):
                info = self._call(
                    "describing the collection",
                    self._client.describe_collection,
                    collection,
                )
                if as_it_is:
                    self._take_existing(info)
                self._check_existing(info)
                # A collection whose writer was killed is left released.
                self._load_collection()
            elif as_it_is:
                raise UserInputError(
                    f"{flag}={uri}: no collection {collection!r} (collections: "
                    f"{', '.join(self._client.list_collections()) or 'none'})",
                    argument=_argument_of(flag),
                )
            else:
                self.dense, self.lexical = bool(self.dense), bool(self.lexical)
                if not (self.dense or self.lexical):
                    raise UserInputError(
                        "dense=False needs lexical=True: nothing to search"
                    )
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
                "pip install '.[retrieval]' (pymilvus and milvus-lite)",
                argument=_argument_of(flag),
            ) from None

        _quiet_client_logs()
        options = {}
        check_milvus_uri(uri, flag)
        if not _is_server(uri):
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
                f"{flag}={uri}: cannot connect ({reason or type(e).__name__}{hint})",
                argument=_argument_of(flag),
            ) from None

    @classmethod
    def existing(cls, uri, collection, flag="uri", **kwargs):
        """An existing collection opened as it is (`dimension` None); `kwargs`
        as the constructor's (e.g. ``rescore_k``, ``search_params``)."""
        return cls(
            uri,
            collection,
            None,
            None,
            flag=flag,
            dense=None,
            lexical=None,
            metric=None,
            index_type=None,
            **kwargs,
        )

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
                raise self._error(f"loading failed ({message})") from None
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
            if len(message) > _MAX_MESSAGE:  # Milvus quotes whole requests
                message = message[:_MAX_MESSAGE] + "..."
            raise self._error(f"{what} failed ({message})") from None

    def _error(self, reason):
        """A `UserInputError` naming this collection (and the parameters
        its reason names as `name=`: the tools' flags)."""
        return UserInputError(
            f"{self._where}: {reason}",
            argument={
                **_argument_of(self._flag),
                "overwrite": "overwrite_index",
                "index_type": "index_type",
                "metric": "metric_type",
                "retrieval_mode": "retrieval_mode",
            },
        )

    @property
    def quantized(self):
        """Whether the dense vectors are int8 or binary codes."""
        return self.dense and self.vector_type != "float32"

    def _vector_schema(self):
        """(data type, dimension, metric, index type) of the searched field."""
        from pymilvus import DataType

        if self.vector_type == "float32" or not _is_server(self.uri):
            metric = "IP" if self.quantized else self.metric
            return DataType.FLOAT_VECTOR, self.dimension, metric, self.index_type
        if self.vector_type == "int8":
            # Milvus indexes INT8_VECTOR with HNSW only.
            return DataType.INT8_VECTOR, self.dimension, self.metric, "HNSW"
        return DataType.BINARY_VECTOR, self.dimension, "HAMMING", "BIN_FLAT"

    def _create(self, index_params):
        from pymilvus import DataType
        from pymilvus import Function
        from pymilvus import FunctionType
        from pymilvus import MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field(
            "id", DataType.VARCHAR, is_primary=True, max_length=MAX_ID_BYTES
        )
        schema.add_field("doc_id", DataType.VARCHAR, max_length=MAX_ID_BYTES)
        schema.add_field("text_hash", DataType.VARCHAR, max_length=64)
        schema.add_field(
            TEXT_FIELD,
            DataType.VARCHAR,
            max_length=MAX_TEXT_BYTES,
            enable_analyzer=self.bm25_function,
        )
        schema.add_field(TITLE_FIELD, DataType.VARCHAR, max_length=MAX_TEXT_BYTES)
        index = self._client.prepare_index_params()
        if self.dense:
            data_type, dim, metric, index_type = self._vector_schema()
            schema.add_field(VECTOR_FIELD, data_type, dim=dim)
            index.add_index(
                field_name=VECTOR_FIELD,
                index_type=index_type,
                metric_type=metric,
                params=index_params if index_type == self.index_type else {},
            )
        if self.quantized:
            schema.add_field(
                FLOAT_FIELD,
                DataType.ARRAY,
                element_type=DataType.FLOAT,
                max_capacity=self.dimension,
            )
        if self.lexical:
            schema.add_field(SPARSE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
            lexical_index = {"metric_type": "IP", "params": {}}
            if self.bm25_function:
                schema.add_function(
                    Function(
                        name="bm25",
                        function_type=FunctionType.BM25,
                        input_field_names=[TEXT_FIELD],
                        output_field_names=[SPARSE_FIELD],
                    )
                )
                lexical_index = {"metric_type": "BM25", "params": self.bm25_params}
            index.add_index(
                field_name=SPARSE_FIELD,
                index_type="SPARSE_INVERTED_INDEX",
                **lexical_index,
            )
        self._call(
            "creating the collection",
            self._client.create_collection,
            self.collection,
            schema=schema,
            index_params=index,
            properties={
                FINGERPRINT_PROPERTY: self.fingerprint,
                VECTOR_TYPE_PROPERTY: self.vector_type,
            },
        )

    def _check_existing(self, info):
        """Checks the collection `info` describes against this store's
        settings (model, fields, vector type, dimension, metric, index)."""
        fields = {field["name"]: field for field in info["fields"]}
        if "doc_id" not in fields:
            raise self._error(
                "not a bert_tf collection (no doc_id field); choose another collection="
            )
        properties = info.get("properties", {})
        self._properties = dict(properties)
        if self.dense is None:  # as the collection has it
            self.dense = VECTOR_FIELD in fields
            self.vector_type = properties.get(VECTOR_TYPE_PROPERTY, "float32")
        if self.lexical is None:
            self.lexical = SPARSE_FIELD in fields
        self.stores_text = TEXT_FIELD in fields
        self.stores_title = TITLE_FIELD in fields
        kept = (
            VECTOR_FIELD in fields,
            SPARSE_FIELD in fields,
            bool(info.get("functions")),
            properties.get(VECTOR_TYPE_PROPERTY, "float32"),
        )
        wanted = (self.dense, self.lexical, self.bm25_function, self.vector_type)
        if kept != wanted:
            raise self._error(
                f"holds {_describe(*kept)}, this run asks for "
                f"{_describe(*wanted)}; use another collection= or "
                "overwrite=True"
            )
        fingerprint = properties.get(FINGERPRINT_PROPERTY)
        if fingerprint != self.fingerprint:
            raise self._error(
                f"was indexed with another model (fingerprint "
                f"{fingerprint}, this model {self.fingerprint}); use another "
                "collection= or overwrite=True to re-embed the corpus"
            )
        if INT8_SCALE_PROPERTY in properties:
            self.int8_scale = np.asarray(
                json.loads(properties[INT8_SCALE_PROPERTY]), np.float32
            )
        if not self.dense:
            return
        dimension = int(fields[VECTOR_FIELD]["params"]["dim"])
        if dimension != self.dimension:
            raise self._error(
                f"holds vectors of dimension {dimension}, the model "
                f"makes {self.dimension}; use another collection= or "
                "overwrite=True"
            )
        index = self._call(
            "describing the index",
            self._client.describe_index,
            self.collection,
            VECTOR_FIELD,
        )
        found = (index.get("index_type"), index.get("metric_type"))
        _, _, metric, index_type = self._vector_schema()
        if found != (index_type, metric):
            raise self._error(
                f"was built with index_type={found[0]} "
                f"metric={found[1]}, not {index_type}/{metric}; "
                "use those or overwrite=True"
            )

    def _take_existing(self, info):
        """Takes the model, dimension, metric, index type and fields of the
        collection `info` describes as they are (`existing`)."""
        fields = {field["name"]: field for field in info["fields"]}
        properties = info.get("properties", {})
        self.fingerprint = properties.get(FINGERPRINT_PROPERTY)
        self.bm25_function = bool(info.get("functions"))
        settings = _json_property(properties, INDEX_SETTINGS_PROPERTY, self._where)
        self.metric = settings.get("metric_type", "IP")
        self.index_type = settings.get("index_type", "FLAT")
        if VECTOR_FIELD not in fields:
            return
        self.dimension = int(fields[VECTOR_FIELD]["params"]["dim"])
        self.vector_type = properties.get(VECTOR_TYPE_PROPERTY, "float32")
        index = self._call(
            "describing the index",
            self._client.describe_index,
            self.collection,
            VECTOR_FIELD,
        )
        if self.vector_type == "float32":
            self.metric = index.get("metric_type", self.metric)
        if self.vector_type == "float32" or not _is_server(self.uri):
            self.index_type = index.get("index_type", self.index_type)

    @property
    def index_settings(self):
        """The settings `set_index_settings` recorded ({} if none)."""
        return _json_property(self._properties, INDEX_SETTINGS_PROPERTY, self._where)

    def set_index_settings(self, settings):
        """Records how the collection was filled (a JSON object: the model,
        the passages, search settings), for a later search of it alone."""
        self._set_property(
            INDEX_SETTINGS_PROPERTY, json.dumps(settings, sort_keys=True)
        )

    def _set_property(self, name, value):
        self._call(
            "recording a property",
            self._client.alter_collection_properties,
            self.collection,
            properties={name: value},
        )
        self._properties[name] = value

    def set_int8_scale(self, scale):
        """Records the int8 per-dimension scale (fitted once, on the corpus)."""
        self.int8_scale = np.asarray(scale, np.float32)
        self._set_property(INT8_SCALE_PROPERTY, json.dumps(self.int8_scale.tolist()))

    @property
    def bm25_digest(self):
        """`BM25Statistics.digest` of the sparse vectors stored (None: none yet)."""
        return self._properties.get(BM25_DIGEST_PROPERTY)

    def set_bm25_digest(self, digest):
        """Records that every row's sparse vector is of these statistics."""
        self._set_property(BM25_DIGEST_PROPERTY, digest)

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
        result = self._call(
            "counting rows",
            self._client.query,
            self.collection,
            filter="",
            output_fields=["count(*)"],
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
        if _is_server(self.uri):
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

    def upsert(self, passages, vectors, sparse=None):
        """See `VectorStore.upsert`; `sparse`: with `lexical`, each passage's
        BM25 vector ({term id: weight}) (`vectors` may be None without
        `dense`). Each row keeps its passage's text and title (the text is
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
            self._call("writing rows", self._client.upsert, self.collection, rows)
        # Durable before returning, so a killed run keeps what it reported.
        self._call("flushing", self._client.flush, self.collection)
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

    def _dense_queries(self, queries):
        """The query side of the searched field (see `vector_type`)."""
        queries = np.asarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dimension:
            raise self._error(
                f"queries of shape {queries.shape}, the collection "
                f"holds dimension {self.dimension}"
            )
        if self.vector_type == "int8":
            codes = quantized_vectors.int8_queries(queries, self.int8_scale)
            return list(codes if _is_server(self.uri) else codes.astype(np.float32))
        if self.vector_type == "binary":
            bits = quantized_vectors.binary_signs(queries)
            if _is_server(self.uri):
                return [row.tobytes() for row in np.packbits(bits, 1)]
            return list(np.where(bits, 1.0, -1.0).astype(np.float32))
        return list(queries)

    def _dense_score(self, distance):
        """Higher is better: minus an L2 distance or a Hamming distance."""
        if self.vector_type == "binary":
            # Milvus Lite's inner product of +-1 vectors is dim - 2 x Hamming.
            if _is_server(self.uri):
                return -distance
            return -(self.dimension - distance) / 2
        return -distance if self.metric == "L2" else distance

    def _searches(self, what, data, top_k, **kwargs):
        """Per query, [(id, distance)]: `data` searched in batches."""
        found = []
        for start in range(0, len(data), _SEARCH_BATCH):
            hits = self._call(
                what,
                self._client.search,
                self.collection,
                data=data[start : start + _SEARCH_BATCH],
                limit=min(int(top_k), MAX_TOP_K),
                output_fields=[],
                **kwargs,
            )
            found.extend(
                [(hit["id"], float(hit["distance"])) for hit in query_hits]
                for query_hits in hits
            )
        return found

    def _params(self, top_k):
        """The index's search parameters for `top_k` results: HNSW explores
        `ef` candidates, so fewer than `top_k` would return fewer (an
        evaluation asks top k x the most passages of a document, often more
        than --hnsw_ef)."""
        params = dict(self.search_params)
        if "ef" in params:
            params["ef"] = max(params["ef"], min(int(top_k), MAX_TOP_K))
        return params

    def search(self, queries, top_k):
        """See `VectorStore.search`; a quantized collection with `rescore_k`
        orders its `rescore_k` best by the float32 vectors."""
        if not self.dense:
            raise self._error("holds no dense vectors (BM25 only)")
        data = self._dense_queries(queries)
        _, _, metric, _ = self._vector_schema()
        depth = max(top_k, self.rescore_k) if self.quantized else top_k
        found = self._searches(
            "searching",
            data,
            depth,
            anns_field=VECTOR_FIELD,
            search_params={"metric_type": metric, "params": self._params(depth)},
        )
        if self.quantized and self.rescore_k:
            return self._rescored(np.asarray(queries, np.float32), found, top_k)
        return SearchResults(
            [[pid for pid, _ in hits] for hits in found],
            [[self._dense_score(d) for _, d in hits] for hits in found],
        )

    def _float_vectors(self, passage_ids):
        """{passage id: float32 vector} of the quantized rows asked for."""
        vectors = {}
        rows = self._rows_of("reading float vectors", passage_ids, [FLOAT_FIELD])
        for row in rows:
            vectors[row["id"]] = np.asarray(row[FLOAT_FIELD], np.float32)
        return vectors

    def _rescored(self, queries, found, top_k):
        from bert_tf.retrieval.exact_search import similarity_scores

        vectors = self._float_vectors(pid for hits in found for pid, _ in hits)
        ids, scores = [], []
        for query, hits in zip(queries, found, strict=True):
            shortlist = [pid for pid, _ in hits]
            if not shortlist:
                ids.append([])
                scores.append([])
                continue
            exact = similarity_scores(
                query[None], np.stack([vectors[pid] for pid in shortlist]), self.metric
            ).numpy()[0]
            order = np.argsort(-exact, kind="stable")[:top_k]
            ids.append([shortlist[i] for i in order])
            scores.append([float(exact[i]) for i in order])
        return SearchResults(ids, scores)

    def _lexical_request(self, queries):
        """(data, search params) of BM25 queries: sparse vectors, or texts for
        Milvus's BM25 function. A query without words asks for `NO_TERM`,
        which no passage has (Milvus refuses an empty sparse vector)."""
        if self.bm25_function:
            return list(queries), {"metric_type": "BM25", "params": {}}
        data = [q if q else {NO_TERM: 1.0} for q in queries]
        return data, {"metric_type": "IP", "params": {}}

    def search_lexical(self, queries, top_k):
        """BM25: the `top_k` best passages of each query, `SearchResults`.

        Args:
          queries: per query, its sparse vector (`bm25.query_vector`), or
            its text with `bm25_function`.
          top_k: passages per query.
        """
        if not self.lexical:
            raise self._error(
                "holds no BM25 vectors; index it with "
                "retrieval_mode=bm25 or hybrid (or overwrite=True)"
            )
        data, params = self._lexical_request(queries)
        found = self._searches(
            "searching BM25", data, top_k, anns_field=SPARSE_FIELD, search_params=params
        )
        return SearchResults(
            [[pid for pid, _ in hits] for hits in found],
            [[d for _, d in hits] for hits in found],
        )

    def hybrid_search(
        self,
        queries,
        lexical_queries,
        top_k,
        fusion="rrf",
        rrf_k=60,
        weights=(0.5, 0.5),
    ):
        """Dense and BM25 results fused by Milvus's `hybrid_search`.

        Each side finds its `top_k` best passages; Milvus fuses them with
        reciprocal rank fusion (score: sum of 1 / (rrf_k + rank)) or a
        weighted sum of each side's scores normalized by Milvus (arctan to
        [0, 1]).

        Args:
          queries: float [num_queries, dim], the query tower's vectors.
          lexical_queries: per query, as `search_lexical`'s.
          top_k: passages per query.
          fusion: ``"rrf"`` or ``"weighted"``.
          rrf_k: RRF's k (60, Milvus's and the paper's default).
          weights: (dense, BM25) weights of ``"weighted"``.

        Returns:
          `SearchResults`, best first.
        """
        from pymilvus import AnnSearchRequest
        from pymilvus import RRFRanker
        from pymilvus import WeightedRanker

        if not (self.dense and self.lexical):
            raise self._error(
                "hybrid search needs dense and BM25 vectors; "
                "index with retrieval_mode=hybrid (or overwrite=True)"
            )
        if fusion not in FUSIONS:
            raise ValueError(f"fusion={fusion!r}: expected one of {FUSIONS}")
        if len(queries) != len(lexical_queries):
            raise ValueError(
                f"{len(queries)} dense queries, {len(lexical_queries)} BM25 queries"
            )
        ranker = RRFRanker(rrf_k) if fusion == "rrf" else WeightedRanker(*weights)
        dense = self._dense_queries(queries)
        lexical, lexical_params = self._lexical_request(lexical_queries)
        _, _, metric, _ = self._vector_schema()
        limit = min(int(top_k), MAX_TOP_K)
        ids, scores = [], []
        for start in range(0, len(dense), _SEARCH_BATCH):
            end = start + _SEARCH_BATCH
            requests = [
                AnnSearchRequest(
                    dense[start:end],
                    VECTOR_FIELD,
                    {"metric_type": metric, "params": self._params(top_k)},
                    limit=limit,
                ),
                AnnSearchRequest(
                    lexical[start:end], SPARSE_FIELD, lexical_params, limit
                ),
            ]
            hits = self._call(
                "hybrid searching",
                self._client.hybrid_search,
                self.collection,
                requests,
                ranker,
                limit=limit,
                output_fields=[],
            )
            for query_hits in hits:
                ids.append([hit["id"] for hit in query_hits])
                scores.append([float(hit["distance"]) for hit in query_hits])
        return SearchResults(ids, scores)

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
        return {
            row["id"]: row[SPARSE_FIELD] for row in self._rows(["id", SPARSE_FIELD])
        }

    def close(self):
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()


def _json_property(properties, name, where):
    """The JSON object a collection property holds ({} if none)."""
    if name not in properties:
        return {}
    try:
        value = json.loads(properties[name])
    except json.JSONDecodeError as e:
        raise UserInputError(f"{where}: property {name} is not JSON ({e})") from None
    if not isinstance(value, dict):
        raise UserInputError(f"{where}: property {name} is not a JSON object")
    return value
