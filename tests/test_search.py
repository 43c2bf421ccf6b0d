"""bert-tf-search on a real index: MiniLM over SQuAD dev paragraphs in Milvus Lite, run_retrieval --do_index.

The hits the command prints are compared with the library's own search of
the same collection, their text with the corpus, and a re-ranked order with
sentence-transformers' CrossEncoder scores of the same pairs.
"""

import io
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")

from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from beir_fixtures import squad_subset  # noqa: E402
from cli_one_process import run_in_one_process  # noqa: E402
from cli_script import REPO  # noqa: E402
from cli_script import run_script  # noqa: E402
from cli_script import script_env  # noqa: E402
from cross_encoder_fixtures import cross_encoder_dir  # noqa: E402, F401  (fixture)

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.retrieval.milvus_store import MAX_TEXT_BYTES  # noqa: E402
from bert_tf.retrieval.milvus_store import MilvusStore  # noqa: E402
from bert_tf.retrieval.milvus_store import fit_bytes  # noqa: E402
from bert_tf.retrieval.vector_store import StoredPassage  # noqa: E402

SEARCH = os.path.join(REPO, "search.py")
RETRIEVAL = os.path.join(REPO, "run_retrieval.py")
NUM_DOCS = 30
PASSAGE_LENGTH = 64
QUERIES = [
    "Who won Super Bowl 50?",
    "Which network broadcast the game in the United States?",
    "Who performed at the halftime show?",
]


@pytest.fixture(scope="module")
def indexed(squad_beir, minilm_dir, tmp_path_factory):  # noqa: F811
    """run_retrieval --do_index (hybrid) of 30 SQuAD dev paragraphs cut into
    64-piece passages: (BEIR dir, output_dir)."""
    root = tmp_path_factory.mktemp("search")
    data = squad_subset(squad_beir, root / "data", NUM_DOCS)
    out = root / "out"
    run_script(
        RETRIEVAL,
        f"--data_dir={data}",
        f"--init_checkpoint={minilm_dir}",
        f"--output_dir={out}",
        "--do_index",
        "--retrieval_mode=hybrid",
        f"--passage_length={PASSAGE_LENGTH}",
    )
    return data, str(out)


def _copy(out, tmp_path):
    """A copy of the output_dir, for this process to open: a Milvus Lite file
    stays held by the process that opened it, and the commands open the
    original."""
    import shutil

    return shutil.copytree(out, tmp_path / "copy")


def _jsonl(result):
    return [json.loads(line) for line in result.stdout.splitlines()]


def _passages(data, minilm_dir):
    """The corpus's passages as run_retrieval cut them (MiniLM's tokenizer)."""
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)
    corpus = beir.read_corpus(data)
    passages = beir.split_passages(
        corpus,
        lambda w: len(tokenizer.tokenize(w)) or 1,
        PASSAGE_LENGTH,
        PASSAGE_LENGTH // 2,
    )
    return corpus, {p.id: p for p in passages}


