"""`SpanOptions`: how span (SQuAD) predictions are made from a model's logits.

Importable without TensorFlow, so option and flag checks run before it loads.
"""

import dataclasses

from bert_tf.errors import UserInputError

# The request bounds of a span SavedModel: a 100 kB context is some 20,000
# word pieces, 256 windows of 384 pieces with the default stride cover
# about 32,000 (a few GB of activations for BERT-base, once).
MAX_CONTEXT_BYTES = 100_000
MAX_WINDOWS = 256


@dataclasses.dataclass(frozen=True)
class SpanOptions:
    """run_squad.py's prediction settings, shared by run_squad, the span
    SavedModel (`DocumentAnswers`) and export_saved_model.py.

    Args:
        max_query_length: questions are cut to this many word pieces.
        max_answer_length: the longest answer, in word pieces.
        doc_stride: word pieces between the starts of a context's windows.
        n_best_size: candidates kept per end, and the n-best list's length.
        version_2_with_negative: SQuAD 2.0: a question may have no answer.
        null_score_diff_threshold: v2: predict "" when the null score beats
            the best span's by more than this.
        max_context_bytes: the span SavedModel refuses a request with a
            context longer than this many bytes (an error naming the bound).
        max_windows: ... and one whose contexts need more windows in all
            (one request is one batch through the model: this bounds its
            memory and time).

    Example:
    >>> options = SpanOptions(max_query_length=8, doc_stride=64)
    >>> options.check_seq_length(128)
    """

    max_query_length: int = 64
    max_answer_length: int = 30
    doc_stride: int = 128
    n_best_size: int = 20
    version_2_with_negative: bool = False
    null_score_diff_threshold: float = 0.0
    max_context_bytes: int = MAX_CONTEXT_BYTES
    max_windows: int = MAX_WINDOWS

    def __post_init__(self):
        for name in (
            "max_query_length",
            "doc_stride",
            "n_best_size",
            "max_context_bytes",
            "max_windows",
        ):
            if getattr(self, name) < 1:
                raise UserInputError(
                    f"{name} must be >= 1, got {getattr(self, name)}",
                    argument=name,
                )
        if self.max_answer_length < 1:
            raise UserInputError(
                f"max_answer_length must be >= 1, got {self.max_answer_length}",
                argument="max_answer_length",
            )

    @classmethod
    def from_attributes(cls, source):
        """The options of the same-named attributes of `source` (parsed
        flags or a task's typed options); the defaults for those it lacks."""
        return cls(
            **{
                field.name: getattr(source, field.name, field.default)
                for field in dataclasses.fields(cls)
            }
        )

    def check_seq_length(self, seq_length):
        """Raises `UserInputError` unless a window of `seq_length` pieces
        leaves room for context after the question, [CLS] and two [SEP]."""
        if seq_length <= self.max_query_length + 3:
            raise UserInputError(
                f"The max_seq_length ({seq_length}) must be greater than "
                f"max_query_length ({self.max_query_length}) + 3",
                argument=("max_seq_length", "max_query_length"),
            )

    @property
    def nbest_columns(self):
        """Columns of the n-best outputs (v2 adds the null answer)."""
        return self.n_best_size + int(self.version_2_with_negative)
