"""The fenced blocks of README.md and of the docs site's pages, found by a
string they hold, and the commands of a shell block.

tests/test_docs.py runs the blocks; tests/test_docs_blocks.py checks every
block is run or listed, and checks statically those that cannot run here.
"""

import glob
import os
import re
import textwrap

from cli_script import REPO


def pages():
    """README.md and every page of the site, as paths relative to the checkout."""
    found = glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True)
    site = [os.path.relpath(path, REPO) for path in found]
    return ["README.md"] + sorted(p for p in site if not p.startswith("docs/pending/"))


def page_blocks(page):
    """[(language, text)] of every fenced block of the page."""
    blocks, language, lines = [], None, []
    with open(os.path.join(REPO, page), encoding="utf-8") as f:
        for line in f:
            fence = re.match(r"\s*```(\w*)\s*$", line)
            if fence and language is None:
                language, lines = fence.group(1), []
            elif fence:
                blocks.append((language, textwrap.dedent("".join(lines))))
                language = None
            elif language is not None:
                lines.append(line)
    return blocks


def block(marker, page=None):
    """The one block holding `marker`: of `page`, or of the site's pages (the
    README's examples are copies, checked by test_readme_examples_are_guide_blocks)."""
    searched = [page] if page else [p for p in pages() if p != "README.md"]
    (text,) = [text for p in searched for _, text in page_blocks(p) if marker in text]
    return text


def commands(text):
    """The block's shell commands, continuation lines joined, comments dropped."""
    joined = re.sub(r"\\\n\s*", " ", text)
    return [
        line.strip()
        for line in joined.splitlines()
        if line.strip() and not line.strip().startswith("#")
    ]


def flag_names(command):
    return re.findall(r"--(\w+)", command)
