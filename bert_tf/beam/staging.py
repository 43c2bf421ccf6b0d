"""Staging files: embedded passages kept on disk until a Milvus Lite file's one writer stores them.

A Milvus Lite file admits one process, so the Beam indexing writes it once, at
the end of the pipeline. So that a killed run keeps its work, the workers
write every embedded batch to a staging file first (``<output_dir>/
beam_staging/<collection>-<model fingerprint>/``): a ``.npz`` of the
batch's `beir.Passage` fields and float32 vectors, written under a temporary
name and renamed (a kill leaves a whole file or none), named by a hash of the
fingerprint and of the passages' ids and text hashes (a retried batch writes
the same file again, never a second one). A rerun embeds only the passages
neither stored nor staged; the writer stores the staged ones the corpus
still has, then deletes the staging files.
"""

import hashlib
import io
import os
import uuid

import numpy as np

from bert_tf.data_prep import beir
from bert_tf.retrieval.indexing import stored_passages_of

STAGING_DIR = "beam_staging"
_SUFFIX = ".npz"
_VECTORS = "vectors"

__all__ = [
    "STAGING_DIR",
    "delete_staged",
    "read_staged",
    "staged_files",
    "staged_passages",
    "staging_dir",
    "write_staged",
]


def staging_dir(output_dir, collection, fingerprint):
    """The staging files' directory of one collection and model."""
    from apache_beam.io.filesystems import FileSystems

    return FileSystems.join(output_dir, STAGING_DIR, f"{collection}-{fingerprint}")


def staged_files(directory):
    """The staging files of `directory`."""
    from apache_beam.io.filesystems import FileSystems

    pattern = FileSystems.join(directory, "*" + _SUFFIX)
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def write_staged(directory, fingerprint, passages, vectors):
    """Writes `beir.Passage`s and their vectors as one staging file; returns
    its path."""
    from apache_beam.io.filesystems import FileSystems

    rows = stored_passages_of(passages)
    key = hashlib.sha256(fingerprint.encode())
    for row in sorted(rows):
        key.update(f"\n{row.id}\t{row.text_hash}".encode())
    path = FileSystems.join(directory, key.hexdigest()[:32] + _SUFFIX)
    arrays = {
        field: np.array([getattr(p, field) for p in passages], dtype=str)
        for field in beir.Passage._fields
    }
    arrays[_VECTORS] = np.asarray(vectors, np.float32)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    if not FileSystems.exists(directory):
        try:
            FileSystems.mkdirs(directory)
        except OSError:  # another worker made it meanwhile
            pass
    temporary = FileSystems.join(directory, f"tmp-{uuid.uuid4().hex}.partial")
    with FileSystems.create(temporary) as f:
        f.write(buffer.getvalue())
    FileSystems.rename([temporary], [path])
    return path


def read_staged(path):
    """The (`beir.Passage`s, float32 vectors) of one staging file."""
    from apache_beam.io.filesystems import FileSystems

    with FileSystems.open(path, compression_type="uncompressed") as f:
        arrays = np.load(io.BytesIO(f.read()), allow_pickle=False)
        columns = [arrays[field].tolist() for field in beir.Passage._fields]
        vectors = arrays[_VECTORS]
    return [beir.Passage(*values) for values in zip(*columns, strict=True)], vectors


def staged_passages(directory):
    """The `StoredPassage` rows staged in `directory` (an id staged with two
    texts, before and after an edit, twice)."""
    staged = set()
    for path in staged_files(directory):
        passages, _ = read_staged(path)
        staged.update(stored_passages_of(passages))
    return sorted(staged)


def delete_staged(directory):
    """Deletes every staging file (and leftover temporary file) of
    `directory`, and the directory when it is a local one."""
    from apache_beam.io.filesystems import FileSystems

    pattern = FileSystems.join(directory, "*")
    paths = [m.path for m in FileSystems.match([pattern])[0].metadata_list]
    if paths:
        FileSystems.delete(paths)
    for local in (directory, os.path.dirname(directory)):
        if os.path.isdir(local) and not os.listdir(local):
            os.rmdir(local)
