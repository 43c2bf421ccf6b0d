"""`SearchIndex`: a collection run_retrieval filled, searched by itself (no corpus, no flags of the run).

run_retrieval --do_index records how it filled the collection (the model,
its pooling and length, the passages, the search settings) twice: in
``<output_dir>/index_settings.json``, which also names the Milvus URI and
collection, and as a property of the collection. A search given the
output_dir reads the file; given a Milvus URI and a collection, the property.
The rows keep each passage's text and title, so hits are shown without the
corpus; a collection made before they were kept gives ids and scores only.
Opening an index needs pymilvus, not TensorFlow: a bad index is reported
before any model loads.
"""

import json
import os
from typing import NamedTuple

from bert_tf.data_prep.beir import passage_body
from bert_tf.errors import UserInputError
from bert_tf.retrieval.bm25 import query_vector
from bert_tf.retrieval.dual_encoder import DualEncoder
from bert_tf.retrieval.vector_store import HYBRID_SIDES
from bert_tf.retrieval.vector_store import RETRIEVAL_MODES

# The record run_retrieval --do_index leaves in its output_dir.
INDEX_SETTINGS_FILE = "index_settings.json"
# The Milvus Lite file and collection run_retrieval keeps in its output_dir
# without --milvus_uri/--milvus_collection (and a search reads there).
DEFAULT_INDEX_FILE = "index.db"
DEFAULT_COLLECTION = "bert_tf"

__all__ = [
    "DEFAULT_COLLECTION",
    "DEFAULT_INDEX_FILE",
    "INDEX_SETTINGS_FILE",
    "Hit",
    "SearchIndex",
    "is_milvus_uri",
    "record_index",
]


class Hit(NamedTuple):
    """A passage found: its id, document id and score; its words, its
    document's title and the text it was embedded from (the title, then the
    words: what a re-ranker reads). The last three are None when the index
    does not keep them."""

    id: str
    doc_id: str
    score: float
    text: str | None
    title: str | None
    passage: str | None


def is_milvus_uri(index):
    """Whether `index` names a Milvus database (a Milvus Lite ``.db`` path or
    a server URI) rather than a run_retrieval output_dir."""
    from bert_tf.retrieval.milvus_connection import is_server

    return is_server(index) or index.rstrip("/").endswith(".db")


def _relative(path, output_dir):
    """Local `path` relative to `output_dir` when inside it (the directory
    can move), else absolute."""
    path, output_dir = os.path.abspath(path), os.path.abspath(output_dir)
    if path == output_dir or path.startswith(output_dir + os.sep):
        return os.path.relpath(path, output_dir)
    return path


def record_index(output_dir, settings, store):
    """Records how `store` was filled: ``<output_dir>/index_settings.json``
    and the collection's property (`MilvusStore.set_index_settings`).

    Args:
      output_dir: the run's output_dir (a local directory; where the record
        file goes).
      settings: a JSON object: "model" (the towers' path), "milvus_uri",
        "milvus_collection", and what the search reads ("pooling",
        "max_seq_length", "shared_towers", "retrieval_mode", "fusion",
        "rrf_k", "dense_weight", "bm25_weight", "rescore_k",
        "search_params", ...). Paths inside `output_dir` are kept relative
        to it in the file.
    """
    # The file's paths relative to output_dir; the collection's own copy's
    # as seen from where it was filled (absolute). URIs stay as they are.
    settings, absolute = dict(settings), dict(settings)
    for name in ("model", "milvus_uri"):
        value = settings.get(name)
        if value and "://" not in value:
            settings[name] = _relative(value, output_dir)
            absolute[name] = os.path.abspath(value)
    if "://" not in output_dir:  # (a bucket's run is searched by its URI)
        with open(os.path.join(output_dir, INDEX_SETTINGS_FILE), "w") as f:
            json.dump(settings, f, indent=2, sort_keys=True)
    store.set_index_settings(absolute)


