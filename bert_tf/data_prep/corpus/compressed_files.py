"""Opening an input file through its compression, told by its first bytes.

A dump is read as a stream: ``bz2.open`` reads every stream of a file of
concatenated bzip2 streams (Wikimedia's ``multistream`` dumps) in turn, and
gzip likewise; nothing is loaded whole.
"""

import bz2
import gzip

from bert_tf.data_prep.local_files import open_input_file
from bert_tf.errors import UserInputError

_MAGIC = {b"BZh": bz2.open, b"\x1f\x8b": gzip.open}


def open_decompressed(path):
    """The file `path` as a binary stream of its decompressed bytes.

    bzip2 and gzip are recognised by their magic bytes (not by the name), so
    a ``.bz2`` that is not bzip2 is read as it is and fails where its content
    is parsed, naming the file.

    Example:

    ```python
    with open_decompressed("enwiki-pages-articles1.xml.bz2") as stream:
        head = stream.read(100)
    ```
    """
    raw = open_input_file(path)
    head = raw.read(3)
    raw.seek(0)
    for magic, opener in _MAGIC.items():
        if head.startswith(magic):
            return opener(raw)
    return raw


def decompression_error(path, error):
    """A `UserInputError` for a compressed file that ends early or is corrupt
    (``EOFError`` or ``OSError`` from bz2/gzip), or None for another error."""
    if isinstance(error, EOFError):
        return UserInputError(
            f"{path}: the compressed file ends early (truncated download?): {error}"
        )
    if isinstance(error, (OSError, gzip.BadGzipFile)) and not getattr(
        error, "filename", None
    ):
        return UserInputError(f"{path}: corrupt compressed data: {error}")
    return None
