"""The docs site builds, its links resolve, and a browser shows its pages.

`mkdocs build --strict` (warnings are errors: a broken link or anchor between
pages, a docstring mkdocstrings cannot read) builds the site once; every
internal link and anchor of the built HTML is checked; a headless Chromium
(Debian's `chromium`) loads the home page and two guides from a local server
and must find their headings and log no console message. The browser test
skips, saying why, where Chromium is absent.
"""

import functools
import html.parser
import http.server
import os
import posixpath
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest
from cli_script import REPO

# Builds a site and starts a browser: the full suite's tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The built site's directory (and how long the build took, in seconds)."""
    pytest.importorskip("mkdocs", reason="mkdocs (the docs extra)")
    site_dir = tmp_path_factory.mktemp("site")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", site_dir],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return str(site_dir), time.monotonic() - start


class _Page(html.parser.HTMLParser):
    """The ids, links and headings of one HTML page."""

    def __init__(self):
        super().__init__()
        self.ids, self.links, self.headings = set(), [], []
        self._heading = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if attrs.get("id"):
            self.ids.add(attrs["id"])
        for name in ("href", "src"):
            if attrs.get(name) and tag in ("a", "link", "img", "script"):
                self.links.append(attrs[name])
        if tag in ("h1", "h2"):
            self._heading = []

    def handle_data(self, data):
        if self._heading is not None:
            self._heading.append(data)

    def handle_endtag(self, tag):
        if tag in ("h1", "h2") and self._heading is not None:
            self.headings.append("".join(self._heading).replace("¶", "").strip())
            self._heading = None


def _parsed(path):
    page = _Page()
    with open(path, encoding="utf-8") as f:
        page.feed(f.read())
    return page


def _html_files(site_dir):
    for folder, _, names in os.walk(site_dir):
        for name in names:
            if name.endswith(".html"):
                yield os.path.relpath(os.path.join(folder, name), site_dir)


def _target(page_path, link):
    """(file relative to the site, fragment) of an internal link, or None."""
    parts = urllib.parse.urlsplit(link)
    if parts.scheme or parts.netloc or link.startswith("//"):
        return None
    path = urllib.parse.unquote(parts.path)
    if path:
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page_path), path))
    else:
        path = page_path
    return path, parts.fragment


def test_the_site_builds_strictly_and_every_page_is_there(site):
    site_dir, seconds = site
    pages = set(_html_files(site_dir))
    for page in ("index.html", "reference/commands/index.html"):
        assert page in pages
    guides = {p for p in pages if p.startswith("guides/")}
    # Every guide in docs/guides/ is built (none dropped from the nav).
    written = {
        f"guides/{name[:-3]}/index.html"
        for name in os.listdir(os.path.join(REPO, "docs", "guides"))
        if name.endswith(".md")
    }
    assert guides == written, sorted(guides ^ written)
    print(f"site built in {seconds:.1f} s, {len(pages)} HTML pages")


def test_every_internal_link_and_anchor_resolves(site):
    site_dir, _ = site
    parsed = {
        path: _parsed(os.path.join(site_dir, path)) for path in _html_files(site_dir)
    }
    broken, checked = [], 0
    for path, page in parsed.items():
        if path == "404.html":
            continue  # Material's 404 page links site-absolute (/assets/...)
        for link in page.links:
            target = _target(path, link)
            if target is None:
                continue
            file, fragment = target
            full = os.path.join(site_dir, file)
            if os.path.isdir(full):
                file = posixpath.join(file, "index.html")
                full = os.path.join(full, "index.html")
            checked += 1
            if not os.path.exists(full):
                broken.append(f"{path}: {link} (no {file})")
            elif fragment and fragment not in parsed[file].ids:
                broken.append(f"{path}: {link} (no id {fragment!r} in {file})")
    assert checked > 500 and not broken, broken


def test_the_command_reference_lists_every_tool_and_its_flags(site):
    # The generated part of reference/commands.md: a section per tool, each
    # with the flags the tool defines (`bert_tf.cli.flag_reference`).
    site_dir, _ = site
    page = _parsed(os.path.join(site_dir, "reference", "commands", "index.html"))
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        source = f.read()
    names = re.findall(r'"(\w+)"', re.search(r"COMMANDS = \((.*?)\)", source, re.S)[1])
    tools = {"bert-tf-" + name.replace("_", "-") for name in names}
    assert tools <= set(page.headings), sorted(tools - set(page.headings))
    with open(os.path.join(site_dir, "reference", "commands", "index.html")) as f:
        text = f.read()
    for flag in ("--task_name", "--retrieval_mode", "--[no]do_train", "--target"):
        assert f"<code>{flag}</code>" in text, flag


def _chromium():
    for name in ("chromium", "chromium-browser"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.fixture
def served(site):
    """The built site on http://127.0.0.1:<free port>/, stopped after the test."""
    site_dir, _ = site
    handler = functools.partial(_QuietHandler, directory=site_dir)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()
    thread.join(timeout=10)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args):
        pass


@pytest.mark.parametrize(
    "path, headings",
    [
        ("", ["bert_tf", "Where to go"]),
        ("guides/fine-tuning/", ["Fine-tuning: run_classifier.py"]),
        (
            "guides/retrieval/",
            ["Retrieval: run_retrieval.py", "Search from the command line"],
        ),
    ],
)
def test_a_browser_shows_the_pages(served, path, headings, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("no chromium on this machine (Debian's `chromium` package)")
    result = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
            "--dump-dom",
            served + path,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    page = _Page()
    page.feed(result.stdout)
    # The DOM after the page's scripts ran: Material's, which also writes the
    # table of contents and the search box.
    missing = [h for h in headings if not any(h in seen for seen in page.headings)]
    assert not missing, (missing, page.headings)
    console = [line for line in result.stderr.splitlines() if "CONSOLE" in line]
    assert not console, console
