"""What export_litert is asked to export: which checkpoint, as what, how small."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import export_seq_length
from bert_tf.options.checks import positive
from bert_tf.options.checks import required
from bert_tf.options.saved_model_export_options import SavedModelExportOptions
from bert_tf.text import tokenization

# bert_tf.serving.litert_exporter checks the same names (it needs TensorFlow).
LITERT_MODEL_TYPES = ("classifier", "tagger", "span", "embedding", "encoder")
QUANTIZATIONS = ("dynamic_int8", "float16", "none")


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

    Example:

    ```python
    LiteRTExportOptions("classifier", "/tmp/mrpc_output", "/tmp/mrpc.tflite",
                        task_name="MRPC")
    ```
    """

    model_type: str
    init_checkpoint: str
    output_file: str
    bert_config_file: str | None = None
    vocab_file: str | None = None
    do_lower_case: bool | None = None
    max_seq_length: int | None = None
    quantization: str = "dynamic_int8"
    task_name: str | None = None
    labels: tuple | None = None
    text_pair: bool | None = None
    max_query_length: int = 64
    use_crf: bool = False
    crf_constrained: bool = False

    def __post_init__(self):
        required("model_type", self.model_type)
        required("init_checkpoint", self.init_checkpoint)
        required("output_file", self.output_file)
        if self.model_type not in LITERT_MODEL_TYPES:
            raise UserInputError(
                f"--model_type={self.model_type}: expected one of "
                f"{list(LITERT_MODEL_TYPES)}"
            )
        if self.quantization not in QUANTIZATIONS:
            raise UserInputError(
                f"--quantization={self.quantization}: expected one of "
                f"{list(QUANTIZATIONS)}"
            )
        if self.labels is not None:
            object.__setattr__(self, "labels", tuple(self.labels))
        object.__setattr__(
            self,
            "max_seq_length",
            export_seq_length(self.model_type, self.max_seq_length),
        )
        positive("max_query_length", self.max_query_length)
        if self.crf_constrained and not self.use_crf:
            raise UserInputError("--crf_constrained constrains the CRF: add --use_crf")
        if self.do_lower_case is not None:
            tokenization.validate_case_matches_checkpoint(
                self.do_lower_case, self.init_checkpoint
            )
        if self.model_type == "classifier":
            # The SavedModel export's rules for --labels/--task_name/--text_pair.
            SavedModelExportOptions._check_classifier_labels(self)
        existing_path("bert_config_file", self.bert_config_file)
        existing_path("vocab_file", self.vocab_file)

    def classifier_labels(self):
        """(label_list, text_pair) from --labels / --task_name / --text_pair."""
        return SavedModelExportOptions.classifier_labels(self)
