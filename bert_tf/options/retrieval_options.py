"""`RetrievalOptions`: what run_retrieval.py is asked to do beyond `RunOptions`.

TensorFlow-free, so flag mistakes are reported before TensorFlow loads. The
shared rules (batch size, learning rate, epochs, warmup, max_seq_length,
--serving_dtype's spelling) are `RunOptions`/`TrainingOptions`/
`ExportOptions`' own; here only the retrieval flags and the checks that
combine them with the run.
"""

import dataclasses
import os

from bert_tf.data_prep import beir
from bert_tf.data_prep.beir import CORPUS_FILE
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.option import option
from bert_tf.retrieval.bm25 import DEFAULT_B
from bert_tf.retrieval.bm25 import DEFAULT_K1
from bert_tf.retrieval.milvus_store import check_milvus_uri
from bert_tf.retrieval.quantized_vectors import VECTOR_TYPES
from bert_tf.retrieval.search_index import DEFAULT_COLLECTION
from bert_tf.retrieval.search_index import DEFAULT_INDEX_FILE
from bert_tf.retrieval.vector_store import FUSIONS
from bert_tf.retrieval.vector_store import HYBRID_SIDES
from bert_tf.retrieval.vector_store import METRICS
from bert_tf.retrieval.vector_store import RETRIEVAL_MODES

INDEX_TYPES = ("FLAT", "HNSW", "IVF_FLAT")
EVAL_BACKENDS = ("auto", "milvus")
# Training points per IVF list below which k-means clusters poorly (faiss
# warns under 39).
IVF_POINTS_PER_LIST = 39
# How the retrieval SavedModel stores the corpus embeddings.
RETRIEVAL_SERVING_DTYPES = ("float32", "bfloat16")

__all__ = [
    "DEFAULT_B",
    "DEFAULT_K1",
    "FUSIONS",
    "HYBRID_SIDES",
    "INDEX_TYPES",
    "METRICS",
    "RETRIEVAL_MODES",
    "VECTOR_TYPES",
    "RetrievalOptions",
    "check_beir_dir",
    "check_passages",
    "check_rerank_checkpoint",
    "check_serving_dtype",
    "check_sparse_encoder_dir",
]


