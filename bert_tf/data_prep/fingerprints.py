"""What a training run reads, as fingerprints recorded in its run_settings.json.

Local files are read with Python's own I/O, so a rerun's settings can be
compared before TensorFlow loads; remote paths (`gs://…`) go through
`tf.io.gfile`.
"""

import hashlib
import json
import os

# Bytes hashed at each end of a data file: enough to see any regenerated or
# edited file in practice without reading gigabytes of records on each start.
_FINGERPRINT_BYTES = 1 << 20


def _open(path):
    if "://" in str(path):
        import tensorflow as tf

        return tf.io.gfile.stat(path).length, tf.io.gfile.GFile(path, "rb")
    return os.path.getsize(path), open(path, "rb")  # noqa: SIM115 (returned)


def file_fingerprint(path):
    """`{"path", "size", "sha256"}` of a file: the hash covers its first and
    last MiB (all of it when smaller), together with the size.

    Example:
    >>> file_fingerprint("glue/MRPC/train.tsv")["size"]
    1048575
    """
    size, reader = _open(path)
    digest = hashlib.sha256()
    with reader:
        digest.update(reader.read(_FINGERPRINT_BYTES))
        if size > 2 * _FINGERPRINT_BYTES:
            reader.seek(size - _FINGERPRINT_BYTES)
        digest.update(reader.read())
    return {"path": str(path), "size": size, "sha256": digest.hexdigest()}


def examples_fingerprint(examples):
    """`{"examples", "sha256"}` of training examples (their guid, texts and
    label): the data a run trains on, whatever file it came from.

    Example:
    >>> examples_fingerprint(processor.get_train_examples(data_dir))["examples"]
    3668
    """
    digest = hashlib.sha256()
    for example in examples:
        fields = (
            example.guid,
            example.text_a,
            getattr(example, "text_b", None),
            example.label,
        )
        digest.update(json.dumps(fields, default=str).encode("utf-8"))
    return {"examples": len(examples), "sha256": digest.hexdigest()}
