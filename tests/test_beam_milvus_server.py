"""run_retrieval.py --do_index --runner on a real Milvus server (`milvus-lite
server`, tests/milvus_server.py), issue 60: two Beam workers writing in
parallel store the one-process rows of the Milvus Lite file (they failed
with ``current_seq is monotonic``: concurrent flushes); a run SIGKILLed
midway keeps every batch it wrote and the rerun embeds only the rest; two
runs started at once on one collection: the second is refused in one line
(`IndexLock`)."""

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("apache_beam", reason="apache-beam ([beam] extra) is not installed")
pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")
pytestmark = pytest.mark.slow  # a server, Beam runs

from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from beir_fixtures import squad_subset  # noqa: E402
from cli_script import script_env  # noqa: E402
from milvus_server import milvus_server  # noqa: E402
from test_beam_corpus_indexing import PASSAGES  # noqa: E402
from test_beam_corpus_indexing import SCRIPT  # noqa: E402
from test_beam_corpus_indexing import TWO_WORKERS  # noqa: E402
from test_beam_corpus_indexing import _assert_same_rows  # noqa: E402
from test_beam_corpus_indexing import _one_process_index  # noqa: E402
from test_beam_corpus_indexing import _rows  # noqa: E402
from test_run_retrieval import _tiny_st_dir  # noqa: E402

from bert_tf.errors import UserInputError  # noqa: E402
from bert_tf.retrieval.index_lock import LOCK_PROPERTY  # noqa: E402
from bert_tf.retrieval.index_lock import IndexLock  # noqa: E402
from bert_tf.retrieval.indexing import INDEX_CHUNK  # noqa: E402
from bert_tf.retrieval.milvus_store import MilvusStore  # noqa: E402
from bert_tf.retrieval.vector_store import StoredPassage  # noqa: E402