@dataclasses.dataclass(frozen=True)
class RetrievalOptions:
    """The retrieval task's options (flags of run_retrieval.py, same names); checked when made.

    `RunOptions` carries the rest: output_dir, init_checkpoint,
    max_seq_length (None: the model's), do_train, do_eval, do_predict (the
    --do_index flag: the corpus into the vector store), the training options
    and --export_dir.

    Args:
      data_dir: BEIR directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.
      train_split, eval_split: qrels/<split>.tsv of --do_train / --do_eval.
      pooling: pooling of a plain BERT --init_checkpoint (mean, cls, max).
      passage_length, passage_stride: documents cut into passages of this
        many word pieces, this far apart (None: the tower's max_seq_length -
        2, half of it).
      shared_towers: one encoder for queries and documents.
      hard_negatives: per training query, passages of non-relevant documents
        ranked highest by the starting encoder, beside the in-batch negatives.
      similarity_scale: scale of the cosine similarities in the loss.
      encode_batch_size: texts per forward pass when embedding.
      eval_top_k: documents per query in run.tsv.
      milvus_uri: Milvus Lite file or server URI (None: <output_dir>/index.db).
      milvus_collection, index_type, metric_type, hnsw_m,
        hnsw_ef_construction, hnsw_ef, ivf_nlist, ivf_nprobe,
        overwrite_index: the collection and its index.
      rerank_checkpoint, rerank_top_k: a cross-encoder second stage over
        each query's best rerank_top_k documents: in the exported SavedModel
        (dense), and in --do_eval (any mode: ``<metric>_reranked`` results).
      rerank_even_if_worse: re-rank with a cross-encoder whose run_reranker
        evaluation recorded that it re-ranked worse (else it is skipped:
        `bert_tf.retrieval.rerank_verdict`).
      retrieval_mode: ``dense`` (the towers), ``bm25`` (BM25 over the same
        passages), ``splade`` (SPLADE vectors of --splade_checkpoint) or
        ``hybrid`` (--hybrid_sides fused by Milvus's hybrid_search).
      splade_checkpoint: a sentence-transformers SparseEncoder directory:
        documents' ``encode_document`` vectors stored as a
        SPARSE_FLOAT_VECTOR field (inner product), queries' ``encode_query``.
      hybrid_sides: what ``hybrid`` fuses: two or three of dense, bm25,
        splade, comma-separated.
      splade_weight: the SPLADE side's weight of ``--fusion=weighted``.
      rerank_multi_vector: a MultiVectorEncoder (ColBERT) directory whose
        MaxSim re-orders each query's --rerank_top_k best documents in
        --do_eval (``<metric>_reranked``, run_reranked.tsv).
      bm25_k1, bm25_b: BM25's term-frequency saturation and length
        normalization.
      bm25_function: BM25 by Milvus's own function (a server --milvus_uri;
        Milvus Lite has none), instead of sparse vectors computed here.
      fusion, rrf_k, dense_weight, bm25_weight: how ``hybrid`` fuses: RRF
        with k, or the weighted sum of Milvus-normalized scores.
      vector_type: ``float32``, ``int8`` (per-dimension scale fitted on the
        corpus) or ``binary`` (sign bits, Hamming distance).
      rescore_k: with int8/binary, re-score this many best by the codes
        with the float32 vectors (0: no rescoring).
      corpus_file: with --runner, the corpus of --do_index: globs
        (comma-separated) of corpus.jsonl-style files, .gz read as gzip
        (None: data_dir/corpus.jsonl).

    Example:

    ```python
    options = RetrievalOptions(data_dir="squad_beir", hard_negatives=2)
    options.check(run_options)
    run_task(RetrievalTask(run_options, options))
    ```
    """

    data_dir: str = option(
        help="BEIR directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
        run_defining=True,
    )
    train_split: str = option(
        "train", "qrels/<this>.tsv for --do_train.", run_defining=True
    )
    eval_split: str = option("test", "qrels/<this>.tsv for --do_eval.")
    pooling: str | None = option(
        None,
        "Pooling of a plain BERT --init_checkpoint: mean, cls, max.",
        run_defining=True,
        absent_when_none=True,
    )
    passage_length: int | None = option(
        None,
        "Word pieces of text per passage (default: max_seq_length - 2); longer "
        "documents are cut into several passages.",
        run_defining=True,
        absent_when_none=True,
    )
    passage_stride: int | None = option(
        None,
        "Word pieces between passage starts (default: half of --passage_length).",
        run_defining=True,
        absent_when_none=True,
    )
    shared_towers: bool = option(
        True,
        "One encoder for queries and documents; --noshared_towers fine-tunes two.",
        run_defining=True,
    )
    hard_negatives: int = option(
        0,
        "Per training query, this many passages of non-relevant documents ranked "
        "highest by the starting encoder (mined once, before training), beside "
        "the in-batch negatives.",
        run_defining=True,
    )
    similarity_scale: float = option(
        20.0, "Scale of the cosine similarities in the loss.", run_defining=True
    )
    encode_batch_size: int = option(64, "Texts per forward pass when embedding.")
    eval_top_k: int = option(100, "Documents per query in run.tsv.")
    milvus_uri: str | None = option(
        None,
        "Milvus: a file path ending in .db (Milvus Lite, default "
        "<output_dir>/index.db) or http://host:19530 (a server or cluster).",
    )
    milvus_collection: str = option(DEFAULT_COLLECTION, "The Milvus collection.")
    index_type: str = option(
        "FLAT",
        "FLAT (exact), HNSW or IVF_FLAT (approximate, for large corpora).",
        choices=INDEX_TYPES,
    )
    metric_type: str = option(
        "IP", "Similarity: inner product, cosine or L2.", choices=METRICS
    )
    hnsw_m: int = option(16, "HNSW: graph degree M.")
    hnsw_ef_construction: int = option(200, "HNSW: efConstruction.")
    hnsw_ef: int = option(128, "HNSW: ef at search (at least --eval_top_k).")
    ivf_nlist: int = option(128, "IVF_FLAT: clusters (nlist).")
    ivf_nprobe: int = option(16, "IVF_FLAT: clusters searched (nprobe).")
    overwrite_index: bool = option(
        False,
        "Drop the collection first (e.g. after fine-tuning: the index holds the "
        "old model's vectors).",
    )
    eval_backend: str = option(
        "auto",
        "--do_eval searches: auto: a Milvus Lite FLAT float32 collection through "
        "an exact copy of its rows, and BM25 on Milvus Lite through a copy of its "
        "stored BM25 vectors (the same results, minutes faster), any other "
        "collection as it is; milvus: always the collection itself, as it will "
        "be served.",
        choices=EVAL_BACKENDS,
    )
    rerank_checkpoint: str | None = option(
        None,
        "A cross-encoder (a CrossEncoder directory or a run_reranker output_dir) "
        "that re-orders each query's --rerank_top_k best: with --export_dir in the "
        "SavedModel (both stages in one graph), with --do_eval the results of any "
        "--retrieval_mode (<metric>_reranked, run_reranked.tsv).",
    )
    rerank_top_k: int = option(
        20, "Candidate passages per query for --rerank_checkpoint."
    )
    rerank_even_if_worse: bool = option(
        False,
        "Re-rank with --rerank_checkpoint even when its run_reranker --do_eval "
        "recorded that re-ranking lowered mrr@10 (rerank_verdict.json); without "
        "it such a cross-encoder is skipped and the first stage's order kept.",
    )
    retrieval_mode: str = option(
        "dense",
        "dense: the towers' vectors; bm25: BM25 over the same passages (sparse "
        "vectors in Milvus); hybrid: both, fused by Milvus's hybrid_search.",
        choices=RETRIEVAL_MODES,
    )
    splade_checkpoint: str | None = option(
        None,
        "splade / hybrid with splade in --hybrid_sides: a sentence-transformers "
        "SparseEncoder directory (SPLADE); passages' encode_document vectors go "
        "into Milvus as a SPARSE_FLOAT_VECTOR field (inner product), queries are "
        "encode_query's.",
    )
    hybrid_sides: str = option(
        "dense,bm25",
        "hybrid: which of dense, bm25, splade are fused (two or three, "
        "comma-separated).",
    )
    rerank_multi_vector: str | None = option(
        None,
        "A sentence-transformers MultiVectorEncoder (ColBERT) directory: --do_eval "
        "re-orders each query's --rerank_top_k best documents by MaxSim (a "
        "document scores as its best passage; <metric>_reranked, "
        "run_reranked.tsv).",
    )
    bm25_k1: float = option(DEFAULT_K1, "BM25: term-frequency saturation k1.")
    bm25_b: float = option(DEFAULT_B, "BM25: length normalization b (0 to 1).")
    bm25_function: bool = option(
        False,
        "BM25 by Milvus's own function (server --milvus_uri only; Milvus Lite has "
        "none) instead of the sparse vectors bert_tf computes.",
    )
    fusion: str = option(
        "rrf",
        "hybrid: reciprocal rank fusion, or the weighted sum of the two sides' "
        "scores (normalized by Milvus).",
        choices=FUSIONS,
    )
    rrf_k: int = option(60, "hybrid --fusion=rrf: k of 1 / (k + rank).")
    dense_weight: float = option(0.5, "hybrid --fusion=weighted: dense weight.")
    bm25_weight: float = option(0.5, "hybrid --fusion=weighted: BM25 weight.")
    splade_weight: float = option(
        0.5, "hybrid --fusion=weighted with splade in --hybrid_sides: SPLADE weight."
    )
    vector_type: str = option(
        "float32",
        "Dense vectors in Milvus as float32, int8 (per-dimension scale fitted on "
        "the corpus) or binary (sign bits, Hamming distance).",
        choices=VECTOR_TYPES,
    )
    rescore_k: int = option(
        0,
        "int8/binary: re-score this many best passages with the float32 vectors "
        "(kept beside the codes); 0: the codes' order.",
    )
    corpus_file: str | None = option(
        None,
        "With --runner: the corpus of --do_index, globs (comma-separated) of "
        "corpus.jsonl-style files, .gz read as gzip, e.g. "
        "'gs://bucket/corpus/part-*.jsonl.gz' (default: <data_dir>/corpus.jsonl).",
    )

    def __post_init__(self):
        check_beir_dir(self.data_dir)
        check_passages(self.passage_length, self.passage_stride)
        for name in ("encode_batch_size", "eval_top_k", "rerank_top_k"):
            if getattr(self, name) < 1:
                raise UserInputError(f"--{name}={getattr(self, name)}: must be >= 1")
        if self.hard_negatives < 0:
            raise UserInputError(
                f"--hard_negatives={self.hard_negatives}: must be >= 0"
            )
        check_choices(self)
        check_rerank_checkpoint(self.rerank_checkpoint, self.rerank_even_if_worse)
        if self.bm25_k1 < 0 or not 0 <= self.bm25_b <= 1:
            raise UserInputError(
                f"--bm25_k1={self.bm25_k1} --bm25_b={self.bm25_b}: k1 must be "
                ">= 0 and b in [0, 1]"
            )
        if not 0 < self.rrf_k < 16384:
            raise UserInputError(f"--rrf_k={self.rrf_k}: Milvus takes 1 to 16383")
        for name in ("dense_weight", "bm25_weight", "splade_weight"):
            if not 0 <= getattr(self, name) <= 1:
                raise UserInputError(
                    f"--{name}={getattr(self, name)}: Milvus takes 0 to 1"
                )
        self._check_fusion_flags()
        self._check_splade_flags()
        check_multi_vector_stage(self.rerank_multi_vector, self.rerank_checkpoint)
        if self.rescore_k < 0:
            raise UserInputError(f"--rescore_k={self.rescore_k}: must be >= 0")
        if self.rescore_k and self.retrieval_mode == "hybrid":
            raise UserInputError(
                f"--rescore_k={self.rescore_k}: rescoring orders dense searches "
                "(--retrieval_mode=dense); a hybrid search fuses Milvus's own "
                "scores, so it would change nothing"
            )
        if self.rescore_k and self.vector_type == "float32":
            raise UserInputError(
                f"--rescore_k={self.rescore_k}: rescoring needs "
                "--vector_type=int8 or binary"
            )
        if self.bm25_function:
            if "bm25" not in self.sides:
                raise UserInputError(
                    "--bm25_function: needs --retrieval_mode=bm25 or hybrid "
                    "(with bm25 in --hybrid_sides)"
                )
            if not (self.milvus_uri or "").startswith(("http://", "https://")):
                raise UserInputError(
                    f"--bm25_function: Milvus's BM25 function runs on a server "
                    f"(--milvus_uri=http://host:19530), not Milvus Lite "
                    f"(--milvus_uri={self.milvus_uri or '<output_dir>/index.db'}); "
                    "leave it out to compute BM25 here"
                )
        if self.vector_type != "float32" and "dense" not in self.sides:
            raise UserInputError(
                f"--vector_type={self.vector_type}: --retrieval_mode="
                f"{self.retrieval_mode} keeps no dense vectors"
            )
        if self.milvus_uri:
            check_milvus_uri(self.milvus_uri, "--milvus_uri")

    def _changed(self, name):
        """Whether option `name` differs from its default (was given)."""
        field = {f.name: f for f in dataclasses.fields(self)}[name]
        return getattr(self, name) != field.default

    @property
    def sides(self):
        """What --retrieval_mode searches: ``("dense",)``, ``("bm25",)``,
        ``("splade",)``, or hybrid's --hybrid_sides in `HYBRID_SIDES` order."""
        if self.retrieval_mode != "hybrid":
            return (self.retrieval_mode,)
        given = [side.strip() for side in self.hybrid_sides.split(",")]
        return tuple(side for side in HYBRID_SIDES if side in given)

    def weights(self):
        """--fusion=weighted's weights, one per side of `sides`."""
        return tuple(getattr(self, f"{side}_weight") for side in self.sides)

    def _check_fusion_flags(self):
        """A fusion flag that cannot act is one line naming it: the fusion
        flags outside hybrid, RRF's k with weights, weights with RRF, the
        weight of a side not fused, and zero weights only (every document
        would score 0)."""
        weights = ("dense_weight", "bm25_weight", "splade_weight")
        if self.retrieval_mode != "hybrid":
            for name in ("fusion", "rrf_k", "hybrid_sides", *weights):
                if self._changed(name):
                    raise UserInputError(
                        f"--{name}={getattr(self, name)}: fuses hybrid results; "
                        f"--retrieval_mode={self.retrieval_mode} has one side"
                    )
            return
        given = [side.strip() for side in self.hybrid_sides.split(",")]
        if (
            len(given) != len(set(given))
            or not set(given) <= set(HYBRID_SIDES)
            or len(given) < 2
        ):
            raise UserInputError(
                f"--hybrid_sides={self.hybrid_sides}: two or three of "
                f"{', '.join(HYBRID_SIDES)}, comma-separated, each once"
            )
        unused = weights if self.fusion == "rrf" else ("rrf_k",)
        for name in unused:
            if self._changed(name):
                raise UserInputError(
                    f"--{name}={getattr(self, name)}: not used by "
                    f"--fusion={self.fusion}"
                )
        for side in HYBRID_SIDES:
            name = f"{side}_weight"
            if side not in self.sides and self._changed(name):
                raise UserInputError(
                    f"--{name}={getattr(self, name)}: {side} is not in "
                    f"--hybrid_sides={self.hybrid_sides}"
                )
        if self.fusion == "weighted" and not any(self.weights()):
            raise UserInputError(
                " ".join(f"--{side}_weight=0" for side in self.sides)
                + ": every document would score 0; give one side a weight"
            )

    def _check_splade_flags(self):
        """--splade_checkpoint is given exactly when a side is SPLADE's, and
        is a SparseEncoder directory (not a dense model)."""
        if "splade" in self.sides and not self.splade_checkpoint:
            raise UserInputError(
                f"--retrieval_mode={self.retrieval_mode}"
                + (
                    f" --hybrid_sides={self.hybrid_sides}"
                    if len(self.sides) > 1
                    else ""
                )
                + ": needs --splade_checkpoint (a SparseEncoder directory)"
            )
        if self.splade_checkpoint and "splade" not in self.sides:
            raise UserInputError(
                f"--splade_checkpoint: used by --retrieval_mode=splade or hybrid "
                f"with splade in --hybrid_sides, not --retrieval_mode="
                f"{self.retrieval_mode}"
                + (
                    f" --hybrid_sides={self.hybrid_sides}"
                    if len(self.sides) > 1
                    else ""
                )
            )
        if self.splade_checkpoint:
            check_sparse_encoder_dir(self.splade_checkpoint)

    def check(self, run):
        """The checks that need the `RunOptions` too (before TensorFlow loads)."""
        if not (run.do_train or run.do_predict or run.do_eval or run.export):
            raise UserInputError(
                "At least one of --do_train, --do_index, --do_eval or --export_dir "
                "must be given."
            )
        run.check_paths()
        if self.rerank_checkpoint and not (run.export or run.do_eval):
            raise UserInputError(
                "--rerank_checkpoint: needs --do_eval (re-ranked results) or "
                "--export_dir (the two-stage SavedModel)"
            )
        if run.export and self.retrieval_mode in ("bm25", "splade"):
            raise UserInputError(
                "--export_dir: the retrieval SavedModel searches dense vectors, "
                f"which --retrieval_mode={self.retrieval_mode} does not keep"
            )
        if self.rerank_multi_vector and not run.do_eval:
            raise UserInputError(
                "--rerank_multi_vector: re-ranks --do_eval's results (the "
                "SavedModel has no MaxSim stage); give --do_eval"
            )
        if run.export:
            check_serving_dtype(run.export.serving_dtype)

    def training_fingerprints(self, run):
        """What a --do_train run records of its data: the BEIR files it
        trains on (`bert_tf.data_prep.beir.training_fingerprints`)."""
        return beir.training_fingerprints(self.data_dir, self.train_split)

    def recall_warning(self, num_passages):
        """The numbers that show --index_type=IVF_FLAT missing passages of
        a corpus of `num_passages`, or None.

        k-means needs about 39 points per list (faiss's minimum) to cut
        lists that split the corpus evenly; with fewer, most lists are empty
        or hold a handful, and a query that searches `ivf_nprobe` of them
        misses passages it would have found (FLAT searches all)."""
        if self.index_type != "IVF_FLAT" or self.ivf_nprobe >= self.ivf_nlist:
            return None
        if num_passages >= IVF_POINTS_PER_LIST * self.ivf_nlist:
            return None
        return (
            f"IVF_FLAT nlist={self.ivf_nlist} over {num_passages} passages: each "
            f"query searches {self.ivf_nprobe} of {self.ivf_nlist} lists, and "
            f"k-means wants {IVF_POINTS_PER_LIST * self.ivf_nlist} passages to "
            "fill them; expect passages FLAT finds to be missed (raise "
            f"--ivf_nprobe to {self.ivf_nlist}, lower --ivf_nlist, or use FLAT)"
        )

    def uri(self, output_dir):
        """--milvus_uri, default ``<output_dir>/index.db`` (Milvus Lite)."""
        return self.milvus_uri or os.path.join(output_dir, DEFAULT_INDEX_FILE)

    def index_params(self):
        """Build parameters of --index_type."""
        if self.index_type == "HNSW":
            return {"M": self.hnsw_m, "efConstruction": self.hnsw_ef_construction}
        if self.index_type == "IVF_FLAT":
            return {"nlist": self.ivf_nlist}
        return {}

    def search_params(self):
        """Search parameters of --index_type (HNSW's ef at least the top k)."""
        if self.index_type == "HNSW":
            return {"ef": max(self.hnsw_ef, self.eval_top_k)}
        if self.index_type == "IVF_FLAT":
            return {"nprobe": self.ivf_nprobe}
        return {}


