"""`RerankerOptions`: what run_reranker.py is asked to do beyond `RunOptions`."""

import dataclasses
import os

from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.option import option
from bert_tf.options.option import same_as
from bert_tf.options.retrieval_options import RetrievalOptions

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

    data_dir: str | None = same_as(RetrievalOptions, "data_dir", default=None)
    retrieval_checkpoint: str | None = option(
        None,
        "The first stage (a dual encoder): a run_retrieval --output_dir with "
        "trained towers, or a sentence-transformers directory.",
        run_defining=True,
    )
    train_split: str = same_as(RetrievalOptions, "train_split")
    eval_split: str = same_as(RetrievalOptions, "eval_split")
    passage_length: int | None = option(
        None,
        "Word pieces of text per passage (default: the dual encoder's "
        "max_seq_length - 2); longer documents are cut into several passages.",
        run_defining=True,
    )
    passage_stride: int | None = same_as(
        RetrievalOptions, "passage_stride", absent_when_none=False
    )
    hard_negatives: int = option(
        3,
        "Negatives per training query: the first stage's best passages of "
        "documents not relevant to it (its top k minus the positives).",
        run_defining=True,
    )
    rerank_loss: str = option(
        "listwise",
        "bce: binary cross-entropy of every (query, passage) pair against 1 for "
        "the positive, 0 for a negative; listwise: softmax cross-entropy over the "
        "positive and its negatives.",
        choices=RERANK_LOSSES,
        run_defining=True,
    )
    rerank_top_k: int = option(
        20, "--do_eval: documents of the first stage the cross-encoder re-orders."
    )
    eval_top_k: int = option(
        100, "--do_eval: documents per query in the runs (>= rerank_top_k)."
    )
    encode_batch_size: int = option(64, "Batch of the dual encoder's embedding passes.")

    def __post_init__(self):
        for name in ("data_dir", "retrieval_checkpoint"):
            required(name, getattr(self, name))
            existing_path(name, getattr(self, name))
        check_choices(self)
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

    def training_fingerprints(self, run):
        """What a --do_train run records of its data: the BEIR files it
        trains on (`bert_tf.data_prep.beir.training_fingerprints`)."""
        return beir.training_fingerprints(self.data_dir, self.train_split)

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
