"""One document through the per-document stages: skip, extract, clean, split.

The same function runs in one process and in the Beam pipeline's workers,
so both see each document the same way.
"""

import dataclasses

from bert_tf.data_prep.corpus.dedup import exact_hash
from bert_tf.data_prep.corpus.dedup import signature
from bert_tf.data_prep.corpus.sentences import split_sentences
from bert_tf.data_prep.corpus.wikitext import article_text
from bert_tf.data_prep.corpus.wikitext import is_disambiguation

ARTICLE_NAMESPACE = 0


@dataclasses.dataclass(frozen=True)
class PreparedDocument:
    """A cleaned document, one sentence per item.

    Attributes:
      key: its `RawDocument` key.
      sentences: its sentences, in order.
      text_hash: `dedup.exact_hash` of its text.
      signature: its MinHash signature (`dedup.signature`).
    """

    key: str
    sentences: tuple
    text_hash: str
    signature: object

    def text(self):
        """The document as a shard holds it: a sentence a line, then a blank line."""
        return "\n".join(self.sentences) + "\n\n"


def prepare_document(raw, rules):
    """`raw` (a `RawDocument`) cleaned by `rules` (`CleaningRules`).

    Returns:
      ``(document, counts)``: the `PreparedDocument`, or None when the
      document is skipped or dropped; `counts` names what happened, as
      summary counter names (``pages_read``, ``skipped_redirect``,
      ``dropped_lines_markup``, ``dropped_too_short``, ...).
    """
    counts = {}
    text = raw.text
    if raw.page is not None:
        page = raw.page
        counts["pages_read"] = 1
        if page.namespace != ARTICLE_NAMESPACE:
            return None, {**counts, "skipped_namespace": 1}
        if page.redirect:
            return None, {**counts, "skipped_redirect": 1}
        if is_disambiguation(page):
            return None, {**counts, "skipped_disambiguation": 1}
        text = article_text(page)
    else:
        counts["records_read"] = 1
    counts["text_bytes_in"] = len(text.encode("utf-8"))
    lines, dropped = rules.clean_lines(text.split("\n"))
    for reason, number in dropped.items():
        counts[f"dropped_lines_{reason}"] = number
    if not rules.long_enough(lines):
        counts["dropped_too_short"] = 1
        return None, counts
    sentences = tuple(s for line in lines for s in split_sentences(line))
    joined = "\n".join(sentences)
    return PreparedDocument(
        raw.key, sentences, exact_hash(joined), signature(joined)
    ), counts