# --- the checks run_retrieval and export_saved_model --model_type=retrieval share


def check_beir_dir(data_dir):
    """--data_dir is a directory holding the BEIR corpus."""
    if not data_dir or not os.path.isdir(data_dir):
        raise UserInputError(f"--data_dir={data_dir}: not a directory")
    corpus = os.path.join(data_dir, CORPUS_FILE)
    if not os.path.isfile(corpus):
        raise UserInputError(
            f"--data_dir={data_dir}: no {CORPUS_FILE} (the BEIR layout: "
            f"{CORPUS_FILE}, queries.jsonl, qrels/<split>.tsv)"
        )


def check_passages(passage_length, passage_stride):
    """--passage_length and --passage_stride: positive, the stride at most the length."""
    for name, value in (
        ("passage_length", passage_length),
        ("passage_stride", passage_stride),
    ):
        if value is not None and value < 1:
            raise UserInputError(f"--{name}={value}: must be >= 1")
    if passage_length and passage_stride and passage_stride > passage_length:
        raise UserInputError(
            f"--passage_stride={passage_stride}: must be at most "
            f"--passage_length={passage_length}"
        )


def check_rerank_checkpoint(rerank_checkpoint, rerank_even_if_worse=False):
    """--rerank_checkpoint exists (when given); --rerank_even_if_worse needs it."""
    if rerank_checkpoint and not os.path.exists(rerank_checkpoint):
        raise UserInputError(f"--rerank_checkpoint={rerank_checkpoint}: does not exist")
    if rerank_even_if_worse and not rerank_checkpoint:
        raise UserInputError(
            "--rerank_even_if_worse: overrides the verdict of a --rerank_checkpoint; "
            "give one"
        )


