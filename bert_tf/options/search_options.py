"""`SearchOptions`: what bert-tf-search is asked: which index, which queries' hits, shown how."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.option import option
from bert_tf.options.option import same_as
from bert_tf.options.retrieval_options import RetrievalOptions
from bert_tf.options.retrieval_options import check_multi_vector_stage
from bert_tf.options.retrieval_options import check_rerank_checkpoint
from bert_tf.retrieval.vector_store import RETRIEVAL_MODES

OUTPUT_FORMATS = ("text", "jsonl")

__all__ = ["OUTPUT_FORMATS", "SearchOptions"]


@dataclasses.dataclass(frozen=True)
class SearchOptions:
    """bert-tf-search's options (flags of the same names); checked when made.

    Args:
      index: a run_retrieval output_dir (its index_settings.json names the
        Milvus URI, collection and model) or a Milvus URI (a Milvus Lite
        ``.db`` path or ``http://host:19530``; with `collection`).
      collection: the Milvus collection (None: the recorded one).
      model: the dual encoder that filled the index (None: the recorded one).
      top_k: passages shown per query.
      retrieval_mode: dense, bm25, splade or hybrid (None: the index's own).
      rerank_multi_vector: a MultiVectorEncoder (ColBERT) directory whose
        MaxSim re-orders each query's best --rerank_top_k passages.
      rerank_checkpoint, rerank_top_k: a cross-encoder that re-orders each
        query's best max(top_k, rerank_top_k) passages.
      rerank_even_if_worse: re-rank even when the cross-encoder's
        run_reranker evaluation recorded that it re-ranked worse.
      output_format: ``text`` (for people) or ``jsonl`` (a line per query).

    Example:

    ```python
    SearchOptions(index="/tmp/retrieval_output", top_k=5)
    ```
    """

    index: str = option(
        help="A run_retrieval.py --output_dir (its index_settings.json names the "
        "Milvus URI, collection and model), or a Milvus URI (path.db for Milvus "
        "Lite, http://host:19530 for a server; with --collection).",
    )
    collection: str | None = option(
        None, "The Milvus collection (default: the one the output_dir records)."
    )
    model: str | None = option(
        None,
        "The dual encoder that filled the index (default: the one it records; "
        "checked by its fingerprint).",
    )
    top_k: int = option(10, "Passages shown per query.")
    retrieval_mode: str | None = option(
        None,
        "dense, bm25, splade or hybrid, as the index holds them (default: the mode it "
        "was indexed for).",
        choices=RETRIEVAL_MODES,
    )
    rerank_checkpoint: str | None = same_as(
        RetrievalOptions,
        "rerank_checkpoint",
        help="A cross-encoder (a CrossEncoder directory or a run_reranker "
        "output_dir) that re-orders each query's best --rerank_top_k passages "
        "(at least --top_k) by its scores.",
    )
    rerank_multi_vector: str | None = same_as(
        RetrievalOptions,
        "rerank_multi_vector",
        help="A sentence-transformers MultiVectorEncoder (ColBERT) directory that "
        "re-orders each query's best --rerank_top_k passages (at least --top_k) "
        "by MaxSim.",
    )
    rerank_top_k: int = same_as(RetrievalOptions, "rerank_top_k")
    rerank_even_if_worse: bool = same_as(RetrievalOptions, "rerank_even_if_worse")
    output_format: str = option(
        "text",
        "text: each query, then its hits (rank, score, ids, title, passage); "
        "jsonl: one JSON object a query.",
        choices=OUTPUT_FORMATS,
    )

    def __post_init__(self):
        if not self.index:
            raise UserInputError("--index: required")
        positive("top_k", self.top_k)
        positive("rerank_top_k", self.rerank_top_k)
        existing_path("model", self.model)
        check_rerank_checkpoint(self.rerank_checkpoint, self.rerank_even_if_worse)
        check_multi_vector_stage(self.rerank_multi_vector, self.rerank_checkpoint)
        check_choices(self)

    @property
    def candidates(self):
        """Passages searched per query: --top_k, or with a re-ranker the
        --rerank_top_k it orders (at least --top_k)."""
        if self.rerank_checkpoint or self.rerank_multi_vector:
            return max(self.top_k, self.rerank_top_k)
        return self.top_k
