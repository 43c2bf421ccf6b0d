"""Wikitext → article text, through WikiExtractor (the extractor the original names).

Why WikiExtractor and not mwparserfromhell: on the 106 articles of the
shared enwiki excerpt, WikiExtractor 3.1.0's ``Extractor.clean_text`` took
1.3 s and left no template braces, no table markup, no ``<ref``, no
``thumb|`` image captions and no ``| key=`` infobox rows (3 stray tags, e.g.
``<onlyinclude>``); mwparserfromhell 0.7.2's ``strip_code`` took 7.9 s (6x)
and left 911 ``thumb|`` image options, 311 ``| key=`` rows, 13 ``<ref``, 38
tags and 3 tables. Its 30% more text is mostly that residue. WikiExtractor
is AGPL-licensed: it is an optional extra (``bert_tf[corpus]``), imported,
not shipped.

The extractor runs as its own command line does with ``--no-templates``
(templates are not expanded: a ``pages-articles`` dump's templates would need
a first pass over the whole dump, and their output, infoboxes and navboxes,
is not prose), except that HTML entities are left decoded (``html_safe``
off) and section headings are marked so that the cleaning stage can drop
them (a heading is not a sentence). The brackets that held only a dropped
template (a pronunciation, a date) are removed: "Schopenhauer (; 22 February
1788 - ...)" becomes "Schopenhauer (22 February 1788 - ...)", "()" goes.
"""

import re

from bert_tf.data_prep.corpus.extra import import_extra

# The mark WikiExtractor puts before a heading paragraph (mark_headers).
HEADING_MARK = "## "
# Templates that make a page a disambiguation page (enwiki's and their
# redirects; the magic word __DISAMBIG__ is what the templates expand to).
_DISAMBIGUATION = re.compile(
    r"\{\{\s*(disambiguation|disambig|dab|disamb|hndis|geodis|numberdis|"
    r"letter-number combination disambiguation|[a-z ]*disambiguation)\s*[|}]"
    r"|__DISAMBIG__",
    re.IGNORECASE,
)

# Brackets left with nothing but punctuation once their templates are gone,
# and the separator left at the start of a bracket.
_EMPTY_BRACKETS = re.compile(r" ?\((?:[\s,;:.\-\u2013]|\"\")*\)")
_LEADING_SEPARATOR = re.compile(r"\(\s*[,;:]\s*")


def is_disambiguation(page):
    """Whether the `WikiPage` is a disambiguation page (its title or a
    disambiguation template)."""
    return page.title.endswith("(disambiguation)") or bool(
        _DISAMBIGUATION.search(page.text)
    )


def article_paragraphs(page):
    """The page's paragraphs as WikiExtractor extracts them, headings marked
    with `HEADING_MARK` (e.g. ``"## History."``).

    Example:

    ```python
    paragraphs = article_paragraphs(page)  # a WikiPage
    prose = [p for p in paragraphs if not p.startswith(HEADING_MARK)]
    ```
    """
    extract = import_extra("wikiextractor.extract")
    extractor = extract.Extractor(page.page_id, 0, "", page.title, [])
    # expand_templates=True with no templates is what the command line does
    # under --no-templates: magic words and parser functions are evaluated,
    # every template call becomes "".
    return extractor.clean_text(
        page.text, mark_headers=True, expand_templates=True, html_safe=False
    )


def without_template_leftovers(paragraph):
    """`paragraph` without the brackets that only held dropped templates."""
    paragraph = _EMPTY_BRACKETS.sub("", paragraph)
    return _LEADING_SEPARATOR.sub("(", paragraph)


def article_text(page):
    """The page's prose: its paragraphs without headings (and without
    template leftovers), one per line."""
    return "\n".join(
        without_template_leftovers(p)
        for p in article_paragraphs(page)
        if not p.startswith(HEADING_MARK)
    )