def check_serving_dtype(serving_dtype):
    """How the retrieval SavedModel stores the corpus: float32 or bfloat16."""
    if serving_dtype not in RETRIEVAL_SERVING_DTYPES:
        raise UserInputError(
            f"--serving_dtype={serving_dtype}: expected float32 or bfloat16"
        )


def _model_type(directory, flag):
    """The sentence-transformers model type a directory's
    config_sentence_transformers.json names (and its modules' classes)."""
    import json

    if not os.path.isdir(directory):
        raise UserInputError(f"--{flag}={directory}: not a directory")
    modules_file = os.path.join(directory, "modules.json")
    if not os.path.isfile(modules_file):
        raise UserInputError(
            f"--{flag}={directory}: no modules.json (a sentence-transformers "
            "directory is expected)"
        )
    try:
        with open(modules_file, encoding="utf-8") as f:
            modules = [str(m.get("type", "")) for m in json.load(f)]
        config_file = os.path.join(directory, "config_sentence_transformers.json")
        config = {}
        if os.path.isfile(config_file):
            with open(config_file, encoding="utf-8") as f:
                config = json.load(f)
    except (OSError, ValueError, AttributeError) as e:
        raise UserInputError(f"--{flag}={directory}: unreadable ({e})") from None
    return config.get("model_type"), modules


