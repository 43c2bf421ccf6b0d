"""`BertTokenClassifier`: one label per token (tagging, NER)."""

import keras

from bert_tf.checkpoints.name_map import CRF_SCOPE
from bert_tf.checkpoints.name_map import TOKEN_CLASSIFIER_SCOPE
from bert_tf.checkpoints.name_map import crf_variables
from bert_tf.layers.crf import CRF
from bert_tf.models.task_model import BertLogitsTaskModel


@keras.saving.register_keras_serializable(package="bert_tf")
class BertTokenClassifier(BertLogitsTaskModel):
    """Dropout on `sequence_output`, then per-token logits (and optionally a CRF).

    The original has no tagging model; its head is stored in the same layout
    as the others, under `cls/token_classifier/` (HF: `classifier.*`).

    With `crf=True` the logits are a linear-chain CRF's emission scores and
    `model.crf` (`bert_tf.layers.CRF`) holds the tag transitions, stored as
    `cls/crf/transitions`, `cls/crf/start_transitions` and
    `cls/crf/end_transitions`. The model's outputs stay the logits: the chain
    runs over words, which the caller marks (`model.crf.decode(logits,
    word_mask)`, `model.crf.log_likelihood(logits, tags, word_mask)`).

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        num_labels: int. Number of tags.
        dropout_rate: float. Dropout on the sequence output.
        initializer_range: float. Stddev of the head's initializer.
        dtype: optional dtype policy (e.g. "mixed_bfloat16") for every layer
            (the CRF always computes in float32).
        crf: bool. Add a CRF over the logits.
        crf_iob2_labels: optional list of the tags in id order: constrains the
            CRF's decoding to well-formed IOB2 (needs `crf=True`).

    Outputs: a dict with `logits` [batch, seq, num_labels], float32.

    Example:
    >>> tagger = bert_tf.BertTokenClassifier(bert_tf.BertConfig(vocab_size=30522),
    ...                                      num_labels=9)
    >>> crf_tagger = bert_tf.BertTokenClassifier(
    ...     bert_tf.BertConfig(vocab_size=30522), num_labels=3, crf=True,
    ...     crf_iob2_labels=["O", "B-PER", "I-PER"])
    """

    encoder_output = "sequence_output"
    head_name = "token_classifier"
    head_scope = TOKEN_CLASSIFIER_SCOPE
    default_name = "bert_token_classifier"
    reads_pooled_output = False

    def __init__(
        self,
        encoder,
        num_labels,
        dropout_rate=0.1,
        initializer_range=0.02,
        crf=False,
        crf_iob2_labels=None,
        **kwargs,
    ):
        if crf_iob2_labels is not None and not crf:
            raise ValueError("crf_iob2_labels constrains a CRF: it needs crf=True")
        super().__init__(encoder, num_labels, dropout_rate, initializer_range, **kwargs)
        self.crf = None
        if crf:
            self.crf = CRF(num_labels, iob2_labels=crf_iob2_labels, name="crf")
            self.crf.build()
        self.crf_iob2_labels = crf_iob2_labels

    @property
    def token_classifier(self):
        return self.head

    def task_arguments(self):
        arguments = super().task_arguments()
        if self.crf is not None:
            arguments["crf"] = True
            arguments["crf_iob2_labels"] = self.crf_iob2_labels
        return arguments

    def checkpoint_variables(self):
        names = super().checkpoint_variables()
        if self.crf is not None:
            names.update(crf_variables(self.crf, CRF_SCOPE))
        return names
