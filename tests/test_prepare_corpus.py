"""prepare_corpus (issue 55): a raw corpus to create_pretraining_data's input.

On the shared enwiki excerpt (206 pages, BERT_TF_DATA): the pages and their
redirect and namespace counts against an independent parse with
xml.etree; the article text against WikiExtractor's own command line on the
same pages; disambiguation pages against mwparserfromhell's templates; the
near-duplicate rule against datasketch's own MinHashLSH; JSON-lines, Parquet
and text inputs; determinism, stale shards, atomic writes and bad inputs; and,
marked slow, the command line end to end into create_pretraining_data.py and
the Beam pipeline (DirectRunner, two workers) against the one-process run.
"""

import bz2
import glob
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ElementTree

import pytest

pytest.importorskip("wikiextractor", reason="the [corpus] extra is not installed")
pytest.importorskip("blingfire", reason="the [corpus] extra is not installed")

from cli_script import REPO  # noqa: E402
from cli_script import script_env  # noqa: E402

from bert_tf.data_prep.corpus import dedup  # noqa: E402
from bert_tf.data_prep.corpus.cleaning import CleaningRules  # noqa: E402
from bert_tf.data_prep.corpus.extra import check_extra  # noqa: E402
from bert_tf.data_prep.corpus.preparation import prepare_corpus  # noqa: E402
from bert_tf.data_prep.corpus.sentences import split_sentences  # noqa: E402
from bert_tf.data_prep.corpus.shards import write_atomically  # noqa: E402
from bert_tf.data_prep.corpus.wiki_dump import iter_wiki_pages  # noqa: E402
from bert_tf.data_prep.corpus.wikitext import HEADING_MARK  # noqa: E402
from bert_tf.data_prep.corpus.wikitext import article_paragraphs  # noqa: E402
from bert_tf.data_prep.corpus.wikitext import is_disambiguation  # noqa: E402
from bert_tf.errors import UserInputError  # noqa: E402

DUMP_NAME = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
MEDIAWIKI = "{http://www.mediawiki.org/xml/export-0.10/}"
TWO_WORKERS = "--direct_num_workers=2 --direct_running_mode=multi_processing"


@pytest.fixture(scope="module")
def dump(shared_data):
    return os.path.join(shared_data, "wikipedia", DUMP_NAME)


