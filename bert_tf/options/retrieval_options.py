"""`RetrievalOptions`: what run_retrieval.py is asked to do beyond `RunOptions`.

TensorFlow-free, so flag mistakes are reported before TensorFlow loads. The
shared rules (batch size, learning rate, epochs, warmup, max_seq_length,
--serving_dtype's spelling) are `RunOptions`/`TrainingOptions`/
`ExportOptions`' own; here only the retrieval flags and the checks that
combine them with the run.
"""

import dataclasses
import os

from bert_tf.errors import UserInputError
from bert_tf.retrieval.vector_store import METRICS

INDEX_TYPES = ("FLAT", "HNSW", "IVF_FLAT")
# Training points per IVF list below which k-means clusters poorly (faiss
# warns under 39).
IVF_POINTS_PER_LIST = 39
# How the retrieval SavedModel stores the corpus embeddings.
RETRIEVAL_SERVING_DTYPES = ("float32", "bfloat16")

__all__ = [
    "INDEX_TYPES",
    "METRICS",
    "RetrievalOptions",
    "check_beir_dir",
    "check_passages",
    "check_rerank_checkpoint",
    "check_serving_dtype",
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
      rerank_checkpoint, rerank_top_k: a cross-encoder second stage in the
        exported SavedModel, over each query's best rerank_top_k passages.

    Example:

    ```python
    options = RetrievalOptions(data_dir="squad_beir", hard_negatives=2)
    options.check(run_options)
    run_task(RetrievalTask(run_options, options))
    ```
    """

    RUN_DEFINING = (
        "data_dir",
        "train_split",
        "pooling",
        "passage_length",
        "passage_stride",
        "shared_towers",
        "hard_negatives",
        "similarity_scale",
    )
    ABSENT_WHEN_NONE = ("pooling", "passage_length", "passage_stride")

    data_dir: str
    train_split: str = "train"
    eval_split: str = "test"
    pooling: str | None = None
    passage_length: int | None = None
    passage_stride: int | None = None
    shared_towers: bool = True
    hard_negatives: int = 0
    similarity_scale: float = 20.0
    encode_batch_size: int = 64
    eval_top_k: int = 100
    milvus_uri: str | None = None
    milvus_collection: str = "bert_tf"
    index_type: str = "FLAT"
    metric_type: str = "IP"
    hnsw_m: int = 16
    hnsw_ef_construction: int = 200
    hnsw_ef: int = 128
    ivf_nlist: int = 128
    ivf_nprobe: int = 16
    overwrite_index: bool = False
    rerank_checkpoint: str | None = None
    rerank_top_k: int = 20

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
        if self.index_type not in INDEX_TYPES:
            raise UserInputError(
                f"--index_type={self.index_type}: expected one of {', '.join(INDEX_TYPES)}"
            )
        if self.metric_type not in METRICS:
            raise UserInputError(
                f"--metric_type={self.metric_type}: expected one of {', '.join(METRICS)}"
            )
        check_rerank_checkpoint(self.rerank_checkpoint)

    def check(self, run):
        """The checks that need the `RunOptions` too (before TensorFlow loads)."""
        if not (run.do_train or run.do_predict or run.do_eval or run.export):
            raise UserInputError(
                "At least one of --do_train, --do_index, --do_eval or --export_dir "
                "must be given."
            )
        if self.rerank_checkpoint and not run.export:
            raise UserInputError(
                "--rerank_checkpoint: the two-stage SavedModel needs --export_dir"
            )
        if run.export:
            check_serving_dtype(run.export.serving_dtype)

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
        return self.milvus_uri or os.path.join(output_dir, "index.db")

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
    """--data_dir is a directory."""
    if not data_dir or not os.path.isdir(data_dir):
        raise UserInputError(f"--data_dir={data_dir}: not a directory")


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


def check_rerank_checkpoint(rerank_checkpoint):
    """--rerank_checkpoint exists (when given)."""
    if rerank_checkpoint and not os.path.exists(rerank_checkpoint):
        raise UserInputError(f"--rerank_checkpoint={rerank_checkpoint}: does not exist")


def check_serving_dtype(serving_dtype):
    """How the retrieval SavedModel stores the corpus: float32 or bfloat16."""
    if serving_dtype not in RETRIEVAL_SERVING_DTYPES:
        raise UserInputError(
            f"--serving_dtype={serving_dtype}: expected float32 or bfloat16"
        )
