"""MediaWiki XML dumps (``pages-articles*.xml[.bz2]``) read as a stream of pages.

The XML is parsed incrementally (``ElementTree.iterparse`` on the
decompressed bytes), so the parser honours the encoding the XML declaration
names, and each page is dropped from memory once read: a full dump streams in
constant memory. The root must be the MediaWiki export schema
(``<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.N/">``); other XML
is refused at its first element.
"""

import dataclasses
import re
import xml.etree.ElementTree as ElementTree

from bert_tf.data_prep.corpus.compressed_files import decompression_error
from bert_tf.data_prep.corpus.compressed_files import open_decompressed
from bert_tf.errors import UserInputError

_SCHEMA_PREFIX = "{http://www.mediawiki.org/xml/export-"


@dataclasses.dataclass(frozen=True)
class WikiPage:
    """One ``<page>`` of a dump.

    Attributes:
      wiki: the dump's ``<dbname>`` (e.g. ``enwiki``), "" if it has none.
      page_id: the page's ``<id>``.
      title: its ``<title>``.
      namespace: its ``<ns>`` (0: articles).
      redirect: whether it has a ``<redirect>`` element.
      text: the wikitext of its (last) revision.
    """

    wiki: str
    page_id: str
    title: str
    namespace: int
    redirect: bool
    text: str

    @property
    def key(self):
        """The page's name across dumps: ``<dbname>:<title>``."""
        return f"{self.wiki}:{self.title}"


def _local(tag):
    return tag.rsplit("}", 1)[-1]


def iter_wiki_pages(path):
    """Yields the `WikiPage`s of the dump at `path`, in order.

    Raises:
      UserInputError: the file is not XML, not a MediaWiki export, or ends
        early (a truncated ``.bz2``), naming the file (and line).

    Example:

    ```python
    for page in iter_wiki_pages("enwiki-latest-pages-articles1.xml.bz2"):
        print(page.title, page.namespace, page.redirect)
    ```
    """
    try:
        with open_decompressed(path) as stream:
            yield from _pages(path, stream)
    except ElementTree.ParseError as error:
        line, column = error.position
        reason = re.sub(r": line \d+, column \d+$", "", str(error))
        raise UserInputError(
            f"{path}:{line}: not well-formed XML at column {column + 1} "
            f"({reason}); a MediaWiki XML dump was expected"
        ) from None
    except (EOFError, OSError) as error:
        user_error = decompression_error(path, error)
        if user_error is None:
            raise
        raise user_error from None


def _pages(path, stream):
    events = ElementTree.iterparse(stream, events=("start", "end"))
    _, root = next(events)
    if not root.tag.startswith(_SCHEMA_PREFIX) or _local(root.tag) != "mediawiki":
        raise UserInputError(
            f"{path}: XML of another schema (root <{root.tag}>), not a MediaWiki "
            f"export dump ({_SCHEMA_PREFIX[1:]}N/ mediawiki)"
        )
    namespace = root.tag[: root.tag.index("}") + 1]
    wiki = ""
    depth = 0
    for event, element in events:
        if event == "start":
            depth += 1
            continue
        depth -= 1
        name = element.tag
        if name == namespace + "dbname" and depth == 1:
            wiki = (element.text or "").strip()
        elif name == namespace + "page" and depth == 0:
            yield _page(wiki, element, namespace)
            root.clear()  # the page and everything before it
        elif name == namespace + "siteinfo" and depth == 0:
            root.clear()


def _page(wiki, element, ns):
    revisions = element.findall(ns + "revision")
    text = revisions[-1].findtext(ns + "text") if revisions else None
    return WikiPage(
        wiki=wiki,
        page_id=(element.findtext(ns + "id") or "").strip(),
        title=element.findtext(ns + "title") or "",
        namespace=int(element.findtext(ns + "ns") or 0),
        redirect=element.find(ns + "redirect") is not None,
        text=text or "",
    )
