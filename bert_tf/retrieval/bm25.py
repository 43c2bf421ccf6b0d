"""BM25 computed by us, for any Milvus (Lite included): sparse passage and query vectors.

Tokenization: BERT's `BasicTokenizer` (lower case, accents stripped,
punctuation and CJK characters split off: the words the word-piece
tokenizer starts from), keeping the tokens with a letter or digit. Words,
not word pieces: a piece such as ``##s`` or ``##ing`` would count as a term
shared by unrelated words, and BM25's IDF would be spread over fragments. No
stop words and no stemming: IDF weighs common words down by itself. A term's
id in the sparse vector is its CRC-32 (modulo `EMPTY_TERM`; a collision of
two words in 2^32 merges their counts, which the measured match with
``bm25s`` bounds).

Scoring is Lucene's BM25 (what ``bm25s``, Elasticsearch and Milvus's own
BM25 function compute): score(q, d) = sum over the query's words w (each
occurrence) of idf(w) x tf / (tf + k1 x (1 - b + b x |d| / avgdl)), idf(w) =
ln(1 + (N - df + 0.5) / (df + 0.5)). The passage side carries idf x the
saturated tf, the query side the count of each word, so Milvus's inner
product of the two sparse vectors is the BM25 score. N, df and avgdl are the
indexed passages' (`BM25Statistics`): a passage added, changed or removed
changes every passage's weights, which `bert_tf.retrieval.indexing`
rewrites (`BM25Statistics.digest` tells when).
"""

import hashlib
import math
import zlib
from collections import Counter

from bert_tf.text.tokenization import BasicTokenizer

# Milvus's sparse indices are below 2^32 - 1 and it refuses an empty sparse
# vector: a passage without words gets EMPTY_TERM, which no query has; a
# query without words asks for NO_TERM, which no passage has.
EMPTY_TERM = 2**32 - 3
NO_TERM = 2**32 - 2
DEFAULT_K1 = 1.2
DEFAULT_B = 0.75

__all__ = [
    "BM25Statistics",
    "DEFAULT_B",
    "DEFAULT_K1",
    "EMPTY_TERM",
    "NO_TERM",
    "lexical_terms",
    "query_vector",
    "term_id",
]

_TOKENIZER = BasicTokenizer(do_lower_case=True)


def lexical_terms(text):
    """The words of `text` BM25 counts (see the module docstring), in order."""
    return [t for t in _TOKENIZER.tokenize(text) if any(c.isalnum() for c in t)]


def term_id(term):
    """The word's index in the sparse vectors."""
    return zlib.crc32(term.encode("utf-8")) % EMPTY_TERM


def query_vector(text):
    """{term id: count of the word in `text`} ({} when it has no word)."""
    counts = Counter(term_id(t) for t in lexical_terms(text))
    return {term: float(count) for term, count in counts.items()}


class BM25Statistics:
    """The corpus statistics of BM25 and the passage vectors they give.

    Args:
      term_lists: per passage, its words (`lexical_terms`).
      k1: term-frequency saturation (Lucene's default 1.2).
      b: length normalization, 0 (none) to 1 (full; default 0.75).

    Example:

    ```python
    stats = BM25Statistics([lexical_terms(p.text) for p in passages])
    store.upsert(rows, vectors, sparse=stats.passage_vectors())
    store.search_lexical([query_vector("who wrote it")], top_k=10)
    ```
    """

    def __init__(self, term_lists, k1=DEFAULT_K1, b=DEFAULT_B):
        if k1 < 0:
            raise ValueError(f"k1={k1}: must be >= 0")
        if not 0 <= b <= 1:
            raise ValueError(f"b={b}: must be in [0, 1]")
        self.k1 = float(k1)
        self.b = float(b)
        self.counts = [Counter(term_id(t) for t in terms) for terms in term_lists]
        self.lengths = [len(terms) for terms in term_lists]
        self.num_passages = len(self.counts)
        self.avgdl = sum(self.lengths) / max(self.num_passages, 1)
        self.df = Counter()
        for counts in self.counts:
            self.df.update(counts.keys())

    def idf(self, term):
        df = self.df.get(term, 0)
        return math.log(1 + (self.num_passages - df + 0.5) / (df + 0.5))

    def passage_vectors(self):
        """Per passage, {term id: idf x saturated tf} (float32-representable)."""
        vectors = []
        for counts, length in zip(self.counts, self.lengths, strict=True):
            norm = self.k1 * (1 - self.b + self.b * length / (self.avgdl or 1))
            vector = {
                term: self.idf(term) * tf / (tf + norm) for term, tf in counts.items()
            }
            vectors.append(vector or {EMPTY_TERM: 1.0})
        return vectors

    @property
    def digest(self):
        """Changes whenever any passage's weights do: k1, b, N, avgdl, df."""
        h = hashlib.sha256(
            f"{self.k1!r} {self.b!r} {self.num_passages} {self.avgdl!r}".encode()
        )
        for term, df in sorted(self.df.items()):
            h.update(f" {term}:{df}".encode())
        return h.hexdigest()[:32]
