"""Exact and near-duplicate documents, decided the same way in one process and on Beam.

Exact duplicates share the hash of their normalised text (NFKC, case-folded,
whitespace collapsed). Near duplicates are found with datasketch's MinHash
over word 5-gram shingles and banded LSH (datasketch's ``MinHashLSH``
chooses the bands and rows for the Jaccard threshold). The rule, which needs
no order of arrival: among the documents left after exact deduplication, a
document is dropped iff another document with a smaller key shares one of
its LSH buckets and their MinHash-estimated Jaccard similarity is at least
the threshold. An exact duplicate is dropped iff a document with a smaller
key has the same hash. Both rules look only at pairs, so a pipeline that
groups by hash and by bucket reaches exactly the decisions of one process.
"""

import hashlib
import unicodedata

import numpy as np

from bert_tf.data_prep.corpus.extra import import_extra
from bert_tf.errors import UserInputError

NUM_PERM = 128
SHINGLE_WORDS = 5
# MinHash permutations are seeded by this, not by --random_seed: which
# documents are duplicates does not depend on the shuffle's seed.
MINHASH_SEED = 1
# Named, not datasketch's default (which 2.0 changed): the same signatures
# whatever datasketch version computes them.
MINHASH_SCHEME = "affine32"


def normalised(text):
    """The text the duplicate checks compare: NFKC, case-folded, single spaces."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def exact_hash(text):
    """The hex SHA-1 of the normalised text."""
    return hashlib.sha1(normalised(text).encode("utf-8")).hexdigest()


def _shingles(text):
    words = normalised(text).split()
    if len(words) <= SHINGLE_WORDS:
        return [" ".join(words).encode("utf-8")]
    return [
        " ".join(words[i : i + SHINGLE_WORDS]).encode("utf-8")
        for i in range(len(words) - SHINGLE_WORDS + 1)
    ]


def signature(text):
    """The MinHash signature (uint64 array of `NUM_PERM`) of the text's shingles."""
    minhash = import_extra("datasketch").MinHash(
        num_perm=NUM_PERM, seed=MINHASH_SEED, scheme=MINHASH_SCHEME
    )
    minhash.update_batch(_shingles(text))
    return np.asarray(minhash.hashvalues, dtype=np.uint64)


def estimated_jaccard(a, b):
    """MinHash's estimate of the Jaccard similarity: the share of equal values."""
    return float(np.count_nonzero(a == b)) / len(a)


class NearDuplicateBands:
    """The LSH bands for a Jaccard threshold, and a signature's buckets.

    Args:
      threshold: the Jaccard similarity from which two documents are near
        duplicates (0 < threshold <= 1).

    Example:

    ```python
    bands = NearDuplicateBands(0.8)
    buckets = bands.buckets(signature(text))  # one bytes key per band
    ```
    """

    def __init__(self, threshold):
        if not 0 < threshold <= 1:
            raise UserInputError(
                f"dedup_threshold={threshold}: must be in (0, 1]",
                argument="dedup_threshold",
            )
        self.threshold = threshold
        lsh = import_extra("datasketch").MinHashLSH(
            threshold=threshold, num_perm=NUM_PERM
        )
        self.bands, self.rows = lsh.b, lsh.r

    def buckets(self, hashvalues):
        """One bucket key per band: the band's index and its values' bytes."""
        return [
            band.to_bytes(2, "big")
            + hashvalues[band * self.rows : (band + 1) * self.rows].tobytes()
            for band in range(self.bands)
        ]

    def dropped_in_bucket(self, members):
        """The keys a bucket's `members` ((key, signature) pairs) drop: each
        member similar enough to a member with a smaller key."""
        members = sorted(members, key=lambda member: member[0])
        dropped = set()
        for i, (key, values) in enumerate(members):
            for smaller_key, smaller in members[:i]:
                if smaller_key != key and (
                    estimated_jaccard(values, smaller) >= self.threshold
                ):
                    dropped.add(key)
                    break
        return dropped


def near_duplicates(signatures, bands):
    """The keys the rule drops, from ``{key: signature}`` (one process)."""
    buckets = {}
    for key, values in signatures.items():
        for bucket in bands.buckets(values):
            buckets.setdefault(bucket, []).append((key, values))
    dropped = set()
    for members in buckets.values():
        if len(members) > 1:
            dropped |= bands.dropped_in_bucket(members)
    return dropped
