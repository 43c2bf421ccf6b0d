"""A document as read from any input, before cleaning."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class RawDocument:
    """One input document: a page of a dump, a JSON-lines row, a text block.

    Attributes:
      key: its name, unique in the corpus and independent of where the
        corpus lies: ``<dbname>:<title>`` for a page, ``<file>:<line>`` for a
        JSON-lines row or a text block (its first line), ``<file>:row<n>``
        for a Parquet row, the file relative to the inputs' common folder.
        It places the document in a shard and breaks duplicate ties.
      text: the document's text (None for a page: see `page`).
      page: the `WikiPage` of a dump, extracted later (in parallel).
    """

    key: str
    text: str | None = None
    page: object = None
