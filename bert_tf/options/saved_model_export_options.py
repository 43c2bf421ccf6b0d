"""What export_saved_model is asked to export: which checkpoint, as what."""

import dataclasses
import os

from bert_tf.data_prep import glue
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_checkpoint
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import export_seq_length
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.export_options import ExportOptions
from bert_tf.options.option import option
from bert_tf.options.option import same_as
from bert_tf.options.retrieval_options import METRICS
from bert_tf.options.retrieval_options import RetrievalOptions
from bert_tf.options.retrieval_options import check_beir_dir
from bert_tf.options.retrieval_options import check_passages
from bert_tf.options.retrieval_options import check_rerank_checkpoint
from bert_tf.options.retrieval_options import check_serving_dtype
from bert_tf.serving.families import MODEL_TYPES
from bert_tf.serving.span_options import MAX_CONTEXT_BYTES
from bert_tf.serving.span_options import MAX_WINDOWS
from bert_tf.serving.span_options import SpanOptions
from bert_tf.text import tokenization

# Written by run_classifier / run_ner beside their checkpoints.
LABEL_LIST_FILE = "label_list.json"


@dataclasses.dataclass(frozen=True)
class SavedModelExportOptions:
    """export_saved_model's options (flags of the same names).

    Args:
      model_type: one of `MODEL_TYPES`.
      init_checkpoint: the trained model (run_* output_dir, checkpoint, model dir).
      export: the `ExportOptions` (export_dir, serving tokenizer and dtype, version).
      bert_config_file, vocab_file: default: those beside the checkpoint.
      do_lower_case: as the model was trained (None: as the run in
        init_checkpoint recorded it, else True).
      max_seq_length: longest packed input of the raw-text signature; None:
        128, or the checkpoint's own (embedding, reranker, retrieval).
      task_name, labels, text_pair: classifier (and tagger: labels) options.
      max_query_length, max_answer_length, doc_stride, n_best_size,
        version_2_with_negative, null_score_diff_threshold,
        max_context_bytes, max_windows: span options (`SpanOptions`).
      pooling: embedding of a plain BERT checkpoint: mean, cls, max or
        mean_sqrt_len_tokens.
      prompt_name, truncate_dim: embedding: the model's prompt put before
        every input, and the width its vectors are cut to (None: its own).
      use_crf, crf_constrained: tagger: a run_ner --use_crf checkpoint (tags
        decoded with Viterbi; constrained: well-formed IOB2 paths only).
        None: as the run recorded them, else use_crf when the checkpoint
        holds CRF transitions.
      top_k: sparse_encoder: vocabulary entries returned per text (None:
        `DEFAULT_TOP_K`).
      data_dir, passage_length, passage_stride, metric_type: retrieval: the
        BEIR corpus embedded into the SavedModel, cut into passages as
        run_retrieval cuts it, and the search's metric.
      rerank_checkpoint, rerank_top_k: retrieval: a cross-encoder that
        re-orders each query's rerank_top_k best passages in the graph.
      rerank_even_if_worse: retrieval: export the cross-encoder even when
        its run_reranker evaluation recorded that it re-ranked worse (else
        it is left out: `bert_tf.retrieval.rerank_verdict`).

    Example:

    ```python
    SavedModelExportOptions("classifier", "/tmp/mrpc_output",
                            ExportOptions("/tmp/mrpc_export"), task_name="MRPC")
    ```
    """

    model_type: str = option(
        help="classifier (run_classifier output), span (run_squad output), tagger "
        "(run_ner output), encoder, or embedding (a sentence encoder: a "
        "sentence-transformers directory such as run_similarity's "
        "output_dir/sentence_transformers, or a BERT checkpoint with --pooling; "
        "its own max_seq_length and lower-casing are used), or reranker (a "
        "cross-encoder: a sentence-transformers CrossEncoder / one-label Hugging "
        "Face BertForSequenceClassification directory, or a run_reranker "
        "output_dir; its own max_seq_length, lower-casing and activation are "
        "used), or retrieval (a dual encoder: a run_retrieval output_dir or a "
        "sentence-transformers directory, over the --data_dir corpus embedded "
        "into the SavedModel: query in, document ids and scores out), or "
        "sparse_encoder (SPLADE: a sentence-transformers SparseEncoder directory; "
        "text in, its --top_k token ids, weights and tokens out), or "
        "multi_vector_encoder (ColBERT: a sentence-transformers MultiVectorEncoder "
        "directory; token vectors of queries and documents, and their MaxSim).",
        choices=MODEL_TYPES,
    )
    init_checkpoint: str = option(
        help="The trained model: a run_* --output_dir, a checkpoint prefix, or a "
        "Google or Hugging Face model directory."
    )
    export: ExportOptions
    bert_config_file: str | None = option(
        None, "bert_config.json; default: the one beside the checkpoint."
    )
    vocab_file: str | None = option(
        None, "vocab.txt; default: the one beside the checkpoint."
    )
    do_lower_case: bool | None = option(
        None,
        "Whether to lower case the input text (as the model was trained; default: "
        "as the run in --init_checkpoint recorded it, else true).",
        flag_default=True,
        omitted_is_default=True,
    )
    max_seq_length: int | None = option(
        None,
        "Longest packed input of the raw-text signature (each request is padded "
        "to its longest row, up to this); span: the window length; embedding and reranker: default their own.",
        flag_default=128,
        omitted_is_default=True,
    )
    task_name: str | None = option(
        None,
        "classifier: a run_classifier task (e.g. MRPC) for the label names and "
        "whether it takes text pairs.",
    )
    labels: tuple | None = option(
        None,
        "classifier: label names in label-id order (instead of --task_name); "
        "tagger: its IOB2 tags in label-id order (default: the label_list.json "
        "run_ner.py saved beside the checkpoint).",
    )
    text_pair: bool | None = option(
        None,
        "classifier/encoder: serving_default takes text_b too (default: from "
        "--task_name, else from the task the run in --init_checkpoint trained; "
        "else false).",
    )
    use_crf: bool | None = option(
        None,
        "tagger: the checkpoint is a run_ner.py --use_crf tagger (CRF transitions "
        "cls/crf/*); the SavedModel decodes its tags with Viterbi. Default: as "
        "the run recorded it, else whether the checkpoint holds CRF transitions.",
    )
    crf_constrained: bool | None = option(
        None,
        "tagger, with --use_crf: decode only well-formed IOB2 tag sequences. "
        "Default: as the run recorded it.",
    )
    max_query_length: int = option(64, "span: question tokens kept.")
    max_context_bytes: int = option(
        MAX_CONTEXT_BYTES,
        "span: the model refuses a request with a longer context (bytes).",
    )
    max_windows: int = option(
        MAX_WINDOWS,
        "span: the model refuses a request whose contexts need more windows in all.",
    )
    max_answer_length: int = option(30, "span: longest answer in tokens.")
    doc_stride: int = option(
        128, "span: how far each window of a long context moves on."
    )
    n_best_size: int = option(
        20, "span: start/end candidates per window, n-best entries."
    )
    version_2_with_negative: bool = option(
        False, "span: the model was trained on SQuAD 2.0 (answers may be empty)."
    )
    null_score_diff_threshold: float = option(
        0.0,
        'span, SQuAD 2.0: answer "" when the null score beats the best span by '
        "more than this.",
    )
    pooling: str | None = option(
        None,
        "embedding, plain BERT checkpoint: mean, cls, max or mean_sqrt_len_tokens.",
    )
    prompt_name: str | None = option(
        None,
        "embedding: a key of the model's prompts (e.g. query) whose text the "
        "export puts before every input (default: the model's "
        "default_prompt_name, if any).",
    )
    truncate_dim: int | None = option(
        None,
        "embedding: keep the first N dimensions of each vector (Matryoshka "
        "models), as sentence-transformers' truncate_dim (default: all).",
    )
    top_k: int | None = option(
        None,
        "sparse_encoder: vocabulary entries (token ids, weights, tokens) each text "
        "gets back, largest weights first (default: 256).",
    )
    data_dir: str | None = option(
        None,
        "retrieval: BEIR directory whose corpus.jsonl is embedded into the "
        "SavedModel (passages cut as run_retrieval.py cuts them).",
    )
    passage_length: int | None = option(
        None,
        "retrieval: word pieces per passage (default: the document tower's "
        "max_seq_length - 2).",
    )
    passage_stride: int | None = option(
        None,
        "retrieval: word pieces between passage starts (default: half of "
        "--passage_length).",
    )
    metric_type: str = option(
        "IP",
        "retrieval: similarity of the exact search: inner product, cosine or L2.",
        choices=METRICS,
    )
    rerank_checkpoint: str | None = option(
        None,
        "retrieval: a cross-encoder (a CrossEncoder directory or a run_reranker "
        "output_dir) that re-orders each query's --rerank_top_k best passages in "
        "the SavedModel (both stages in one graph).",
    )
    rerank_top_k: int = option(
        20, "retrieval: candidate passages per query for the cross-encoder."
    )
    rerank_even_if_worse: bool = same_as(
        RetrievalOptions,
        "rerank_even_if_worse",
        help="retrieval: put --rerank_checkpoint in the SavedModel even when its "
        "run_reranker --do_eval recorded that re-ranking lowered mrr@10 "
        "(rerank_verdict.json); without it such a cross-encoder is left out.",
    )

    def __post_init__(self):
        required("model_type", self.model_type)
        required("init_checkpoint", self.init_checkpoint)
        required("export_dir", self.export.export_dir)
        existing_checkpoint("init_checkpoint", self.init_checkpoint)
        # An unknown --model_type must not fall through to the encoder export.
        check_choices(self)
        self._settle_model_fields()
        self.span_options()  # its checks: positive sizes
        if self.do_lower_case is not None:
            tokenization.validate_case_matches_checkpoint(
                self.do_lower_case, self.init_checkpoint
            )
        if self.model_type == "classifier":
            self._check_classifier_labels()
        if self.model_type == "retrieval":
            self._check_retrieval()
        elif self.rerank_checkpoint or self.data_dir or self.rerank_even_if_worse:
            raise UserInputError(
                "--data_dir, --rerank_checkpoint and --rerank_even_if_worse are for "
                "--model_type=retrieval"
            )
        check_embedding_settings(self)
        check_top_k(self)
        existing_path("bert_config_file", self.bert_config_file)
        existing_path("vocab_file", self.vocab_file)

    def _settle_model_fields(self):
        """labels as a tuple, the export's max_seq_length, the CRF flags
        checked (shared with `LiteRTExportOptions`)."""
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(
            self,
            "max_seq_length",
            export_seq_length(self.model_type, self.max_seq_length),
        )
        if self.crf_constrained and self.use_crf is False:
            raise UserInputError("--crf_constrained constrains the CRF: add --use_crf")

    def _check_classifier_labels(self):
        if self.labels and self.task_name:
            raise UserInputError("Give --labels or --task_name, not both")
        if self.labels:
            return
        if not self.task_name:
            if has_label_list(self.init_checkpoint):
                return  # the run's labels
            raise UserInputError(
                "--model_type=classifier needs --task_name or --labels (label "
                f"names): {self.init_checkpoint} has no {LABEL_LIST_FILE}"
            )
        task = self.task_name.lower()
        if task == "custom":
            raise UserInputError(
                "--task_name=custom: give the labels with --labels and pairs with "
                "--text_pair"
            )
        if task not in glue.PROCESSORS:
            raise UserInputError(
                f"--task_name: Task not found: {self.task_name!r}. Known tasks: "
                f"{', '.join(sorted(glue.PROCESSORS))}"
            )

    def _check_retrieval(self):
        required("data_dir", self.data_dir)
        check_beir_dir(self.data_dir)
        check_passages(self.passage_length, self.passage_stride)
        check_rerank_checkpoint(self.rerank_checkpoint, self.rerank_even_if_worse)
        check_serving_dtype(self.export.serving_dtype)
        positive("rerank_top_k", self.rerank_top_k)

    def classifier_labels(self):
        """(label_list, text_pair) from --labels / --task_name / --text_pair;
        label_list None: neither flag (the run's label_list.json)."""
        if self.labels:
            labels, pair = list(self.labels), False
        elif not self.task_name:
            labels, pair = None, False
        else:
            processor = glue.get_processor(self.task_name.lower())
            labels, pair = processor.get_labels(None), processor.text_pair
        if self.text_pair is not None:
            pair = self.text_pair
        return labels, pair

    def span_options(self):
        """The `SpanOptions` of the span flags."""
        return SpanOptions.from_attributes(self)