@pytest.mark.slow
def test_search_prints_what_the_library_finds_with_the_corpus_text(
    indexed, minilm_dir, tmp_path
):
    data, out = indexed
    # The three runs one after another in one process (TensorFlow imported once).
    common = [f"--index={out}", "--retrieval_mode=dense"]
    runs = run_in_one_process(
        "search",
        [
            [*common, "--top_k=5", "--output_format=jsonl", *QUERIES],
            # The same queries on stdin (one a line, blank lines skipped).
            {
                "argv": [*common, "--top_k=5", "--output_format=jsonl"],
                "stdin": "\n".join(["", *QUERIES, ""]),
            },
            # Text output.
            [*common, "--top_k=2", QUERIES[0]],
        ],
        tmp_path / "cli",
    )
    for result in runs:
        assert result.returncode == 0, result.stderr[-4000:]
    printed, piped, text_run = runs
    printed = _jsonl(printed)
    assert _jsonl(piped) == printed
    assert [r["query"] for r in printed] == QUERIES

    from bert_tf.retrieval.dual_encoder import DualEncoder

    towers = DualEncoder.from_checkpoint(minilm_dir)
    with MilvusStore(
        os.path.join(_copy(out, tmp_path), "index.db"),
        "bert_tf",
        384,
        towers.fingerprint(),
        lexical=None,  # (as the hybrid collection has it)
    ) as store:
        found = store.search(towers.encode_queries(QUERIES), 5)
    corpus, passages = _passages(data, minilm_dir)
    split = 0
    for result, ids, scores in zip(printed, found.ids, found.scores, strict=True):
        hits = result["hits"]
        assert [h["id"] for h in hits] == ids
        np.testing.assert_allclose([h["score"] for h in hits], scores, atol=1e-5)
        assert [h["rank"] for h in hits] == [1, 2, 3, 4, 5]
        for hit in hits:
            document = corpus[hit["doc_id"]]
            assert hit["title"] == document.title
            assert hit["text"] == passages[hit["id"]].body
            words = " ".join(document.text.split())
            if hit["id"] == hit["doc_id"]:
                assert hit["text"] == words  # the whole paragraph
            else:
                split += 1
                assert hit["text"] in words and len(hit["text"]) < len(words)
    assert split  # long paragraphs were cut, and shown as their windows

    # Text output: the same hits, each with its title and text.
    text = text_run.stdout
    first = printed[0]["hits"][0]
    assert text.startswith(f"query: {QUERIES[0]}\n  1. {first['score']:.4f}  ")
    assert f"     {first['title']}\n     {first['text']}\n" in text


@pytest.mark.slow
def test_bm25_and_hybrid_equal_the_store_and_the_milvus_uri_reads_its_record(
    indexed, minilm_dir, tmp_path
):
    """In-process (`bert_tf.tasks.search`): an index given by its Milvus URI
    and collection finds its model in the collection's record."""
    from bert_tf.options.search_options import SearchOptions
    from bert_tf.retrieval.bm25 import query_vector
    from bert_tf.tasks import search

    _, out = indexed
    uri = os.path.join(_copy(out, tmp_path), "index.db")
    for mode in ("bm25", "hybrid"):
        options = SearchOptions(
            index=uri, collection="bert_tf", top_k=4, retrieval_mode=mode
        )
        index = search.open_index(options)
        assert index.model == minilm_dir
        assert index.settings["retrieval_mode"] == "hybrid"
        results = search.run(options, index, QUERIES, out=io.StringIO())
        with search.open_index(options) as again:
            store = again.store
            lexical = [query_vector(q) for q in QUERIES]
            if mode == "bm25":
                expected = store.search_lexical(lexical, 4)
            else:
                vectors = again.load_towers().encode_queries(QUERIES)
                expected = store.hybrid_search(vectors, lexical, 4)
        for result, ids, scores in zip(
            results, expected.ids, expected.scores, strict=True
        ):
            assert [h.id for h in result.hits] == ids
            np.testing.assert_allclose([h.score for h in result.hits], scores)


@pytest.mark.slow
def test_rerank_orders_the_candidates_by_the_cross_encoder(
    indexed,
    cross_encoder_dir,  # noqa: F811
    tmp_path,
):
    _, out = indexed
    common = [f"--index={out}", "--output_format=jsonl", "--retrieval_mode=dense"]
    # Both runs in one process (TensorFlow imported once).
    runs = run_in_one_process(
        "search",
        [
            [*common, "--top_k=8", *QUERIES],
            [
                *common,
                "--top_k=8",
                "--rerank_top_k=8",
                f"--rerank_checkpoint={cross_encoder_dir}",
                *QUERIES,
            ],
        ],
        tmp_path / "cli",
    )
    for result in runs:
        assert result.returncode == 0, result.stderr[-4000:]
    first, reranked = (_jsonl(result) for result in runs)
    from sentence_transformers import CrossEncoder

    reference = CrossEncoder(cross_encoder_dir, device="cpu")
    moved = 0
    for query, before, after in zip(QUERIES, first, reranked, strict=True):
        candidates = before["hits"]
        texts = [
            f"{h['title']} {h['text']}" if h["title"] else h["text"] for h in candidates
        ]
        scores = reference.predict([(query, t) for t in texts])
        order = np.argsort(-scores, kind="stable")
        hits = after["hits"]
        assert [h["id"] for h in hits] == [candidates[i]["id"] for i in order]
        np.testing.assert_allclose([h["score"] for h in hits], scores[order], atol=2e-5)
        np.testing.assert_allclose(
            [h["first_stage_score"] for h in hits],
            [candidates[i]["score"] for i in order],
            atol=1e-6,
        )
        moved += [h["id"] for h in hits] != [h["id"] for h in candidates]
    assert moved  # the cross-encoder changed some order


