"""What export_litert is asked to export: which checkpoint, as what, how small."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_checkpoint
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.option import option
from bert_tf.options.option import same_as
from bert_tf.options.saved_model_export_options import SavedModelExportOptions
from bert_tf.options.saved_model_export_options import check_embedding_settings
from bert_tf.options.saved_model_export_options import check_top_k
from bert_tf.serving.families import LITERT_MODEL_TYPES
from bert_tf.serving.families import MEDIAPIPE_MODEL_TYPES
from bert_tf.serving.families import QUANTIZATIONS
from bert_tf.text import tokenization

# raw_text: our tokenizer in the file (tensorflow-text kernels); mediapipe:
# MediaPipe Tasks' TextEmbedder/TextClassifier tokenize from the metadata.
TARGETS = ("raw_text", "mediapipe")


@dataclasses.dataclass(frozen=True)
class LiteRTExportOptions:
    """export_litert's options (flags of the same names).

    Args:
      model_type: one of `LITERT_MODEL_TYPES`.
      init_checkpoint: the trained model (run_* output_dir, checkpoint, model dir).
      output_file: the .tflite file to write.
      bert_config_file, vocab_file: default: those beside the checkpoint.
      do_lower_case: as the model was trained (None: as the run in
        init_checkpoint's directory recorded, else True; embedding: always
        the sentence encoder's own).
      max_seq_length: longest packed input; span: the window length;
        embedding: None (the default) is the sentence encoder's own.
      quantization: one of `QUANTIZATIONS`.
      task_name, labels, text_pair: classifier (and tagger: labels) options.
      max_query_length: span: question word pieces kept.
      use_crf, crf_constrained: tagger: a run_ner --use_crf checkpoint (tags
        decoded with Viterbi in the file; constrained: well-formed IOB2 only).
      top_k: sparse_encoder: vocabulary entries returned per text.
      target: one of `TARGETS`; "mediapipe" takes an embedding or a
        one-text classifier of an uncased model.

    Example:

    ```python
    LiteRTExportOptions("classifier", "/tmp/mrpc_output", "/tmp/mrpc.tflite",
                        task_name="MRPC")
    ```
    """

    model_type: str = option(
        help="classifier (run_classifier output), tagger (run_ner output), span "
        "(run_squad output, one window per question/context), embedding "
        "(run_similarity output or a sentence-transformers directory), encoder or "
        "reranker (run_reranker output or a cross-encoder directory; query and "
        "passage in, scores out), or sparse_encoder (a SPLADE SparseEncoder "
        "directory; top --top_k token ids and weights).",
        choices=LITERT_MODEL_TYPES,
    )
    init_checkpoint: str = same_as(SavedModelExportOptions, "init_checkpoint")
    output_file: str = option(help="The .tflite file to write.")
    bert_config_file: str | None = same_as(SavedModelExportOptions, "bert_config_file")
    vocab_file: str | None = same_as(SavedModelExportOptions, "vocab_file")
    do_lower_case: bool | None = option(
        None,
        "Whether to lower case the input text (as the model was trained); "
        "default: as the run recorded (run_settings.json), else True; embedding: "
        "the sentence encoder's own.",
    )
    max_seq_length: int | None = option(
        None,
        "Longest packed input (each request is padded to its longest row, up to "
        "this); span: the window length; embedding and reranker: default their own.",
        flag_default=128,
        omitted_is_default=True,
    )
    quantization: str = option(
        "dynamic_int8",
        "dynamic_int8: int8 weights and int8 matrix products (fastest on CPU, "
        "~1/4 of the float32 size); float16: float16 weights; none: float32.",
        choices=QUANTIZATIONS,
    )
    task_name: str | None = same_as(SavedModelExportOptions, "task_name")
    labels: tuple | None = option(
        None,
        "classifier: label names in label-id order (instead of --task_name); "
        "tagger: its IOB2 tags (default: the label_list.json run_ner.py saved "
        "beside the checkpoint).",
    )
    text_pair: bool | None = same_as(SavedModelExportOptions, "text_pair")
    max_query_length: int = same_as(SavedModelExportOptions, "max_query_length")
    use_crf: bool | None = option(
        None,
        "tagger: the checkpoint is a run_ner.py --use_crf tagger (CRF transitions "
        "cls/crf/*); the file decodes its tags with Viterbi. Default: as the run "
        "recorded it, else whether the checkpoint holds CRF transitions.",
    )
    crf_constrained: bool | None = same_as(SavedModelExportOptions, "crf_constrained")
    prompt_name: str | None = same_as(SavedModelExportOptions, "prompt_name")
    truncate_dim: int | None = same_as(SavedModelExportOptions, "truncate_dim")
    top_k: int | None = same_as(SavedModelExportOptions, "top_k")
    target: str = option(
        "raw_text",
        "raw_text: the tokenizer inside the file (tensorflow-text kernels); "
        "mediapipe: for MediaPipe Tasks' TextEmbedder (--model_type=embedding) or "
        "TextClassifier (--model_type=classifier, one text; uncased models), which "
        "tokenize from the file's metadata.",
        choices=TARGETS,
    )

    def __post_init__(self):
        required("model_type", self.model_type)
        required("init_checkpoint", self.init_checkpoint)
        existing_checkpoint("init_checkpoint", self.init_checkpoint)
        required("output_file", self.output_file)
        check_choices(self)
        if self.target == "mediapipe":
            self._check_mediapipe()
        positive("max_query_length", self.max_query_length)
        SavedModelExportOptions._settle_model_fields(self)
        if self.do_lower_case is not None:
            tokenization.validate_case_matches_checkpoint(
                self.do_lower_case, self.init_checkpoint
            )
        if self.model_type == "classifier":
            # The SavedModel export's rules for --labels/--task_name/--text_pair.
            SavedModelExportOptions._check_classifier_labels(self)
        check_embedding_settings(self)
        check_top_k(self)
        existing_path("bert_config_file", self.bert_config_file)
        existing_path("vocab_file", self.vocab_file)

    def _check_mediapipe(self):
        if self.model_type not in MEDIAPIPE_MODEL_TYPES:
            raise UserInputError(
                f"--target=mediapipe exports --model_type=classifier (TextClassifier) "
                f"or embedding (TextEmbedder), got --model_type={self.model_type}: "
                "MediaPipe Tasks has no task that runs it (use --target=raw_text)"
            )
        if self.do_lower_case is False:
            raise UserInputError(
                "--target=mediapipe with --do_lower_case=false: MediaPipe's BERT "
                "tokenizer lower-cases every text (uncased models only)"
            )
        if self.text_pair:
            raise UserInputError(
                "--target=mediapipe with --text_pair: MediaPipe's TextClassifier "
                "reads one text"
            )

    def classifier_labels(self):
        """(label_list, text_pair) from --labels / --task_name / --text_pair."""
        return SavedModelExportOptions.classifier_labels(self)
