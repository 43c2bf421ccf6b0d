"""`MilvusStore`: passage vectors in a Milvus collection (Milvus Lite file or server).

``uri`` is a file path ending in ``.db`` for Milvus Lite (embedded, nothing to
start) or ``http://host:19530`` for a Milvus server or cluster; the client
calls are the same. The collection records the fingerprint of the model that
filled it (a collection property), so vectors of two models are never mixed,
and keeps each passage's text and title, so a hit is shown without the corpus.
Database errors become one `UserInputError` line naming the URI / collection.

The store's concerns live beside it: `milvus_connection` (the URI and the
client), `milvus_schema` (fields, properties and the checks of an existing
collection), `milvus_rows` (writes and reads) and `milvus_search` (dense,
BM25, SPLADE and hybrid search).
"""

import glob
import logging
import os
import time

from bert_tf.errors import UserInputError
from bert_tf.retrieval import quantized_vectors
from bert_tf.retrieval.bm25 import DEFAULT_B
from bert_tf.retrieval.bm25 import DEFAULT_K1
from bert_tf.retrieval.milvus_connection import argument_of
from bert_tf.retrieval.milvus_connection import check_milvus_uri
from bert_tf.retrieval.milvus_connection import connect
from bert_tf.retrieval.milvus_connection import is_server
from bert_tf.retrieval.milvus_rows import MilvusRows
from bert_tf.retrieval.milvus_rows import fit_bytes
from bert_tf.retrieval.milvus_schema import FINGERPRINT_PROPERTY
from bert_tf.retrieval.milvus_schema import MAX_TEXT_BYTES
from bert_tf.retrieval.milvus_schema import MilvusSchema
from bert_tf.retrieval.milvus_search import MilvusSearch
from bert_tf.retrieval.vector_store import METRICS
from bert_tf.retrieval.vector_store import VectorStore

INDEX_TYPES = ("FLAT", "HNSW", "IVF_FLAT")
_MAX_MESSAGE = 400
_CREATED_ELSEWHERE_SECONDS = 1.0

# Where the tools and tests have imported them from.
__all__ = [
    "FINGERPRINT_PROPERTY",
    "INDEX_TYPES",
    "MAX_TEXT_BYTES",
    "MilvusStore",
    "check_milvus_uri",
    "fit_bytes",
]


class MilvusStore(MilvusRows, MilvusSearch, MilvusSchema, VectorStore):
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
      splade: a SPLADE sparse vector field (`search_splade`, and a side of
        `hybrid_search`), SPARSE_FLOAT_VECTOR searched by inner product;
        None: as the existing collection has it (a new one gets none).
      splade_fingerprint: the SPLADE model's fingerprint
        (`bert_tf.retrieval.splade_vectors.splade_fingerprint`); an existing
        collection's splade field must be of the same model (None: as it is).

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
        splade=False,
        splade_fingerprint=None,
    ):
        as_it_is = dimension is None
        if vector_type not in quantized_vectors.VECTOR_TYPES:
            raise UserInputError(
                f"vector_type={vector_type}: expected one of "
                f"{quantized_vectors.VECTOR_TYPES}"
            )
        if bm25_function and not is_server(uri):
            raise UserInputError(
                f"{flag}={uri}: Milvus Lite has no BM25 function; compute BM25 "
                "here (bm25_function=False) or give a server URI",
                argument=argument_of(flag),
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
        self.splade = splade
        self.splade_fingerprint = splade_fingerprint
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
        self._client = connect(uri, flag)
        try:
            if overwrite and self._client.has_collection(collection):
                self._client.drop_collection(collection)
            if self._client.has_collection(collection):
                self._open_existing(as_it_is)
            elif as_it_is:
                raise UserInputError(
                    f"{flag}={uri}: no collection {collection!r} (collections: "
                    f"{', '.join(self._client.list_collections()) or 'none'})",
                    argument=argument_of(flag),
                )
            else:
                self._create_or_open(dict(index_params or {}))
        except Exception:
            self.close()
            raise

    def _open_existing(self, as_it_is):
        info = self._call(
            "describing the collection",
            self._client.describe_collection,
            self.collection,
        )
        if as_it_is:
            self._take_existing(info)
        self._check_existing(info)
        # A collection whose writer was killed is left released.
        self._load_collection()

    def _create_or_open(self, index_params):
        """Creates the collection; if another process created it meanwhile
        (two runs started at once on a server), opens and checks that one."""
        dense, lexical, splade = self.dense, self.lexical, self.splade
        self.dense, self.lexical = bool(dense), bool(lexical)
        self.splade = bool(splade)
        if not (self.dense or self.lexical or self.splade):
            raise UserInputError(
                "dense=False needs lexical=True or splade=True: nothing to search"
            )
        if self.splade and not self.splade_fingerprint:
            raise UserInputError("splade=True needs the SPLADE model's fingerprint")
        try:
            self._create(index_params)
        except UserInputError as error:
            # ("already exists"; Milvus Lite's server may say "File exists".)
            if "exist" not in str(error) or not self._client.has_collection(
                self.collection
            ):
                raise
            # Its creator adds the index and loads it right after creating
            # it (one client call, a few requests).
            time.sleep(_CREATED_ELSEWHERE_SECONDS)
            self.dense, self.lexical, self.splade = dense, lexical, splade
            self._open_existing(False)

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
            splade=None,
            metric=None,
            index_type=None,
            **kwargs,
        )

    @property
    def embedded(self):
        """Whether this is a Milvus Lite file (not a server or cluster)."""
        return not is_server(self.uri)

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
            if is_server(self.uri):
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
                **argument_of(self._flag),
                "overwrite": "overwrite_index",
                "index_type": "index_type",
                "metric": "metric_type",
                "retrieval_mode": "retrieval_mode",
            },
        )

    def close(self):
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()
