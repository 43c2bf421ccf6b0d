"""run_retrieval.py --do_index --runner on a real Milvus server (`milvus-lite
server`, tests/milvus_server.py), issue 60: two Beam workers write in
parallel (they failed with ``current_seq is monotonic``: concurrent
flushes); a run SIGKILLed midway keeps every batch it wrote; of two reruns
started at once one resumes, embedding only the rest, and the other is
refused in one line (`IndexLock`); the rows equal the one-process Milvus
Lite file's."""

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

from bert_tf.errors import UserInputError  # noqa: E402
from bert_tf.retrieval.index_lock import LOCK_PROPERTY  # noqa: E402
from bert_tf.retrieval.index_lock import IndexLock  # noqa: E402
from bert_tf.retrieval.indexing import INDEX_CHUNK  # noqa: E402
from bert_tf.retrieval.milvus_store import MilvusStore  # noqa: E402
from bert_tf.retrieval.vector_store import StoredPassage  # noqa: E402

# Paragraphs of the killed run (1,955 passages): four embedding batches of
# INDEX_CHUNK passages per worker, so that a kill after the first stored
# batch lands midway. MiniLM embeds a batch in about 3.5 s here; the tiny
# model embeds all of them within a second, before a kill can land.
KILL_DOCS = 400
_COUNTS = re.compile(
    r"Indexed (\d+) documents: (\d+) passages embedded, (\d+) already in the "
    r"store, (\d+) removed"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with milvus_server(tmp_path_factory.mktemp("beam_milvus_server")) as uri:
        yield uri


def _client(uri):
    """A connection as the tools make it: pymilvus's default keepalive
    pings (every 10 s) would get a GOAWAY "too_many_pings" from the server
    while the runs take minutes, and gRPC would share that refused
    connection with the test's later clients of the server."""
    from bert_tf.retrieval.milvus_connection import connect

    return connect(uri, "uri")


def _count(client, collection):
    if not client.has_collection(collection):
        return 0
    result = client.query(collection, filter="", output_fields=["count(*)"])
    return int(result[0]["count(*)"])


def _server_rows(uri, collection):
    """{passage id: (doc id, text hash, vector, text, title)}, as `_rows`."""
    with MilvusStore.existing(uri, collection) as store:
        passages, vectors = store.vectors()
        texts = store.rows_of([p.id for p in passages])
    return {
        p.id: (p.doc_id, p.text_hash, v, texts[p.id].text, texts[p.id].title)
        for p, v in zip(passages, vectors, strict=True)
    }


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


def test_killed_run_keeps_its_batches_and_of_two_reruns_one_resumes(
    server,
    squad_beir,  # noqa: F811
    minilm_dir,
    tmp_path,
):
    """Two Beam workers write in parallel (they failed with ``current_seq is
    monotonic``); SIGKILLed (driver and workers) once a batch is stored, the
    run keeps its rows. Then two reruns (two workers each) start at once:
    one takes over the killed run's lock and embeds only the passages not
    stored, the other is refused in one line (exit 2). The rows equal the
    one-process Lite file's (ids, documents, text hashes, texts, titles,
    vectors within 1e-5), and the lock is gone."""
    data = squad_subset(squad_beir, tmp_path / "data", KILL_DOCS)
    flags = (
        f"--data_dir={data}",
        f"--init_checkpoint={minilm_dir}",
        f"--milvus_uri={server}",
        "--milvus_collection=killed",
        *PASSAGES,
        "--do_index",
        "--runner=DirectRunner",
        f"--beam_options={TWO_WORKERS}",
    )
    client = _client(server)
    try:
        with open(tmp_path / "killed.log", "w") as log:
            process = _start((*flags, f"--output_dir={tmp_path / 'out'}"), log)
            try:
                deadline = time.time() + 300
                while process.poll() is None and time.time() < deadline:
                    if _count(client, "killed") >= INDEX_CHUNK:
                        break
                    time.sleep(0.05)
            finally:
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        time.sleep(0.5)  # a request sent before the kill may still be served
        kept = _count(client, "killed")
    finally:
        client.close()
    log_text = (tmp_path / "killed.log").read_text()
    assert process.returncode == -signal.SIGKILL, log_text[-3000:]

    reruns = []
    for name in ("a", "b"):
        log = open(tmp_path / f"{name}.log", "w")  # noqa: SIM115 (closed below)
        output = f"--output_dir={tmp_path / name}"
        reruns.append((_start((*flags, output), log), log, tmp_path / f"{name}.log"))
    # Meanwhile (two cores), the one-process rows.
    _one_process_index(data, minilm_dir, tmp_path / "one")
    expected = _rows(tmp_path / "one" / "index.db", in_child=False)
    results = []
    for rerun, log, path in reruns:
        rerun.wait(timeout=600)
        log.close()
        results.append((rerun.returncode, path.read_text()))
    assert INDEX_CHUNK <= kept < len(expected) - INDEX_CHUNK  # midway
    assert sorted(code for code, _ in results) == [0, 2], [
        text[-3000:] for _, text in results
    ]
    refused = next(text for code, text in results if code == 2)
    last = refused.strip().splitlines()[-1]
    assert "collection 'killed': another index run holds it" in last, last
    resumed = next(text for code, text in results if code == 0)
    assert "current_seq" not in log_text + resumed
    documents, embedded, kept_again, removed = _counts(resumed)
    assert (documents, kept_again, removed) == (KILL_DOCS, kept, 0)
    assert embedded == len(expected) - kept
    _assert_same_rows(_server_rows(server, "killed"), expected)
    client = _client(server)
    try:
        assert LOCK_PROPERTY not in client.describe_collection("killed")["properties"]
    finally:
        client.close()


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
