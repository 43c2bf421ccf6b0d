"""Strict UTF-8 decoding of input lines: a bad byte is an error naming its place.

Input text files (CoNLL, pretraining documents, extract_features input, GLUE
tables) must be UTF-8, as the original's text-mode reads required; a line that
is not is never dropped or repaired silently.
"""

from bert_tf.errors import UserInputError


def describe_invalid_byte(exc):
    """What a `UnicodeDecodeError` found, e.g. "invalid start byte: byte 0xff at column 3"."""
    return f"{exc.reason}: byte 0x{exc.object[exc.start]:02x} at column {exc.start + 1}"


def decode_line(raw, path, line_number, error_class=UserInputError):
    """Decodes one line's bytes as UTF-8.

    Args:
        raw: the line's bytes.
        path, line_number: where it is (1-based), for the message.
        error_class: the `UserInputError` subclass to raise.

    Raises:
        error_class: ``path:line_number: not UTF-8 (...)`` for a bad byte.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error_class(
            f"{path}:{line_number}: not UTF-8 ({describe_invalid_byte(exc)})"
        ) from None