def has_label_list(init_checkpoint):
    """Whether the run `init_checkpoint` names (its output_dir, or a
    checkpoint in it) recorded its labels (a local path; remote: assumed)."""
    if "://" in str(init_checkpoint):
        return True
    directory = (
        init_checkpoint
        if os.path.isdir(init_checkpoint)
        else os.path.dirname(init_checkpoint)
    )
    return os.path.exists(os.path.join(directory, LABEL_LIST_FILE))


def check_embedding_settings(options):
    """--prompt_name and --truncate_dim: an embedding export's, and a
    positive width (the model's prompts and width are checked when it loads)."""
    given = [n for n in ("prompt_name", "truncate_dim") if getattr(options, n)]
    if given and options.model_type != "embedding":
        raise UserInputError(
            f"--{given[0]}: for --model_type=embedding, not {options.model_type}"
        )
    positive("truncate_dim", options.truncate_dim)


def check_top_k(options):
    """--top_k: a sparse_encoder export's, and positive."""
    if options.top_k is None:
        return
    if options.model_type != "sparse_encoder":
        raise UserInputError(
            f"--top_k: for --model_type=sparse_encoder, not {options.model_type}"
        )
    if options.top_k < 1:
        raise UserInputError(
            f"--top_k={options.top_k}: must be a positive integer (vocabulary "
            "entries returned per text)"
        )
