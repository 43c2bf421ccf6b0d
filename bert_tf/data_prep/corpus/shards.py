"""The output shards: which document goes where, in which order, written atomically.

A document's shard and its place in the shard come from a seeded hash of its
key, so each shard is a random sample of the corpus (shard 0 of 10 serves as
held-out pages) and the same input and seed give the same bytes, whatever
order the documents were read or processed in.
"""

import glob
import hashlib
import os
import re

SHARD_PATTERN = "corpus-{index:05d}-of-{count:05d}.txt"
_SHARD_NAME = re.compile(r"corpus-(\d{5})-of-(\d{5})\.txt")
SUMMARY_FILE = "corpus_summary.json"
_TEMP_SUFFIX = ".tmp"


def key_hash(key, random_seed):
    """A document's seeded position: the SHA-256 of seed and key, as an int."""
    digest = hashlib.sha256(f"{random_seed}\0{key}".encode()).digest()
    return int.from_bytes(digest[:16], "big")


def shard_of(key, random_seed, num_shards):
    """The shard index of the document `key`."""
    return key_hash(key, random_seed) % num_shards


def order_in_shard(key, random_seed):
    """The sort key of a document within its shard."""
    return key_hash(key, random_seed), key


def shard_path(output_dir, index, count):
    return os.path.join(output_dir, SHARD_PATTERN.format(index=index, count=count))


def shard_paths(output_dir, count):
    return [shard_path(output_dir, index, count) for index in range(count)]


def write_atomically(path, chunks):
    """Writes the text `chunks` (UTF-8) to `path` through a temporary file
    renamed at the end, so `path` is either absent, the old file or complete;
    returns the bytes written."""
    temp = path + _TEMP_SUFFIX
    written = 0
    try:
        with open(temp, "wb") as out:
            for chunk in chunks:
                data = chunk.encode("utf-8")
                out.write(data)
                written += len(data)
        os.replace(temp, path)
    except BaseException:
        if os.path.exists(temp):
            os.remove(temp)
        raise
    return written


def remove_stale_shards(output_dir, count):
    """Removes shards of another shard count (and unfinished temporary files)
    left in `output_dir` by earlier runs; returns the removed paths."""
    removed = []
    for path in sorted(glob.glob(os.path.join(output_dir, "corpus-*-of-*.txt*"))):
        name = os.path.basename(path)
        match = _SHARD_NAME.fullmatch(name.removesuffix(_TEMP_SUFFIX))
        if match is None:
            continue
        if name.endswith(_TEMP_SUFFIX) or int(match.group(2)) != count:
            os.remove(path)
            removed.append(path)
    return removed
