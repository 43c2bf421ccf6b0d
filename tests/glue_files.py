"""What the GLUE processor tests share: a data file written as given, and an
example as a (guid, text_a, text_b, label) tuple.

tests/test_glue.py (the real GLUE files, feature conversion and labels) and
tests/test_glue_processors.py (the other tasks, custom files and bad rows, on
small files written there) both use them.
"""

import os


def write(path, text, encoding="utf-8"):
    """Writes `text` (str, or bytes as is) and returns the path as str."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = text if isinstance(text, bytes) else text.encode(encoding)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def summary(example):
    return (example.guid, example.text_a, example.text_b, example.label)