# Paragraphs: several embedding batches of INDEX_CHUNK passages, so that a
# kill after the first stored batch lands midway.
NUM_DOCS = 150
_COUNTS = re.compile(
    r"Indexed (\d+) documents: (\d+) passages embedded, (\d+) already in the "
    r"store, (\d+) removed"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with milvus_server(tmp_path_factory.mktemp("beam_milvus_server")) as uri:
        yield uri


@pytest.fixture(scope="module")
def corpus(squad_beir, shared_data, tmp_path_factory):  # noqa: F811
    """(BEIR directory, tiny encoder, the one-process Lite file's rows)."""
    root = tmp_path_factory.mktemp("beam_server_corpus")
    data = squad_subset(squad_beir, root / "data", NUM_DOCS)
    encoder = _tiny_st_dir(shared_data, root / "tiny", 1)
    _one_process_index(data, encoder, root / "one")
    return data, encoder, _rows(root / "one" / "index.db", in_child=False)


def _client(uri):
    """A fresh connection (an idle one gets a GOAWAY from the server after
    the minutes the runs take: see test_milvus_server.py)."""
    from pymilvus import MilvusClient

    return MilvusClient(uri=uri, timeout=10)


def _count(uri, collection):
    client = _client(uri)
    try:
        if not client.has_collection(collection):
            return 0
        result = client.query(collection, filter="", output_fields=["count(*)"])
        return int(result[0]["count(*)"])
    finally:
        client.close()


def _server_rows(uri, collection):
    """{passage id: (doc id, text hash, vector, text, title)}, as `_rows`."""
    with MilvusStore.existing(uri, collection) as store:
        passages, vectors = store.vectors()
        texts = store.rows_of([p.id for p in passages])
    return {
        p.id: (p.doc_id, p.text_hash, v, texts[p.id].text, texts[p.id].title)
        for p, v in zip(passages, vectors, strict=True)
    }


def _flags(data, encoder, output, server, collection):
    return (
        f"--data_dir={data}",
        f"--output_dir={output}",
        f"--init_checkpoint={encoder}",
        f"--milvus_uri={server}",
        f"--milvus_collection={collection}",
        *PASSAGES,
        "--do_index",
        "--runner=DirectRunner",
        f"--beam_options={TWO_WORKERS}",
    )


def _start(flags, log):
    """The CLI in its own process group (its Beam workers too)."""
    return subprocess.Popen(
        [sys.executable, SCRIPT, *flags],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=script_env(),
        start_new_session=True,
    )


def _counts(stderr):
    found = _COUNTS.search(stderr)
    assert found, stderr[-3000:]
    return tuple(int(x) for x in found.groups())


def test_two_workers_killed_then_rerun_store_the_one_process_rows(
    server, corpus, tmp_path
):
    """Two workers write in parallel; SIGKILLed (driver and workers) once a
    batch is stored, the run keeps its rows; the rerun (two workers again)
    embeds only the others, and the rows equal the one-process Lite file's
    (ids, documents, text hashes, texts, titles, vectors within 1e-5)."""
    data, encoder, expected = corpus
    assert len(expected) > 3 * INDEX_CHUNK  # a kill after one batch is midway
    flags = _flags(data, encoder, tmp_path / "out", server, "killed")
    with open(tmp_path / "killed.log", "w") as log:
        process = _start(flags, log)
        try:
            deadline = time.time() + 300
            while process.poll() is None and time.time() < deadline:
                if _count(server, "killed") >= INDEX_CHUNK:
                    break
                time.sleep(0.1)
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    log_text = (tmp_path / "killed.log").read_text()
    assert process.returncode == -signal.SIGKILL, log_text[-3000:]
    assert "current_seq" not in log_text
    kept = _count(server, "killed")
    assert INDEX_CHUNK <= kept < len(expected)

    rerun = subprocess.run(
        [sys.executable, SCRIPT, *flags],
        capture_output=True,
        text=True,
        timeout=600,
        env=script_env(),
    )
    assert rerun.returncode == 0, rerun.stderr[-4000:]
    documents, embedded, kept_again, removed = _counts(rerun.stderr)
    assert (documents, kept_again, removed) == (NUM_DOCS, kept, 0)
    assert embedded == len(expected) - kept
    _assert_same_rows(_server_rows(server, "killed"), expected)


def test_two_runs_at_once_on_one_collection_the_second_is_refused(
    server, corpus, tmp_path
):
    """Two runs started together on a new collection: one stores the
    one-process rows, the other ends with one line naming the lock, exit 2;
    the lock is gone after."""
    data, encoder, expected = corpus
    processes = []
    for name in ("a", "b"):
        flags = _flags(data, encoder, tmp_path / name, server, "twice")
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 (closed below)
        processes.append((_start(flags, log), log, tmp_path / f"{name}.log"))
    results = []
    for process, log, path in processes:
        process.wait(timeout=600)
        log.close()
        results.append((process.returncode, path.read_text()))
    codes = sorted(code for code, _ in results)
    assert codes == [0, 2], [text[-3000:] for _, text in results]
    refused = next(text for code, text in results if code == 2)
    last = refused.strip().splitlines()[-1]
    assert "another index run holds it" in last and "'twice'" in last, last
    _assert_same_rows(_server_rows(server, "twice"), expected)
    client = _client(server)
    try:
        properties = client.describe_collection("twice").get("properties", {})
    finally:
        client.close()
    assert LOCK_PROPERTY not in properties


def test_index_lock_refuses_a_live_holder_and_takes_over_a_dead_one(server):
    rows = [StoredPassage("p0", "d0", "h0", "text", "")]
    with MilvusStore(server, "locked", 4, "model-a") as store:
        store.upsert(rows, np.ones((1, 4), np.float32))
    with IndexLock(server, "locked", settle=0.2):
        with pytest.raises(UserInputError, match=r"'locked': another index run"):
            IndexLock(server, "locked", settle=0.2).acquire()
    client = _client(server)
    try:
        assert LOCK_PROPERTY not in client.describe_collection("locked")["properties"]
        # A SIGKILLed run's lock: its process is gone.
        dead = subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"],
            capture_output=True,
            text=True,
            check=True,
        )
        holder = {
            "token": "killed",
            "host": socket.gethostname(),
            "pid": int(dead.stdout),
            "since": time.time(),
            "renewed": time.time(),
        }
        client.alter_collection_properties(
            "locked", properties={LOCK_PROPERTY: json.dumps(holder)}
        )
        with IndexLock(server, "locked", settle=0.2):
            held = json.loads(
                client.describe_collection("locked")["properties"][LOCK_PROPERTY]
            )
            assert held["pid"] == os.getpid()
        # Another host's lock not renewed for longer than `stale`.
        holder |= {"host": "elsewhere", "renewed": time.time() - 10}
        client.alter_collection_properties(
            "locked", properties={LOCK_PROPERTY: json.dumps(holder)}
        )
        with pytest.raises(UserInputError, match="process .* on elsewhere"):
            IndexLock(server, "locked", stale=60).acquire()
        with IndexLock(server, "locked", stale=5, settle=0.2):
            pass
    finally:
        client.close()
