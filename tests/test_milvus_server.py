"""The server URI path against a real Milvus server (`milvus-lite server`,
tests/milvus_server.py): the stores and run_retrieval give what the Milvus
Lite file gives; what the server lacks (INT8 vectors) is one line; Milvus's
own BM25 function runs there (issue 60)."""

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")
pytestmark = pytest.mark.slow  # starts a server process

from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from beir_fixtures import squad_subset  # noqa: E402
from milvus_server import milvus_server  # noqa: E402

from bert_tf.errors import UserInputError  # noqa: E402
from bert_tf.retrieval import quantized_vectors  # noqa: E402
from bert_tf.retrieval.bm25 import BM25Statistics  # noqa: E402
from bert_tf.retrieval.bm25 import lexical_terms  # noqa: E402
from bert_tf.retrieval.bm25 import query_vector  # noqa: E402
from bert_tf.retrieval.milvus_store import MilvusStore  # noqa: E402
from bert_tf.retrieval.search_index import DEFAULT_COLLECTION  # noqa: E402
from bert_tf.retrieval.vector_store import StoredPassage  # noqa: E402

TEXTS = [
    "the cat sat on the mat",
    "a dog barked at the mailman",
    "stock markets fell sharply on monday",
    "the orchestra played a symphony by brahms",
    "volcanic ash closed the airport",
    "a recipe for sourdough bread",
    "the committee approved the budget",
    "penguins live in the southern hemisphere",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with milvus_server(tmp_path_factory.mktemp("milvus_server")) as uri:
        yield uri


def _rows_and_vectors():
    rows = [
        StoredPassage(f"p{i}", f"d{i}", f"h{i}", text, "")
        for i, text in enumerate(TEXTS)
    ]
    vectors = np.random.default_rng(0).normal(size=(len(TEXTS), 16))
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(
        np.float32
    )
    return rows, vectors


def test_server_stores_and_searches_as_the_lite_file(server, tmp_path):
    rows, vectors = _rows_and_vectors()
    stats = BM25Statistics([lexical_terms(t) for t in TEXTS])
    queries = ["cat on a mat", "brahms symphony", "airport ash", "budget"]
    lexical = [query_vector(q) for q in queries]
    query_vectors = vectors[[0, 3, 4, 6]] + 0.1
    found = {}
    for name, uri in (("lite", str(tmp_path / "index.db")), ("server", server)):
        with MilvusStore(uri, "hybrid", 16, "model-a", lexical=True) as store:
            store.upsert(rows, vectors, sparse=stats.passage_vectors())
            stored, kept = store.vectors()
            found[name] = (
                [(p.id, p.doc_id, p.text) for p in stored],
                kept,
                store.search(query_vectors, 5),
                store.search_lexical(lexical, 5),
                store.hybrid_search(query_vectors, lexical, 5),
            )
    lite, served = found["lite"], found["server"]
    assert sorted(served[0]) == sorted(lite[0])  # ids, documents, texts
    order = {pid: i for i, (pid, _, _) in enumerate(lite[0])}
    again = [order[pid] for pid, _, _ in served[0]]
    np.testing.assert_allclose(served[1], lite[1][again], atol=1e-5)
    for ours, theirs in zip(served[2:], lite[2:], strict=True):
        assert ours.ids == theirs.ids
        for mine, lites in zip(ours.scores, theirs.scores, strict=True):
            np.testing.assert_allclose(mine, lites, rtol=1e-5)


def test_parallel_writers_store_every_row(server):
    """Four writers upserting into one collection at once, as the Beam
    writers do: every row is stored. A flush after each upsert failed about
    one run in three here (``current_seq is monotonic``: the server's
    concurrent flushes), so a server's rows are flushed once, at the end."""
    import threading

    errors = []

    def write(worker):
        rng = np.random.default_rng(worker)
        try:
            with MilvusStore(server, "parallel", 16, "model-a") as store:
                for batch in range(15):
                    rows = [
                        StoredPassage(f"w{worker}-{batch}-{i}", "d", "h", "text", "")
                        for i in range(64)
                    ]
                    store.upsert(rows, rng.normal(size=(64, 16)).astype(np.float32))
        except UserInputError as error:
            errors.append(str(error))

    with MilvusStore(server, "parallel", 16, "model-a"):
        pass  # made before the writers open it
    writers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    assert errors == []
    with MilvusStore.existing(server, "parallel") as store:
        store.flush()
        assert len(store) == 4 * 15 * 64
        assert len(store.stored_passages()) == 4 * 15 * 64


def test_server_without_int8_vectors_is_one_line(server):
    rows, vectors = _rows_and_vectors()
    with pytest.raises(UserInputError, match=r"collection 'codes'.*Int8Vector"):
        with MilvusStore(server, "codes", 16, "model-a", vector_type="int8") as store:
            store.set_int8_scale(quantized_vectors.fit_int8_scale(vectors))
            store.upsert(rows, vectors)


def test_milvus_bm25_function_runs_on_the_server(server):
    rows, vectors = _rows_and_vectors()
    with MilvusStore(
        server, "bm25_function", 16, "model-a", lexical=True, bm25_function=True
    ) as store:
        store.upsert(rows, vectors)
        found = store.search_lexical(
            ["penguins hemisphere", "sourdough bread recipe"], 3
        )
    assert [ids[0] for ids in found.ids] == ["p7", "p5"]


def test_run_retrieval_on_the_server_equals_the_lite_file(
    squad_beir,  # noqa: F811
    shared_data,
    tmp_path,
):
    """--do_index --do_eval with --milvus_uri=http://...: the stored rows and
    the metrics of the Lite file; hybrid with --bm25_function there. A server
    of its own: this process's idle connections to the module's server get
    a GOAWAY (too many keepalive pings) after the minutes the runs take."""
    with milvus_server(tmp_path / "server") as server:
        _run_retrieval_on(server, squad_beir, shared_data, tmp_path)


def _run_retrieval_on(server, squad_beir, shared_data, tmp_path):  # noqa: F811
    from cli_one_process import run_in_one_process
    from test_run_retrieval import _read_results
    from test_run_retrieval import _tiny_st_dir

    data = squad_subset(squad_beir, tmp_path / "data", 30)
    encoder = _tiny_st_dir(shared_data, tmp_path / "tiny", 1)
    outputs = {name: tmp_path / name for name in ("lite", "server", "function")}
    common = [f"--data_dir={data}", f"--init_checkpoint={encoder}"]
    done = run_in_one_process(
        "run_retrieval",
        [
            [*common, f"--output_dir={outputs['lite']}", "--do_index", "--do_eval"],
            [
                *common,
                f"--output_dir={outputs['server']}",
                f"--milvus_uri={server}",
                "--milvus_collection=squad",
                "--do_index",
                "--do_eval",
            ],
            [
                *common,
                f"--output_dir={outputs['function']}",
                f"--milvus_uri={server}",
                "--milvus_collection=squad_bm25_function",
                "--retrieval_mode=hybrid",
                "--bm25_function",
                "--do_index",
                "--do_eval",
            ],
        ],
        tmp_path / "cli",
    )
    for result in done:
        assert result.returncode == 0, result.stderr[-4000:]
    lite = _read_results(outputs["lite"] / "eval_results.txt")
    assert _read_results(outputs["server"] / "eval_results.txt") == pytest.approx(
        lite, abs=1e-6
    )
    hybrid = _read_results(outputs["function"] / "eval_results.txt")
    assert hybrid["recall@10"] > 0.5  # Milvus's own BM25 beside the dense side
    stores = {}
    for name, uri, collection in (
        ("lite", str(outputs["lite"] / "index.db"), DEFAULT_COLLECTION),
        ("server", server, "squad"),
    ):
        with MilvusStore.existing(uri, collection) as store:
            stored, vectors = store.vectors()
            stores[name] = {
                p.id: (p.text, v) for p, v in zip(stored, vectors, strict=True)
            }
    assert stores["server"].keys() == stores["lite"].keys()
    for pid, (text, vector) in stores["lite"].items():
        assert stores["server"][pid][0] == text
        np.testing.assert_allclose(stores["server"][pid][1], vector, atol=1e-5)