@pytest.fixture(scope="module")
def dump_xml(dump):
    with bz2.open(dump, "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def pages(dump):
    return list(iter_wiki_pages(dump))


def _page_chunks(xml):
    """The dump's XML cut into its head (siteinfo), its <page> elements and its tail."""
    starts = [m.start() for m in re.finditer(rb"  <page>", xml)]
    tail = xml.rindex(b"</mediawiki>")
    return (
        xml[: starts[0]],
        [xml[a:b] for a, b in zip(starts, starts[1:] + [tail], strict=True)],
        xml[tail:],
    )


@pytest.fixture(scope="module")
def small_dump_parts(dump_xml):
    """The head, 10 real pages and the tail of a small dump: redirects, four
    short articles, Anarchism, the Wikipedia: page and a disambiguation page."""
    head, chunks, tail = _page_chunks(dump_xml)
    articles = sorted(
        (c for c in chunks if b"<redirect" not in c and b"<ns>0</ns>" in c), key=len
    )
    chosen = chunks[:4] + articles[12:16]
    chosen += [c for c in chunks if b"<ns>4</ns>" in c or b"<title>Alien</title>" in c]
    return head, chosen, tail


@pytest.fixture(scope="module")
def small_dump(small_dump_parts, tmp_path_factory):
    """The small dump as two concatenated bzip2 streams (multistream)."""
    head, chosen, tail = small_dump_parts
    folder = tmp_path_factory.mktemp("dump")
    path = str(folder / "small-pages-articles-multistream.xml.bz2")
    with open(path, "wb") as f:
        f.write(bz2.compress(head + b"".join(chosen[:5])))
        f.write(bz2.compress(b"".join(chosen[5:]) + tail))
    return path


def test_pages_and_their_counts_match_an_independent_parse(dump, pages):
    with bz2.open(dump) as f:
        root = ElementTree.parse(f).getroot()
    expected = root.findall(MEDIAWIKI + "page")
    assert len(pages) == len(expected) == 206
    for page, element in zip(pages, expected, strict=True):
        assert page.title == element.findtext(MEDIAWIKI + "title")
        assert page.page_id == element.findtext(MEDIAWIKI + "id")
        assert page.text == (
            element.find(f"{MEDIAWIKI}revision/{MEDIAWIKI}text").text or ""
        )
    redirects = sum(e.find(MEDIAWIKI + "redirect") is not None for e in expected)
    other_namespaces = sum(e.findtext(MEDIAWIKI + "ns") != "0" for e in expected)
    assert sum(p.redirect for p in pages) == redirects
    assert sum(p.namespace != 0 for p in pages) == other_namespaces
    assert (
        pages[0].key
        == f"{root.findtext(f'{MEDIAWIKI}siteinfo/{MEDIAWIKI}dbname')}:{pages[0].title}"
    )


def test_multistream_and_declared_encodings_read_the_same_pages(
    small_dump_parts, small_dump, tmp_path
):
    head, chosen, tail = small_dump_parts
    plain = tmp_path / "plain.xml"
    plain.write_bytes(head + b"".join(chosen) + tail)
    expected = list(iter_wiki_pages(str(plain)))
    assert len(expected) == 10
    assert list(iter_wiki_pages(small_dump)) == expected
    # The encoding the XML declaration names (expat decodes it).
    text = (head + b"".join(chosen) + tail).decode("utf-8")
    text = text.replace(
        "<mediawiki", '<?xml version="1.0" encoding="UTF-16"?>\n<mediawiki', 1
    )
    utf16 = tmp_path / "utf16.xml"
    utf16.write_bytes(text.encode("utf-16"))
    assert list(iter_wiki_pages(str(utf16))) == expected


def test_disambiguation_pages_are_those_with_a_disambiguation_template(pages):
    import mwparserfromhell

    names = {"disambiguation", "disambig", "dab", "geodis", "hndis", "numberdis"}

    def has_template(page):
        templates = mwparserfromhell.parse(page.text).filter_templates(recursive=False)
        return any(str(t.name).strip().lower() in names for t in templates)

    # A page without any of the names has no such template (not parsed).
    articles = [
        p
        for p in pages
        if p.namespace == 0
        and not p.redirect
        and any(name in p.text.lower() for name in names)
    ]
    assert articles and [p.title for p in articles if is_disambiguation(p)] == [
        p.title for p in articles if has_template(p)
    ]


@pytest.mark.slow  # runs WikiExtractor's command line
def test_article_text_is_wikiextractors_own_output(small_dump, tmp_path):
    """WikiExtractor's command line (--no-templates, HTML entities decoded)
    on the same dump gives each article's paragraphs, headings included."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "wikiextractor.WikiExtractor",
            small_dump,
            "--no-templates",
            "--json",
            "--html-safe",
            "",
            "--processes",
            "1",
            "-q",
            "-o",
            str(tmp_path / "wx"),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    theirs = {}
    for path in glob.glob(str(tmp_path / "wx" / "*" / "*")):
        for line in open(path, encoding="utf-8"):
            row = json.loads(line)
            theirs[row["title"]] = row["text"]
    ours = {
        p.title: "\n".join(x.removeprefix(HEADING_MARK) for x in article_paragraphs(p))
        for p in iter_wiki_pages(small_dump)
        if p.namespace == 0 and not p.redirect
    }
    assert len(ours) >= 3 and ours == theirs


def test_cleaning_rules_and_their_thresholds():
    rules = CleaningRules(min_document_chars=30, min_line_words=3)
    assert rules.line_verdict("A line with {{cite web|url=x}} left.") == "markup"
    assert rules.line_verdict("A table row |} left over here.") == "markup"
    assert rules.line_verdict("Text<ref name=a/> with a reference.") == "markup"
    assert rules.line_verdict("--- ; ... 1990 !") == "no_letters"
    assert rules.line_verdict("See also.") == "short"
    assert rules.line_verdict("Dogs bark at night.") is None
    kept, dropped = rules.clean_lines(
        ["Dogs  bark at night.", "", "See also.", "{{x}} y z"]
    )
    assert kept == ["Dogs bark at night."]
    assert dropped == {"short": 1, "markup": 1}
    assert not rules.long_enough(kept) and rules.long_enough(kept * 2)
    assert CleaningRules(drop_markup_lines=False).line_verdict("{{x}} y z w") is None


@pytest.mark.slow  # the whole dump (4 s)
def test_shards_hold_the_articles_sentences_in_order(dump, tmp_path):
    summary = prepare_corpus([dump], str(tmp_path / "c"), num_shards=10)
    counts = summary.as_json()
    assert counts["pages_read"] == 206
    skipped = counts["pages_skipped"]
    assert (
        skipped["redirect"]
        + skipped["namespace"]
        + skipped["disambiguation"]
        + (counts["documents_dropped_too_short"])
        + counts["documents"]
        == 206
    )
    shards = sorted(glob.glob(str(tmp_path / "c" / "corpus-*-of-00010.txt")))
    assert len(shards) == 10
    text = "".join(open(p, encoding="utf-8").read() for p in shards)
    documents = [d for d in text.split("\n\n") if d]
    assert len(documents) == counts["documents"]
    assert sum(len(d.split("\n")) for d in documents) == counts["sentences"]
    assert sum(os.path.getsize(p) for p in shards) == counts["bytes_out"]
    assert json.load(open(tmp_path / "c" / "corpus_summary.json")) == counts
    # Bling Fire's sentences of a paragraph, joined, are the paragraph.
    paragraph = "It was cold. Dr. Watson came in at 5 p.m. and sat down. Was he ill?"
    assert " ".join(split_sentences(paragraph)).split() == paragraph.split()
    anarchism = [
        d for d in documents if d.startswith("Anarchism is a political philosophy")
    ]
    assert len(anarchism) == 1 and len(anarchism[0].split("\n")) > 100


def test_same_input_and_seed_same_bytes_other_seed_other_split(small_dump, tmp_path):
    def shards(folder, seed):
        prepare_corpus(
            [small_dump], str(tmp_path / folder), num_shards=4, random_seed=seed
        )
        return [
            open(p, "rb").read()
            for p in sorted(glob.glob(str(tmp_path / folder / "corpus-*")))
        ]

    first, again, other = shards("a", 12345), shards("b", 12345), shards("c", 7)
    assert first == again
    assert first != other

    def documents(contents):
        return sorted(d for shard in contents for d in shard.split(b"\n\n") if d)

    assert documents(first) == documents(other)


def _articles(pages, count):
    from bert_tf.data_prep.corpus.wikitext import article_text

    texts = [article_text(p) for p in pages if p.namespace == 0 and not p.redirect]
    return [t for t in texts if len(t) > 3000][:count]


def test_planted_exact_and_near_duplicates_are_removed(pages, tmp_path):
    a, b, c = _articles(pages, 3)
    words = a.split()
    near = " ".join(words[:40] + ["entirely", "different", "words"] + words[43:])
    rows = [
        {"text": a},  # line 1: kept
        {"text": b},  # line 2: kept
        {"text": "  " + a.upper().replace(" ", "   ")},  # line 3: exact (normalised)
        {"text": near},  # line 4: near duplicate of line 1
        {"text": c},  # line 5: kept
    ]
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    summary = prepare_corpus([str(path)], str(tmp_path / "out"))
    assert summary["exact_duplicates"] == 1
    assert summary["near_duplicates"] == 1
    assert summary["documents"] == 3
    written = open(
        tmp_path / "out" / "corpus-00000-of-00001.txt", encoding="utf-8"
    ).read()
    assert "entirely different words" not in written
    assert written.count(a.split(". ")[0][:60]) == 1


def test_near_duplicate_rule_agrees_with_datasketchs_own_lsh(pages):
    """Every dropped document has a smaller-key partner that datasketch's
    MinHashLSH returns for it, with an estimated Jaccard >= the threshold,
    and no kept document has one."""
    from datasketch import MinHash
    from datasketch import MinHashLSH

    texts = _articles(pages, 6)
    documents = {}
    for i, text in enumerate(texts):
        words = text.split()
        documents[f"k{i}"] = text
        documents[f"n{i}"] = " ".join(words[:30] + ["planted"] + words[31:])  # near
    bands = dedup.NearDuplicateBands(0.8)
    signatures = {k: dedup.signature(t) for k, t in documents.items()}
    dropped = dedup.near_duplicates(signatures, bands)
    lsh = MinHashLSH(threshold=0.8, num_perm=dedup.NUM_PERM)
    minhashes = {
        k: MinHash(num_perm=dedup.NUM_PERM, hashvalues=v, scheme=dedup.MINHASH_SCHEME)
        for k, v in signatures.items()
    }
    for key, minhash in minhashes.items():
        lsh.insert(key, minhash)
    for key, minhash in minhashes.items():
        partners = [
            other
            for other in lsh.query(minhash)
            if other < key and minhash.jaccard(minhashes[other]) >= 0.8
        ]
        assert bool(partners) == (key in dropped), key
    assert dropped == {f"n{i}" for i in range(len(texts))}


def test_jsonl_parquet_and_text_inputs_give_the_same_documents(pages, tmp_path):
    import pyarrow
    import pyarrow.parquet

    texts = _articles(pages, 4)
    (tmp_path / "in").mkdir()
    with open(tmp_path / "in" / "rows.jsonl", "w", encoding="utf-8") as f:
        for text in texts:
            f.write(json.dumps({"id": 1, "content": text}) + "\n")
    pyarrow.parquet.write_table(
        pyarrow.table({"content": texts}), str(tmp_path / "in" / "rows.parquet")
    )
    (tmp_path / "in" / "docs.txt").write_text(
        "\n\n".join(texts) + "\n", encoding="utf-8"
    )

    def documents(name, **kwargs):
        out = tmp_path / ("out_" + name.replace(".", "_"))
        summary = prepare_corpus([str(tmp_path / "in" / name)], str(out), **kwargs)
        assert summary["records_read"] == len(texts)
        text = open(out / "corpus-00000-of-00001.txt", encoding="utf-8").read()
        return sorted(d for d in text.split("\n\n") if d)

    jsonl = documents("rows.jsonl", text_column="content")
    assert len(jsonl) == len(texts)
    assert documents("rows.parquet", text_column="content") == jsonl
    assert documents("docs.txt") == jsonl


def test_a_rerun_with_fewer_shards_removes_the_stale_ones(small_dump, tmp_path):
    out = tmp_path / "out"
    prepare_corpus([small_dump], str(out), num_shards=3)
    (out / "corpus-00001-of-00002.txt.tmp").write_text("half written")
    prepare_corpus([small_dump], str(out), num_shards=2)
    assert sorted(os.listdir(out)) == [
        "corpus-00000-of-00002.txt",
        "corpus-00001-of-00002.txt",
        "corpus_summary.json",
    ]


def test_an_interrupted_write_leaves_no_shard(tmp_path):
    path = str(tmp_path / "corpus-00000-of-00001.txt")

    def chunks():
        yield "a sentence.\n"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomically(path, chunks())
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize(
    "name, content, named",
    [
        ("cut-pages-articles.xml.bz2", None, "ends early"),
        ("not.xml", b"plain words\n", "not.xml:1: not well-formed XML"),
        ("rss.xml", b"<?xml version='1.0'?><rss/>", "another schema"),
        ("rows.jsonl", b'{"text": "fine"}\n{nope\n', "rows.jsonl:2: not JSON"),
        ("rows.jsonl", b'{"body": "x"}\n', "rows.jsonl:1: no 'text' field"),
        ("short.txt", b"Too short.\n", "no document left after filtering"),
    ],
)
def test_bad_inputs_are_named_and_nothing_is_written(
    dump, tmp_path, name, content, named
):
    path = tmp_path / name
    path.write_bytes(open(dump, "rb").read(200_000) if content is None else content)
    with pytest.raises(UserInputError, match=re.escape(named)):
        prepare_corpus([str(path)], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_parquet_without_the_text_column_and_output_inside_the_input(tmp_path):
    import pyarrow
    import pyarrow.parquet

    path = str(tmp_path / "rows.parquet")
    pyarrow.parquet.write_table(pyarrow.table({"body": ["x"]}), path)
    with pytest.raises(UserInputError, match="rows.parquet: no column 'text'"):
        prepare_corpus([path], str(tmp_path / "out"))
    with pytest.raises(UserInputError, match="holds the input"):
        prepare_corpus([path], str(tmp_path))


def test_a_missing_extra_is_one_line_naming_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "blingfire", None)
    with pytest.raises(
        UserInputError, match=re.escape('pip install "bert_tf[corpus]"')
    ):
        check_extra()


def _run(*args):
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=script_env(),
        cwd=REPO,
        timeout=600,
    )


@pytest.mark.slow  # two processes: prepare_corpus, then create_pretraining_data
def test_the_command_line_feeds_create_pretraining_data(
    small_dump, shared_data, tmp_path
):
    out = tmp_path / "corpus"
    result = _run(
        "data_prep/prepare_corpus.py",
        f"--input_file={small_dump}",
        f"--output_dir={out}",
        "--num_shards=2",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads(result.stdout)
    assert summary == json.load(open(out / "corpus_summary.json"))
    assert summary["pages_read"] == 10 and summary["documents"] >= 3
    shards = ",".join(sorted(glob.glob(str(out / "corpus-*-of-00002.txt"))))
    records = tmp_path / "records.tfrecord"
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    result = _run(
        "create_pretraining_data.py",
        f"--input_file={shards}",
        f"--output_file={records}",
        f"--vocab_file={vocab}",
        "--do_lower_case=True",
        "--max_seq_length=64",
        "--max_predictions_per_seq=10",
        "--dupe_factor=1",
    )
    assert result.returncode == 0, result.stderr[-3000:]
    written = int(re.search(r"Wrote (\d+) total instances", result.stderr).group(1))
    assert written > 50 and records.stat().st_size > 0


@pytest.mark.slow  # a Beam pipeline on two worker processes
def test_beam_writes_the_one_process_shards_and_summary(small_dump, tmp_path):
    pytest.importorskip("apache_beam", reason="the [beam] extra is not installed")
    from bert_tf.beam.corpus_preparation import run_pipeline

    text = tmp_path / "in" / "docs.txt"
    text.parent.mkdir()
    text.write_text(
        "A small plain document, long enough to pass the threshold. " * 5
        + "\n\n"
        + "Another document of the corpus, also long enough here. " * 5
        + "\n",
        encoding="utf-8",
    )
    inputs = [small_dump, str(text)]
    one = prepare_corpus(inputs, str(tmp_path / "one"), num_shards=3)
    two = run_pipeline(
        inputs, str(tmp_path / "beam"), "DirectRunner", TWO_WORKERS, num_shards=3
    )
    assert two.as_json() == one.as_json()
    names = sorted(os.listdir(tmp_path / "one"))
    assert names == sorted(os.listdir(tmp_path / "beam"))
    for name in names:
        assert (tmp_path / "one" / name).read_bytes() == (
            tmp_path / "beam" / name
        ).read_bytes()
    # A worker's input error: one line, and no shard.
    cut = tmp_path / "cut-pages-articles.xml.bz2"
    cut.write_bytes(open(small_dump, "rb").read()[:5000])
    with pytest.raises(UserInputError, match="ends early"):
        run_pipeline([str(cut)], str(tmp_path / "bad"), "DirectRunner", TWO_WORKERS)
    assert [n for n in os.listdir(tmp_path / "bad") if n.startswith("corpus")] == []