def check_sparse_encoder_dir(directory):
    """--splade_checkpoint is a SparseEncoder directory (not a dense model):
    its config says SparseEncoder, or its modules are sparse_encoder's."""
    model_type, modules = _model_type(directory, "splade_checkpoint")
    if model_type == "SparseEncoder" or any("sparse_encoder" in m for m in modules):
        return
    raise UserInputError(
        f"--splade_checkpoint={directory}: not a SparseEncoder (SPLADE) directory "
        f"(model type {model_type or 'SentenceTransformer'}); a dense model goes "
        "in --init_checkpoint"
    )


def check_multi_vector_stage(rerank_multi_vector, rerank_checkpoint):
    """--rerank_multi_vector, where given, is a ColBERT directory and the only
    second stage (run_retrieval's and bert-tf-search's check)."""
    if not rerank_multi_vector:
        return
    check_multi_vector_dir(rerank_multi_vector)
    if rerank_checkpoint:
        raise UserInputError(
            "--rerank_multi_vector: one second stage at a time; leave "
            "out --rerank_checkpoint (or it)"
        )


def check_multi_vector_dir(directory):
    """--rerank_multi_vector is a MultiVectorEncoder (ColBERT) directory."""
    model_type, modules = _model_type(directory, "rerank_multi_vector")
    if model_type == "MultiVectorEncoder" or any(
        "multi_vector_encoder" in m for m in modules
    ):
        return
    raise UserInputError(
        f"--rerank_multi_vector={directory}: not a MultiVectorEncoder (ColBERT) "
        f"directory (model type {model_type or 'SentenceTransformer'})"
    )
