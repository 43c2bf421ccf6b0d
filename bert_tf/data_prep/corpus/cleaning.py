"""Cleaning rules: which lines of a document are kept, and which documents.

A line (a paragraph) is dropped when it still holds markup the extractor
left (``{{``, ``}}``, ``{|``, ``|}``, ``[[``, ``]]``, ``<ref``, an HTML or
wiki tag such as ``<onlyinclude>``: `LEFTOVER_MARKUP`), when it has no
letter (a line of punctuation, numbers or symbols), or when it has fewer than
`min_line_words` words (list items, captions, "See also" stubs, which are not
sentences). A document is dropped when fewer than `min_document_chars`
characters of kept text remain.
"""

import dataclasses
import re

# What extracted prose never holds: leftover templates, tables, links, tags.
LEFTOVER_MARKUP = re.compile(r"\{\{|\}\}|\{\||\|\}|\[\[|\]\]|</?[A-Za-z][\w-]*[\s/>]")
_LETTER = re.compile(r"[^\W\d_]")


@dataclasses.dataclass(frozen=True)
class CleaningRules:
    """The thresholds of the cleaning stage.

    Args:
      min_document_chars: a document with fewer characters of kept text
        (its kept lines, newlines not counted) is dropped.
      min_line_words: a line with fewer whitespace-separated words is dropped.
      drop_markup_lines: drop lines with `LEFTOVER_MARKUP`.

    Example:

    ```python
    rules = CleaningRules(min_document_chars=200, min_line_words=3)
    kept, counts = rules.clean_lines(text.split("\\n"))
    ```
    """

    min_document_chars: int = 200
    min_line_words: int = 3
    drop_markup_lines: bool = True

    def __post_init__(self):
        for name in ("min_document_chars", "min_line_words"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be >= 0, got {getattr(self, name)}")

    def line_verdict(self, line):
        """Why `line` is dropped ("markup", "no_letters", "short") or None."""
        if self.drop_markup_lines and LEFTOVER_MARKUP.search(line):
            return "markup"
        if not _LETTER.search(line):
            return "no_letters"
        if len(line.split()) < self.min_line_words:
            return "short"
        return None

    def clean_lines(self, lines):
        """The kept lines (stripped) and ``{reason: dropped lines}``."""
        kept, dropped = [], {}
        for line in lines:
            line = " ".join(line.split())
            if not line:
                continue
            reason = self.line_verdict(line)
            if reason is None:
                kept.append(line)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return kept, dropped

    def long_enough(self, lines):
        return sum(len(line) for line in lines) >= self.min_document_chars
