"""`RetrievalOptions`: what run_retrieval.py does, as typed values checked once.

TensorFlow-free, so flag mistakes are reported before TensorFlow loads.
"""

import dataclasses
import os

from bert_tf.errors import UserInputError

__all__ = ["RetrievalOptions"]


@dataclasses.dataclass
class RetrievalOptions:
    """The options of a retrieval run (flags of run_retrieval.py, same names).

    Example:

    ```python
    options = RetrievalOptions(
        data_dir="squad_beir", output_dir="out", init_checkpoint="all-MiniLM-L6-v2",
        do_index=True, do_eval=True,
    )
    options.check()
    run_retrieval(options)
    ```
    """

    data_dir: str
    output_dir: str
    init_checkpoint: str | None = None
    do_train: bool = False
    do_index: bool = False
    do_eval: bool = False
    export_dir: str | None = None
    serving_dtype: str = "float32"
    rerank_checkpoint: str | None = None
    rerank_top_k: int = 20
    train_split: str = "train"
    eval_split: str = "test"
    pooling: str | None = None
    max_seq_length: int | None = None
    passage_length: int | None = None
    passage_stride: int | None = None
    shared_towers: bool = True
    hard_negatives: int = 0
    train_batch_size: int = 32
    learning_rate: float = 2e-5
    num_train_epochs: float = 1.0
    warmup_proportion: float = 0.1
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
    seed: int = 12345

    @property
    def uri(self):
        """--milvus_uri, default ``<output_dir>/index.db`` (Milvus Lite)."""
        return self.milvus_uri or os.path.join(self.output_dir, "index.db")

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

    def check(self):
        """Raises `UserInputError` (``--flag: reason``) on a bad combination."""
        if not (self.do_train or self.do_index or self.do_eval or self.export_dir):
            raise UserInputError(
                "At least one of --do_train, --do_index, --do_eval or --export_dir "
                "must be given."
            )
        if not os.path.isdir(self.data_dir):
            raise UserInputError(f"--data_dir={self.data_dir}: not a directory")
        for name in ("passage_length", "passage_stride", "max_seq_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UserInputError(f"--{name}={value}: must be >= 1")
        if (
            self.passage_length
            and self.passage_stride
            and self.passage_stride > self.passage_length
        ):
            raise UserInputError(
                f"--passage_stride={self.passage_stride}: must be at most "
                f"--passage_length={self.passage_length}"
            )
        positive = ("train_batch_size", "encode_batch_size", "eval_top_k")
        for name in positive:
            if getattr(self, name) < 1:
                raise UserInputError(f"--{name}={getattr(self, name)}: must be >= 1")
        if self.hard_negatives < 0:
            raise UserInputError(
                f"--hard_negatives={self.hard_negatives}: must be >= 0"
            )
        if self.do_train and self.num_train_epochs <= 0:
            raise UserInputError(
                f"--num_train_epochs={self.num_train_epochs}: must be > 0"
            )
        if self.rerank_checkpoint and not self.export_dir:
            raise UserInputError(
                "--rerank_checkpoint: the two-stage SavedModel needs --export_dir"
            )
        if self.rerank_checkpoint and not os.path.exists(self.rerank_checkpoint):
            raise UserInputError(
                f"--rerank_checkpoint={self.rerank_checkpoint}: does not exist"
            )
        if self.rerank_top_k < 1:
            raise UserInputError(f"--rerank_top_k={self.rerank_top_k}: must be >= 1")
        if self.serving_dtype not in ("float32", "bfloat16"):
            raise UserInputError(
                f"--serving_dtype={self.serving_dtype}: expected float32 or bfloat16"
            )