def _run_search_in_process(*flags, stdin=None):
    """(exit code, stderr lines, whether TensorFlow was imported) of the
    command run in a child process (`stdin`: bytes fed to it)."""
    code = textwrap.dedent(
        f"""
        import sys
        sys.argv = ["search.py", *{list(flags)!r}]
        from bert_tf.cli.search import main
        try:
            main()
        except SystemExit as e:
            print("EXIT", e.code, "tensorflow" in sys.modules)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        timeout=300,
        env=script_env(),
        input=stdin,
        stdin=subprocess.DEVNULL if stdin is None else None,
    )
    stdout, stderr = (result.stdout.decode(), result.stderr.decode())
    exit_line = stdout.strip().splitlines()[-1].split()
    errors = [line for line in stderr.splitlines() if "error:" in line]
    return int(exit_line[1]), errors, exit_line[2] == "True"


@pytest.mark.slow  # starts processes
def test_a_bad_index_is_one_line_before_tensorflow(tmp_path):
    uri = str(tmp_path / "index.db")
    # Written by a child: a Milvus Lite file is open to one process at a time.
    code = (
        "import numpy as np\n"
        "from bert_tf.retrieval.milvus_store import MilvusStore\n"
        "from bert_tf.retrieval.vector_store import StoredPassage\n"
        f"with MilvusStore({uri!r}, 'other', 4, 'model-a') as store:\n"
        "    store.upsert([StoredPassage('p', 'd', 'h', 't', '')], np.ones((1, 4)))\n"
    )
    subprocess.run(
        [sys.executable, "-c", code], check=True, env=script_env(), timeout=300
    )
    for flags, message in (
        (
            [f"--index={tmp_path / 'missing'}", "q"],
            "search: error: --index=",
        ),
        ([f"--index={uri}", "q"], "search: error: --collection: the Milvus"),
        (
            [f"--index={uri}", "--collection=bert_tf", "q"],
            f"search: error: --index={uri}: no collection 'bert_tf' "
            "(collections: other)",
        ),
        ([f"--index={uri}", "--collection=other"], "search: error: no queries"),
        (
            [f"--index={uri}", "--collection=other", "q"],
            "search: error: --model: ",  # the collection records none
        ),
        (
            [f"--index={uri}", "--collection=other", "--top_k=0", "q"],
            "search: error: --top_k",
        ),
    ):
        code, errors, tensorflow = _run_search_in_process(*flags)
        assert code == 2, flags
        assert len(errors) == 1 and errors[0].startswith(message), (flags, errors)
        assert not tensorflow, flags
    # Issue 61.8: a query on stdin that is not UTF-8 (before: a raw
    # UnicodeDecodeError traceback).
    code, errors, _ = _run_search_in_process(
        f"--index={uri}", "--collection=other", stdin=b"who won\ncaf\xe9 au lait\n"
    )
    assert code == 2
    assert errors == [
        "search: error: stdin:2: not UTF-8 (invalid continuation byte: byte "
        "0xe9 at column 4)"
    ], errors


def test_rows_keep_text_and_title_cut_to_a_varchar(tmp_path):
    assert fit_bytes("abc") == ("abc", False)
    cut, was_cut = fit_bytes("é" * 40000)  # 2 bytes each
    assert was_cut and cut == "é" * (MAX_TEXT_BYTES // 2)
    uri = str(tmp_path / "index.db")
    long_text = "x" + "é" * 40000
    rows = [
        StoredPassage("a", "a", "h1", "Denver won.", "Super Bowl 50"),
        StoredPassage("b", "b", "h2", long_text, ""),
    ]
    with MilvusStore(uri, "c", 4, "model-a") as store:
        store.upsert(rows, np.eye(2, 4))
        assert store.truncated_texts == 1
        stored = store.rows_of(["a", "b", "missing"])
        # A rerun compares the rows' keys: nothing to rewrite.
        assert {k: v.key for k, v in store.stored_passages().items()} == {
            r.id: r.key for r in rows
        }
    assert stored["a"] == rows[0]
    assert set(stored) == {"a", "b"}
    text = stored["b"].text
    assert long_text.startswith(text) and len(text.encode()) <= MAX_TEXT_BYTES
    assert len(text.encode()) > MAX_TEXT_BYTES - 2


def test_a_collection_without_texts_still_searches(tmp_path):
    """A collection made before the rows kept texts (its schema as
    MilvusStore wrote it then: BM25 only here, which needs no model) takes
    rows and answers with ids and scores."""
    from pymilvus import DataType
    from pymilvus import MilvusClient

    from bert_tf.retrieval.bm25 import BM25Statistics
    from bert_tf.retrieval.bm25 import lexical_terms
    from bert_tf.retrieval.milvus_store import FINGERPRINT_PROPERTY
    from bert_tf.retrieval.search_index import SearchIndex

    uri = str(tmp_path / "index.db")
    client = MilvusClient(uri)
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=1024)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=1024)
    schema.add_field("text_hash", DataType.VARCHAR, max_length=64)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    index = client.prepare_index_params()
    index.add_index(
        field_name="sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="IP"
    )
    client.create_collection(
        "old",
        schema=schema,
        index_params=index,
        properties={FINGERPRINT_PROPERTY: "m"},
    )
    client.close()
    texts = ["Denver won the game.", "Carolina lost it.", "Gold was everywhere."]
    rows = [
        StoredPassage(f"p{i}", f"d{i}", f"h{i}", t, "T") for i, t in enumerate(texts)
    ]
    stats = BM25Statistics([lexical_terms(t) for t in texts])
    with MilvusStore(uri, "old", 4, "m", dense=None, lexical=None) as store:
        assert not store.stores_text and not store.dense
        store.upsert(rows, None, sparse=stats.passage_vectors())
        assert store.rows_of(["p1"])["p1"] == rows[1][:3] + ("", "")
    with SearchIndex(uri, "old") as index:
        assert index.modes == ["bm25"] and index.model is None
        (hits,) = index.search(["who won the game?"], 2)
    assert hits[0].id == "p0" and hits[0].doc_id == "d0" and hits[0].score > 0
    assert all(h.text is None and h.title is None and h.passage is None for h in hits)


def test_the_retrieval_guide_commands_use_real_flags():
    import dataclasses
    import re

    from bert_tf.options.search_options import SearchOptions

    guide = os.path.join(REPO, "docs", "guides", "retrieval.md")
    with open(guide, encoding="utf-8") as f:
        page = f.read()
    start = page.index("```bash\nbert-tf-search --index=")
    text = page[start : page.index("```\n", start + 8)]
    used = set(re.findall(r"--(\w+)", text))
    defined = {field.name for field in dataclasses.fields(SearchOptions)}
    assert {"index", "collection", "rerank_checkpoint"} <= used <= defined


def test_a_passage_body_is_its_text_after_the_title():
    corpus = {
        "a": beir.Document("a", "Title", "one two three four five"),
        "b": beir.Document("b", "Super", "Superb text"),  # a word the title starts
        "c": beir.Document("c", " Spaced  title ", "x y"),
        "d": beir.Document("d", "Only title", ""),
        "e": beir.Document("e", "", "no title here"),
    }
    passages = beir.split_passages(corpus, lambda word: 1, 3, 2)
    assert [(p.id, p.title, p.body) for p in passages] == [
        ("a#0", "Title", "one two three"),
        ("a#1", "Title", "three four five"),
        ("b", "Super", "Superb text"),
        ("c", " Spaced  title ", "x y"),
        ("d", "Only title", ""),
        ("e", "", "no title here"),
    ]
    assert all(p.text.startswith(p.title.strip()) for p in passages)
