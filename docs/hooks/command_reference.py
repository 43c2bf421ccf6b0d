"""MkDocs hook: appends every tool's flags to reference/commands.md at build time.

The sections come from the tools themselves (`bert_tf.cli.flag_reference`),
imported from this checkout, so the reference is the flags of the code the site
is built from.
"""

import os
import sys

CHECKOUT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = "reference/commands.md"


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri != PAGE:
        return markdown
    if sys.path[0] != CHECKOUT:
        sys.path.insert(0, CHECKOUT)
    from bert_tf.cli.flag_reference import reference_markdown

    return markdown.rstrip("\n") + "\n\n" + reference_markdown()
