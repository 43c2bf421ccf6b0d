"""run_retrieval.py --do_index --runner: a BEIR corpus into Milvus Lite through Beam.

Real Beam (DirectRunner, two worker processes) and a real Milvus Lite file:
the rows the pipeline stores equal those of the one-process --do_index
(same passage ids, documents and text hashes, vectors within 1e-5), with the
corpus given as gzipped shards; a rerun after the corpus changed embeds only
the new and changed passages and deletes the removed ones.
"""

import contextlib
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("apache_beam", reason="apache-beam ([beam] extra) is not installed")
pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")

from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from beir_fixtures import squad_subset  # noqa: E402
from cli_script import REPO  # noqa: E402
from cli_script import run_script  # noqa: E402
from test_run_retrieval import _tiny_st_dir  # noqa: E402

from bert_tf.options import RetrievalOptions  # noqa: E402
from bert_tf.options import RunOptions  # noqa: E402

SCRIPT = os.path.join(REPO, "run_retrieval.py")
TWO_WORKERS = "--direct_num_workers=2 --direct_running_mode=multi_processing"
NUM_DOCS = 30
PASSAGES = ("--passage_length=48", "--passage_stride=24")


@pytest.fixture(scope="module")
def small_beir(squad_beir, tmp_path_factory):  # noqa: F811
    return squad_subset(squad_beir, tmp_path_factory.mktemp("beam_beir"), NUM_DOCS)


@pytest.fixture(scope="module")
def encoder_dir(shared_data, tmp_path_factory):
    return _tiny_st_dir(shared_data, tmp_path_factory.mktemp("tiny_st") / "st", 1)


_READ_ROWS = """
import json
from pymilvus import MilvusClient
client = MilvusClient({db!r})
client.load_collection("bert_tf")
rows = client.query("bert_tf", filter='id != ""',
                    output_fields=["id", "doc_id", "text_hash", "vector", "text",
                                   "title"],
                    limit=16384)
client.close()
print(json.dumps([[r["id"], r["doc_id"], r["text_hash"],
                   [float(x) for x in r["vector"]], r["text"], r["title"]]
                  for r in rows]))
"""


def _rows(db, in_child=True):
    """{passage id: (doc id, text hash, vector, text, title)} of a Lite file. Read in a
    child process unless this one has it open already: a Lite file stays held
    by the process that opened it, and the pipeline's writer must open it."""
    code = _READ_ROWS.format(db=str(db))
    if in_child:
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        text = result.stdout
    else:
        output = io.StringIO()
        with contextlib.redirect_stdout(output):
            exec(code, {})
        text = output.getvalue()
    rows = json.loads(text.strip().splitlines()[-1])
    return {r[0]: (r[1], r[2], np.array(r[3], np.float32), r[4], r[5]) for r in rows}


def _assert_same_rows(actual, expected):
    assert sorted(actual) == sorted(expected)
    for pid, (doc, text_hash, vector, text, title) in expected.items():
        assert actual[pid][:2] == (doc, text_hash), pid
        np.testing.assert_allclose(actual[pid][2], vector, atol=1e-5, rtol=0)
        # Issue 45: the Beam rows keep the passage's text and title too.
        assert actual[pid][3:] == (text, title) and text, pid


def _gzip_shards(corpus_lines, directory, num_shards):
    os.makedirs(directory, exist_ok=True)
    for shard in range(num_shards):
        path = os.path.join(directory, f"part-{shard}.jsonl.gz")
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.writelines(corpus_lines[shard::num_shards])
    return os.path.join(directory, "part-*.jsonl.gz")


def _one_process_index(data_dir, encoder_dir, output_dir):
    from bert_tf.tasks import retrieval

    run = RunOptions(
        output_dir=str(output_dir),
        init_checkpoint=encoder_dir,
        do_lower_case=None,
        max_seq_length=None,
        do_predict=True,  # --do_index
    )
    options = RetrievalOptions(data_dir=data_dir, passage_length=48, passage_stride=24)
    return retrieval.run(run, options)


