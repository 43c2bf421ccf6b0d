"""Tests for bert_tf.data_prep.strict_utf8: a bad byte names file, line and column."""

import pytest

from bert_tf.data_prep.conll import ConllFormatError
from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError


def test_decodes_utf8():
    assert decode_line("Café ||| naïve\n".encode(), "in.txt", 1) == "Café ||| naïve\n"


def test_latin1_byte_names_file_line_and_column():
    raw = "Café\n".encode("latin-1")  # é is the single byte 0xe9 here
    with pytest.raises(UserInputError) as info:
        decode_line(raw, "in.txt", 7)
    assert str(info.value) == (
        "in.txt:7: not UTF-8 (invalid continuation byte: byte 0xe9 at column 4)"
    )


def test_raises_the_given_error_class():
    with pytest.raises(ConllFormatError, match=r"^x\.conll:2: not UTF-8 \(invalid"):
        decode_line(b"\xff O\n", "x.conll", 2, ConllFormatError)
