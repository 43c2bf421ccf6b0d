"""The collection `MilvusStore` keeps: its fields, properties and checks.

A collection records the fingerprint of the model that filled it (a
collection property), so vectors of two models are never mixed; opening one
checks its fields, vector type, dimension, metric and index against the
store's settings, or takes them as they are (`MilvusStore.existing`).
"""

import json
import threading

import numpy as np

from bert_tf.errors import UserInputError
from bert_tf.retrieval.milvus_connection import is_server

FINGERPRINT_PROPERTY = "bert_tf.fingerprint"
VECTOR_TYPE_PROPERTY = "bert_tf.vector_type"
INT8_SCALE_PROPERTY = "bert_tf.int8_scale"
BM25_DIGEST_PROPERTY = "bert_tf.bm25_digest"
# The SPLADE model whose document vectors the splade field holds (its weights'
# hash, as the dense model's `FINGERPRINT_PROPERTY`).
SPLADE_FINGERPRINT_PROPERTY = "bert_tf.splade_fingerprint"
# How the collection was filled (model, passages, search settings: JSON),
# what a search of the collection alone reads (`set_index_settings`).
INDEX_SETTINGS_PROPERTY = "bert_tf.index_settings"
# Fields: the searched vector (float32, int8 codes or sign bits), the float32
# copy of a quantized one (rescoring), the BM25 sparse vector, the passage's
# text (what was embedded; Milvus's own BM25 function reads it) and its
# document's title; SPLADE's sparse vector (`BertSparseEncoder`), a field of
# its own so one collection holds BM25 and SPLADE for hybrid search. Collections made before the text was kept lack the two.
VECTOR_FIELD = "vector"
FLOAT_FIELD = "float_vector"
SPARSE_FIELD = "sparse"
SPLADE_FIELD = "splade"
TEXT_FIELD = "text"
TITLE_FIELD = "title"
MAX_TEXT_BYTES = 65535
# Milvus's limits: a VARCHAR's bytes, rows of one search, rows of one request.
MAX_ID_BYTES = 1024
MAX_TOP_K = 16384

# This process's property writes, one at a time: `milvus-lite server` fails
# one of two at once on a collection (both rename one temporary file), and an
# index run's lock renews its property from a thread (`IndexLock`).
PROPERTY_WRITES = threading.Lock()

__all__ = ["PROPERTY_WRITES", "MilvusSchema"]


def _describe(dense, lexical, bm25_function, vector_type, splade=False):
    parts = [f"{vector_type} dense vectors"] if dense else []
    if lexical:
        parts.append("Milvus BM25" if bm25_function else "BM25 sparse vectors")
    if splade:
        parts.append("SPLADE sparse vectors")
    return " + ".join(parts) or "no vectors"


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


class MilvusSchema:
    """`MilvusStore`'s collection: its schema, its checks and its properties.

    A mixin of `MilvusStore`: it uses the store's client, settings, `_call`
    and `_error`.
    """

    @property
    def quantized(self):
        """Whether the dense vectors are int8 or binary codes."""
        return self.dense and self.vector_type != "float32"

    def _vector_schema(self):
        """(data type, dimension, metric, index type) of the searched field."""
        from pymilvus import DataType

        if self.vector_type == "float32" or not is_server(self.uri):
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
        properties = {
            FINGERPRINT_PROPERTY: self.fingerprint,
            VECTOR_TYPE_PROPERTY: self.vector_type,
        }
        if self.splade:
            # Searched as BM25's field is (`MilvusSearch._sparse_searches`).
            schema.add_field(SPLADE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
            index.add_index(
                field_name=SPLADE_FIELD,
                index_type="SPARSE_INVERTED_INDEX",
                metric_type="IP",
                params={},
            )
            properties[SPLADE_FINGERPRINT_PROPERTY] = self.splade_fingerprint
        self._call(
            "creating the collection",
            self._client.create_collection,
            self.collection,
            schema=schema,
            index_params=index,
            properties=properties,
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
        if self.splade is None:
            self.splade = SPLADE_FIELD in fields
        self.stores_text = TEXT_FIELD in fields
        self.stores_title = TITLE_FIELD in fields
        kept = (
            VECTOR_FIELD in fields,
            SPARSE_FIELD in fields,
            bool(info.get("functions")),
            properties.get(VECTOR_TYPE_PROPERTY, "float32"),
            SPLADE_FIELD in fields,
        )
        wanted = (
            self.dense,
            self.lexical,
            self.bm25_function,
            self.vector_type,
            self.splade,
        )
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
        kept_splade = properties.get(SPLADE_FINGERPRINT_PROPERTY)
        if self.splade and self.splade_fingerprint is None:
            self.splade_fingerprint = kept_splade  # as the collection has it
        elif self.splade and kept_splade != self.splade_fingerprint:
            raise self._error(
                f"holds the SPLADE vectors of another model (fingerprint "
                f"{kept_splade}, splade_checkpoint's {self.splade_fingerprint}); "
                "use another collection= or overwrite=True"
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
        if self.vector_type == "float32" or not is_server(self.uri):
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
        with PROPERTY_WRITES:
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