class SearchIndex:
    """A filled collection, opened as it is, and the model that filled it.

    Args:
      index: a run_retrieval output_dir (its index_settings.json names the
        Milvus URI, the collection and the model), or a Milvus URI (a
        Milvus Lite ``.db`` path or ``http://host:19530``).
      collection: the collection (needed with a Milvus URI; default with an
        output_dir: the recorded one).
      model: the dual encoder (a run_retrieval output_dir, a
        sentence-transformers directory or a BERT checkpoint); default: the
        one the index records.

    Raises:
      UserInputError: naming `index`, `collection` or `model`: not an
        index, no such collection, no model recorded or given.

    Example:

    ```python
    with SearchIndex("/tmp/retrieval_output") as index:
        hits = index.search(["who won super bowl 50?"], top_k=5)
    ```
    """

    def __init__(self, index, collection=None, model=None):
        from bert_tf.retrieval.milvus_store import MilvusStore
        from bert_tf.retrieval.milvus_store import check_milvus_uri

        if not index:
            raise UserInputError("required", argument="index")
        self.output_dir = None
        settings = {}
        if is_milvus_uri(index):
            if not collection:
                raise UserInputError(
                    f"the Milvus URI {index} needs the collection to search",
                    argument="collection",
                )
            check_milvus_uri(index, "index")
            if "://" not in index and not os.path.isdir(index):
                raise UserInputError(
                    f"index={index}: no such Milvus Lite database", argument="index"
                )
            uri = index
        else:
            self.output_dir = index
            settings = self._read_record(index)
            uri = settings.get("milvus_uri") or DEFAULT_INDEX_FILE
            if "://" not in uri and not os.path.isabs(uri):
                uri = os.path.join(index, uri)
            if not os.path.isdir(uri) and "://" not in uri:
                raise UserInputError(
                    f"index={index}: holds no index ({uri} does not exist; "
                    "run run_retrieval --do_index first)",
                    argument="index",
                )
            collection = (
                collection or settings.get("milvus_collection") or DEFAULT_COLLECTION
            )
        self.uri, self.collection = uri, collection
        search_params = settings.get("search_params")
        self.store = MilvusStore.existing(
            uri,
            collection,
            flag="index",
            rescore_k=int(settings.get("rescore_k") or 0),
            search_params=search_params,
        )
        try:
            if self.output_dir is None:
                settings = self.store.index_settings
                if search_params is None and settings.get("search_params"):
                    self.store.search_params = dict(settings["search_params"])
                    self.store.rescore_k = int(settings.get("rescore_k") or 0)
            self.settings = settings
            self.model = model or self._recorded_model()
        except Exception:
            self.store.close()
            raise

    @staticmethod
    def _read_record(output_dir):
        if not os.path.isdir(output_dir):
            raise UserInputError(
                f"index={output_dir}: neither a run_retrieval output_dir nor a "
                "Milvus URI (a Milvus Lite .db path or http://host:19530)",
                argument="index",
            )
        path = os.path.join(output_dir, INDEX_SETTINGS_FILE)
        if not os.path.exists(path):
            return {}  # an index made before the record was written
        try:
            with open(path, encoding="utf-8") as f:
                settings = json.load(f)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise UserInputError(f"{path}: not JSON ({e})") from None
        if not isinstance(settings, dict):
            raise UserInputError(f"{path}: expected a JSON object")
        return settings

    def _recorded_model(self):
        """The recorded towers' path (relative ones from the output_dir)."""
        model = self.settings.get("model")
        if model and self.output_dir and "://" not in model:
            model = os.path.join(self.output_dir, model)
        if not model and self.output_dir and DualEncoder.saved_in(self.output_dir):
            model = self.output_dir
        if not self.store.dense:
            return model  # BM25 needs no model
        if not model:
            raise UserInputError(
                f"{self.uri} collection {self.collection!r} records no model "
                "(indexed before run_retrieval recorded it): give the one that "
                "filled it",
                argument="model",
            )
        if not os.path.exists(model):
            raise UserInputError(
                f"model={model}: the model the index records does not exist "
                "(moved?); give it",
                argument="model",
            )
        return model

    @property
    def modes(self):
        """The retrieval modes the collection can answer."""
        store = self.store
        modes = ["dense"] if store.dense else []
        modes += ["bm25"] if store.lexical else []
        modes += ["splade"] if store.splade else []
        if store.dense + store.lexical + store.splade >= 2:
            modes.append("hybrid")
        return modes

    @property
    def hybrid_sides(self):
        """What ``hybrid`` fuses: the recorded --hybrid_sides, else dense
        and BM25 (run_retrieval's default), else every kind held."""
        recorded = self.settings.get("hybrid_sides")
        if recorded:
            return tuple(recorded.split(","))
        store = self.store
        if store.dense and store.lexical:
            return ("dense", "bm25")
        held = (store.dense, store.lexical, store.splade)
        return tuple(
            side for side, kept in zip(HYBRID_SIDES, held, strict=True) if kept
        )

    def sides(self, mode):
        """The sides `mode` searches."""
        return self.hybrid_sides if mode == "hybrid" else (mode,)

    def load_splade(self):
        """The SPLADE model the index records (TensorFlow loads), checked
        to be the one whose vectors the collection holds."""
        from bert_tf.retrieval.splade_vectors import load_splade
        from bert_tf.retrieval.splade_vectors import splade_fingerprint

        path = self.settings.get("splade_checkpoint")
        if not path or not os.path.exists(path):
            raise UserInputError(
                f"{self.uri} collection {self.collection!r}: the SPLADE model it "
                f"records ({path}) does not exist",
                argument="index",
            )
        model = load_splade(path)
        if splade_fingerprint(model) != self.store.splade_fingerprint:
            raise UserInputError(
                f"{path}: not the SPLADE model that filled {self.uri} collection "
                f"{self.collection!r}",
                argument="index",
            )
        return model

    @property
    def default_mode(self):
        """The recorded retrieval mode, else the first the collection answers."""
        recorded = self.settings.get("retrieval_mode")
        return recorded if recorded in self.modes else self.modes[0]

    def check_mode(self, mode):
        """`mode` (None: `default_mode`) if the collection answers it."""
        mode = mode or self.default_mode
        if mode not in RETRIEVAL_MODES or mode not in self.modes:
            raise UserInputError(
                f"retrieval_mode={mode}: {self.uri} collection "
                f"{self.collection!r} answers {', '.join(self.modes)}",
                argument="retrieval_mode",
            )
        return mode

    def load_towers(self):
        """The dual encoder of `model` (TensorFlow loads), checked to be the
        one whose vectors the collection holds."""
        from bert_tf.retrieval.indexing import towers_at

        kwargs = {}
        for name in ("pooling", "max_seq_length"):
            if self.settings.get(name):
                kwargs[name] = self.settings[name]
        if not DualEncoder.saved_in(self.model):
            kwargs["shared"] = self.settings.get("shared_towers", True)
        towers = towers_at(self.model, **kwargs)
        if towers.fingerprint() != self.store.fingerprint:
            raise UserInputError(
                f"model={self.model}: not the model that filled {self.uri} "
                f"collection {self.collection!r} (fingerprint "
                f"{towers.fingerprint()}, the collection's "
                f"{self.store.fingerprint})",
                argument="model",
            )
        return towers

    def search(
        self, queries, top_k, mode=None, towers=None, batch_size=64, splade=None
    ):
        """Per query, its `top_k` best passages as `Hit`s, best first.

        Args:
          queries: the query texts.
          top_k: passages per query.
          mode: ``dense``, ``bm25``, ``splade`` or ``hybrid`` (None:
            `default_mode`).
          towers: the dual encoder (`load_towers`; for a dense side).
          batch_size: queries per forward pass.
          splade: the SPLADE model (`load_splade`; for a SPLADE side).
        """
        from bert_tf.retrieval.splade_vectors import splade_vectors

        store, mode = self.store, self.check_mode(mode)
        sides = self.sides(mode)
        queries = list(queries)
        vectors = splade_queries = None
        if "dense" in sides:
            vectors = towers.encode_queries(queries, batch_size)
        if "splade" in sides:
            splade_queries = splade_vectors(splade, queries, "query", batch_size)
        if mode == "dense":
            # A quantized collection indexed without rescoring still shows
            # float32 similarities (its codes' inner products, e.g. 178968.0,
            # mean nothing to a reader): its top_k are rescored.
            found = store.search(vectors, top_k, rescore_k=store.rescore_k or top_k)
        elif mode == "splade":
            found = store.search_splade(splade_queries, top_k)
        else:
            lexical = queries if store.bm25_function else map(query_vector, queries)
            lexical = list(lexical)
            if mode == "bm25":
                found = store.search_lexical(lexical, top_k)
            else:
                found = store.hybrid_search(
                    vectors,
                    lexical,
                    top_k,
                    self.settings.get("fusion", "rrf"),
                    self.settings.get("rrf_k", 60),
                    tuple(self.settings.get(f"{s}_weight", 0.5) for s in sides),
                    splade_queries=splade_queries,
                    sides=sides,
                )
        rows = store.rows_of(pid for ids in found.ids for pid in ids)
        return [
            [
                self._hit(rows[pid], score)
                for pid, score in zip(ids, scores, strict=True)
            ]
            for ids, scores in zip(found.ids, found.scores, strict=True)
        ]

    def _hit(self, row, score):
        if not self.store.stores_text:
            return Hit(row.id, row.doc_id, float(score), None, None, None)
        title = row.title if self.store.stores_title else None
        body = passage_body(row.text, row.title)
        return Hit(row.id, row.doc_id, float(score), body, title, row.text)

    def close(self):
        self.store.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
