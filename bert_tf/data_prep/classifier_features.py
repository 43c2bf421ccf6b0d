"""Classifier examples and their features: the original's data classes and
``convert_single_example`` (tokenize, truncate the pair, [CLS] A [SEP] B [SEP],
pad to max_seq_length), with the float label of regression tasks as label_id.
"""

import dataclasses

from absl import logging

from bert_tf.text import tokenization

__all__ = [
    "InputExample",
    "InputFeatures",
    "PaddingInputExample",
    "convert_examples_to_features",
    "convert_single_example",
    "is_regression_label_list",
]


@dataclasses.dataclass
class InputExample:
    """A single training/test example for simple sequence classification.

    Args:
      guid: unique id of the example, e.g. "train-12".
      text_a: the untokenized text of the first sequence.
      text_b: the untokenized text of the second sequence (pair tasks only).
      label: the label string (a float for regression tasks).
    """

    guid: str
    text_a: str
    text_b: str | None = None
    label: str | float | None = None


class PaddingInputExample:
    """Fake example that pads eval/predict sets to a multiple of the batch size.

    It becomes all-zero features with ``is_real_example=False``, which get weight
    0 in the metrics (the original needs it on TPU, where batches are fixed).
    """


@dataclasses.dataclass
class InputFeatures:
    """A single set of features of data (lists of length max_seq_length).

    Args:
      input_ids: token ids, zero-padded.
      input_mask: 1 for real tokens, 0 for padding.
      segment_ids: 0 for [CLS] A [SEP], 1 for B [SEP], 0 for padding.
      label_id: index of the label in the label list (float for regression).
      is_real_example: False for PaddingInputExample features.
    """

    input_ids: list
    input_mask: list
    segment_ids: list
    label_id: int | float
    is_real_example: bool = True


def is_regression_label_list(label_list):
    """True for the regression label list ([None], or None)."""
    return label_list is None or list(label_list) == [None]


def convert_single_example(ex_index, example, label_list, max_seq_length, tokenizer):
    """Converts a single `InputExample` into a single `InputFeatures`.

    Exactly the original: [CLS] A [SEP] (B [SEP]); a pair is truncated to
    max_seq_length - 3 by popping from the longer side (B on a tie), a single
    sequence is cut to max_seq_length - 2; zero padding. Regression (label_list
    [None]): label_id is float(example.label). The first 5 examples are logged.
    """
    regression = is_regression_label_list(label_list)
    if isinstance(example, PaddingInputExample):
        return InputFeatures(
            input_ids=[0] * max_seq_length,
            input_mask=[0] * max_seq_length,
            segment_ids=[0] * max_seq_length,
            label_id=0.0 if regression else 0,
            is_real_example=False,
        )
    if max_seq_length < 3:
        raise ValueError(f"max_seq_length must be at least 3, got {max_seq_length}")

    tokens_a = tokenizer.tokenize(example.text_a)
    tokens_b = None
    if example.text_b:
        tokens_b = tokenizer.tokenize(example.text_b)

    # As in the original, a text_b that tokenizes to nothing makes a single
    # sequence (no second [SEP], single-sequence truncation).
    if tokens_b:
        # Account for [CLS], [SEP], [SEP] with "- 3".
        tokenization.truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    elif len(tokens_a) > max_seq_length - 2:
        # Account for [CLS] and [SEP] with "- 2".
        tokens_a = tokens_a[0 : (max_seq_length - 2)]

    tokens = ["[CLS]", *tokens_a, "[SEP]"]
    segment_ids = [0] * len(tokens)
    if tokens_b:
        tokens += [*tokens_b, "[SEP]"]
        segment_ids += [1] * (len(tokens_b) + 1)

    input_ids = tokenizer.convert_tokens_to_ids(tokens)
    input_mask = [1] * len(input_ids)
    # Zero-pad up to the sequence length (the pad id is the literal 0).
    padding = max_seq_length - len(input_ids)
    input_ids = input_ids + [0] * padding
    input_mask += [0] * padding
    segment_ids += [0] * padding

    if regression:
        label_id = float(example.label)
    else:
        # A dict, as the original's label_map (a repeated label maps to its
        # last index).
        label_map = {label: i for i, label in enumerate(label_list)}
        if example.label not in label_map:
            raise ValueError(
                f"example {example.guid}: label {example.label!r} is not in the "
                f"label list {list(label_list)}"
            )
        label_id = label_map[example.label]

    if ex_index < 5:
        logging.info("*** Example ***")
        logging.info("guid: %s", example.guid)
        logging.info("tokens: %s", " ".join(tokens))
        logging.info("input_ids: %s", " ".join(str(x) for x in input_ids))
        logging.info("input_mask: %s", " ".join(str(x) for x in input_mask))
        logging.info("segment_ids: %s", " ".join(str(x) for x in segment_ids))
        logging.info("label: %s (id = %s)", example.label, label_id)

    return InputFeatures(
        input_ids=input_ids,
        input_mask=input_mask,
        segment_ids=segment_ids,
        label_id=label_id,
        is_real_example=True,
    )


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
    """Converts a list of `InputExample`s to a list of `InputFeatures`."""
    features = []
    for ex_index, example in enumerate(examples):
        if ex_index % 10000 == 0:
            logging.info("Writing example %d of %d", ex_index, len(examples))
        features.append(
            convert_single_example(
                ex_index, example, label_list, max_seq_length, tokenizer
            )
        )
    return features
