"""`RerankerOptions`: what run_reranker.py is asked to do beyond `RunOptions`."""

import dataclasses
import os

from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.checks import required

RERANK_LOSSES = ("bce", "listwise")


@dataclasses.dataclass(frozen=True)
class RerankerOptions:
    """The re-ranking task's options (flags of the same names); checked when made.

    Args:
      data_dir: BEIR directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.
      retrieval_checkpoint: the first stage, a dual encoder: a run_retrieval
        output_dir (its trained towers) or a sentence-transformers directory.
      train_split, eval_split: qrels/<split>.tsv of --do_train / --do_eval.
      passage_length, passage_stride: documents cut into passages as
        run_retrieval cuts them (None: the dual encoder's length, half of it).
      hard_negatives: negatives per training query: the first stage's best
        passages of documents not relevant to it.
      rerank_loss: "bce" (each pair against its 0/1 label) or "listwise"
        (softmax over the positive and its negatives).
      rerank_top_k: documents of the first stage the cross-encoder re-orders
        in --do_eval.
      eval_top_k: documents per query in the first stage's run (the metrics'
        depth; at least rerank_top_k).
      encode_batch_size: batch of the dual encoder's embedding passes.

    Example:

    ```python
    RerankerOptions(data_dir="/tmp/squad_beir", retrieval_checkpoint=MINILM_DIR,
                    rerank_loss="listwise", rerank_top_k=20)
    ```
    """

    RUN_DEFINING = (
        "data_dir",
        "retrieval_checkpoint",
        "train_split",
        "passage_length",
        "passage_stride",
        "hard_negatives",
        "rerank_loss",
    )

    data_dir: str | None = None
    retrieval_checkpoint: str | None = None
    train_split: str = "train"
    eval_split: str = "test"
    passage_length: int | None = None
    passage_stride: int | None = None
    hard_negatives: int = 7
    rerank_loss: str = "bce"
    rerank_top_k: int = 20
    eval_top_k: int = 100
    encode_batch_size: int = 64

    def __post_init__(self):
        required("data_dir", self.data_dir)
        existing_path("data_dir", self.data_dir)
        required("retrieval_checkpoint", self.retrieval_checkpoint)
        existing_path("retrieval_checkpoint", self.retrieval_checkpoint)
        if self.rerank_loss not in RERANK_LOSSES:
            raise UserInputError(
                f"--rerank_loss={self.rerank_loss!r}: expected one of "
                f"{', '.join(RERANK_LOSSES)}"
            )
        for name in (
            "passage_length",
            "passage_stride",
            "hard_negatives",
            "rerank_top_k",
            "eval_top_k",
            "encode_batch_size",
        ):
            positive(name, getattr(self, name))
        if self.eval_top_k < self.rerank_top_k:
            raise UserInputError(
                f"--eval_top_k={self.eval_top_k} < --rerank_top_k="
                f"{self.rerank_top_k}: the first stage must find the documents "
                "the cross-encoder re-orders"
            )

    def check(self, run):
        """The checks that need the `RunOptions` too (before TensorFlow loads)."""
        run.at_least_one("do_train", "do_eval")
        required("init_checkpoint", run.init_checkpoint)
        run.check_paths()
        splits = []
        if run.do_train:
            splits.append(("train_split", self.train_split))
        if run.do_eval:
            splits.append(("eval_split", self.eval_split))
        for name, split in splits:
            path = os.path.join(self.data_dir, "qrels", f"{split}.tsv")
            existing_path(name, path)