def _beam_index(data_dir, encoder_dir, output_dir, corpus_glob):
    result = run_script(
        SCRIPT,
        f"--data_dir={data_dir}",
        f"--output_dir={output_dir}",
        f"--init_checkpoint={encoder_dir}",
        *PASSAGES,
        "--do_index",
        f"--corpus_file={corpus_glob}",
        "--runner=DirectRunner",
        f"--beam_options={TWO_WORKERS}",
        timeout=600,
    )
    found = re.search(
        r"Indexed (\d+) documents: (\d+) passages embedded, (\d+) already in the "
        r"store, (\d+) removed",
        result.stderr,
    )
    assert found, result.stderr[-3000:]
    return tuple(int(x) for x in found.groups())


@pytest.mark.slow
def test_beam_index_equals_one_process_and_rerun_embeds_changes(
    small_beir, encoder_dir, tmp_path
):
    with open(os.path.join(small_beir, "corpus.jsonl"), encoding="utf-8") as f:
        lines = f.readlines()
    shards = _gzip_shards(lines, tmp_path / "shards", 3)
    beam_out = tmp_path / "beam"
    documents, embedded, kept, removed = _beam_index(
        small_beir, encoder_dir, beam_out, shards
    )
    _one_process_index(small_beir, encoder_dir, tmp_path / "one")
    expected = _rows(tmp_path / "one" / "index.db", in_child=False)
    assert (documents, embedded, kept, removed) == (NUM_DOCS, len(expected), 0, 0)
    assert len(expected) > NUM_DOCS  # long paragraphs were cut into passages
    _assert_same_rows(_rows(beam_out / "index.db"), expected)

    # The corpus changes: one document edited, one removed, one added.
    docs = [json.loads(line) for line in lines]
    docs[0]["text"] = "An edited paragraph about the Super Bowl."
    gone = docs.pop(1)
    docs.append({"_id": "new-doc", "title": "", "text": "A new short paragraph."})
    changed = [json.dumps(d) + "\n" for d in docs]
    shards = _gzip_shards(changed, tmp_path / "shards2", 2)
    data2 = tmp_path / "data2"
    os.makedirs(data2)
    with open(data2 / "corpus.jsonl", "w", encoding="utf-8") as f:
        f.writelines(changed)
    shutil.copy(os.path.join(small_beir, "queries.jsonl"), data2)
    again = _beam_index(data2, encoder_dir, beam_out, shards)
    old_ids = set(expected)
    gone_ids = {pid for pid, row in expected.items() if row[0] == gone["_id"]}
    edited_ids = {pid for pid, row in expected.items() if row[0] == docs[0]["_id"]}
    # The edited document is now one passage, whose id is the document's: its
    # old passages are deleted unless one had that id (then it is replaced).
    assert again == (
        NUM_DOCS,
        2,
        len(old_ids) - len(gone_ids) - len(edited_ids),
        len(gone_ids) + len(edited_ids - {docs[0]["_id"]}),
    )
    _one_process_index(str(data2), encoder_dir, tmp_path / "one2")
    _assert_same_rows(
        _rows(beam_out / "index.db"),
        _rows(tmp_path / "one2" / "index.db", in_child=False),
    )


def test_runner_flags_are_checked(small_beir, tmp_path):
    base = [
        f"--data_dir={small_beir}",
        f"--output_dir={tmp_path}",
        f"--init_checkpoint={tmp_path}",  # exists; never read
    ]
    evaluate = run_script(
        SCRIPT, *base, "--do_index", "--do_eval", "--runner=DirectRunner", check=False
    )
    assert evaluate.returncode == 2
    assert "--runner" in evaluate.stderr.strip().splitlines()[-1]
    corpus = run_script(SCRIPT, *base, "--do_index", "--corpus_file=x*", check=False)
    assert corpus.returncode == 2
    assert "--corpus_file needs --runner" in corpus.stderr.strip().splitlines()[-1]
