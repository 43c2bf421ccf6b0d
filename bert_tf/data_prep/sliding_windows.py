"""Windows over a sequence too long for the model: their checks and starts.

run_squad's documents, run_ner's sentences and the BEIR passages are cut into
windows of at most `window` tokens that start at most `stride` tokens apart.
"""

from bert_tf.errors import UserInputError


def check_window_and_stride(window, stride, window_name, stride_name, argument):
    """Raises `UserInputError` unless `window >= 1` and
    `1 <= stride <= window` (a longer stride would skip tokens).

    Args:
      window, stride: the window's size and the step between window starts.
      window_name, stride_name: how the messages name them (parameter names,
        or an expression of one, as "max_seq_length - 2").
      argument: `{"window": parameter, "stride": parameter}`, the parameters
        each message is about (`UserInputError`'s `argument`).

    Example:

    >>> check_window_and_stride(4, 5, "passage_length", "passage_stride",
    ...                         {"window": "passage_length",
    ...                          "stride": ("passage_stride", "passage_length")})
    Traceback (most recent call last):
    ...
    bert_tf.errors.UserInputError: passage_stride: must be between 1 and passage_length (4), got 5 (a longer stride would skip tokens)
    """
    if window < 1:
        raise UserInputError(
            f"{window_name}: must be >= 1, got {window}", argument=argument["window"]
        )
    if not 1 <= stride <= window:
        raise UserInputError(
            f"{stride_name}: must be between 1 and {window_name} ({window}), "
            f"got {stride} (a longer stride would skip tokens)",
            argument=argument["stride"],
        )


def window_starts(num_tokens, window, stride):
    """Starts of the windows covering `num_tokens` tokens (run_squad's loop;
    one window, at 0, for no tokens).

    Example:

    >>> window_starts(10, 4, 3)
    [0, 3, 6]
    """
    starts, start = [], 0
    while True:
        starts.append(start)
        if start + window >= num_tokens:
            return starts
        start += min(window, stride)
