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
import itertools
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
from beir_fixtures import write_jsonl  # noqa: E402
from cli_one_process import run_in_one_process  # noqa: E402
from cli_script import REPO  # noqa: E402
from cli_script import run_script  # noqa: E402
from cli_script import script_env  # noqa: E402
from test_run_retrieval import _tiny_st_dir  # noqa: E402

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.options import RetrievalOptions  # noqa: E402
from bert_tf.options import RunOptions  # noqa: E402

SCRIPT = os.path.join(REPO, "run_retrieval.py")
TWO_WORKERS = "--direct_num_workers=2 --direct_running_mode=multi_processing"
NUM_DOCS = 30
# Paragraphs of the killed run: thousands of passages, many staging files.
KILL_DOCS = 600
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


def _beam_index(
    data_dir, encoder_dir, output_dir, corpus_glob=None, beam_options=TWO_WORKERS
):
    corpus = [f"--corpus_file={corpus_glob}"] if corpus_glob else []
    result = run_script(
        SCRIPT,
        f"--data_dir={data_dir}",
        f"--output_dir={output_dir}",
        f"--init_checkpoint={encoder_dir}",
        *PASSAGES,
        "--do_index",
        *corpus,
        "--runner=DirectRunner",
        f"--beam_options={beam_options}",
        timeout=600,
    )
    found = re.search(
        r"Indexed (\d+) documents: (\d+) passages embedded, (\d+) already in the "
        r"store, (\d+) removed",
        result.stderr,
    )
    assert found, result.stderr[-3000:]
    staged = re.search(r"(\d+) stored from an interrupted run", result.stderr)
    if staged and int(staged.group(1)):
        return (*(int(x) for x in found.groups()), int(staged.group(1)))
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


@pytest.mark.slow  # starts processes
def test_runner_flags_are_checked(small_beir, tmp_path):
    base = [
        f"--data_dir={small_beir}",
        f"--output_dir={tmp_path}",
        f"--init_checkpoint={tmp_path}",  # exists; never read
    ]
    modes = ("--retrieval_mode=hybrid", "--vector_type=int8")
    # The four runs one after another in one process (TensorFlow imported once).
    evaluate, *others, corpus = run_in_one_process(
        "run_retrieval",
        [
            [*base, "--do_index", "--do_eval", "--runner=DirectRunner"],
            *([*base, "--do_index", mode, "--runner=DirectRunner"] for mode in modes),
            [*base, "--do_index", "--corpus_file=x*"],
        ],
        tmp_path / "cli",
    )
    assert evaluate.returncode == 2
    assert "--runner" in evaluate.stderr.strip().splitlines()[-1]
    for mode, other in zip(modes, others, strict=True):
        assert other.returncode == 2
        assert mode in other.stderr.strip().splitlines()[-1]
    assert corpus.returncode == 2
    assert "--corpus_file needs --runner" in corpus.stderr.strip().splitlines()[-1]


def _write_beir(directory, documents):
    os.makedirs(directory)
    write_jsonl(
        os.path.join(directory, "corpus.jsonl"),
        [d._asdict() | {"_id": d.id} for d in documents],
    )
    write_jsonl(os.path.join(directory, "queries.jsonl"), [{"_id": "q", "text": "x"}])
    return str(directory)


@pytest.mark.slow
@pytest.mark.parametrize("with_vocab_txt", [False, True])
def test_beam_cuts_passages_with_the_towers_tokenizer_settings(
    squad_beir,  # noqa: F811
    minilm_dir,
    tmp_path,
    with_vocab_txt,
):
    """MiniLM saved by sentence-transformers with a tokenizer.json that keeps
    accents (strip_accents=False), alone or beside vocab.txt: Beam cuts
    accented SQuAD paragraphs with those settings, as the one-process
    --do_index does, and stores the same rows."""
    transformers = pytest.importorskip("transformers")
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from bert_tf.text import tokenization
    from bert_tf.text.tokenizer_json import read_tokenizer_files

    encoder = tmp_path / "minilm_accents"
    sentence_transformers.SentenceTransformer(minilm_dir, device="cpu").save(
        str(encoder)
    )
    transformers.AutoTokenizer.from_pretrained(
        minilm_dir, strip_accents=False
    ).save_pretrained(str(encoder))
    vocab_txt = encoder / "vocab.txt"
    if with_vocab_txt:
        shutil.copy(os.path.join(minilm_dir, "vocab.txt"), vocab_txt)
    elif os.path.exists(vocab_txt):  # transformers 5 writes none
        os.remove(vocab_txt)
    files = read_tokenizer_files(str(encoder))
    assert files.strip_accents is False
    assert files.vocab_file.endswith("vocab.txt" if with_vocab_txt else ".json")

    # Paragraphs the settings cut otherwise than the vocabulary's defaults
    # (lower-casing strips accents), and a few they cut alike.
    settings = tokenization.FullTokenizer(files.vocab_file, True, strip_accents=False)
    defaults = tokenization.FullTokenizer(files.vocab_file, True, strip_accents=True)

    def cut(tokenizer, documents):
        count = lambda word: len(tokenizer.tokenize(word)) or 1  # noqa: E731
        return beir.split_passages({d.id: d for d in documents}, count, 48, 24)

    squad = list(beir.read_corpus(squad_beir).values())
    # The first 8 that differ (no need to cut the rest of the corpus).
    differ = list(
        itertools.islice(
            (d for d in squad if cut(settings, [d]) != cut(defaults, [d])), 8
        )
    )
    documents = differ[:8] + squad[:4]
    assert len(differ) >= 8
    data = _write_beir(tmp_path / "accented", documents)

    _beam_index(data, str(encoder), tmp_path / "beam", beam_options="")
    _one_process_index(data, str(encoder), tmp_path / "one")
    expected = _rows(tmp_path / "one" / "index.db", in_child=False)
    from bert_tf.retrieval.indexing import text_hash

    assert {pid: row[1] for pid, row in expected.items()} == {
        p.id: text_hash(p.text) for p in cut(settings, documents)
    }
    _assert_same_rows(_rows(tmp_path / "beam" / "index.db"), expected)


def _start_killable(*flags, log):
    """The CLI in its own process group (its Beam workers too)."""
    return subprocess.Popen(
        [sys.executable, SCRIPT, *flags],
        stdout=subprocess.DEVNULL,
        stderr=log,
        env=script_env(),
        start_new_session=True,
    )


@pytest.mark.slow
def test_killed_lite_run_keeps_its_staged_batches_and_the_rerun_stores_them(
    squad_beir,  # noqa: F811
    encoder_dir,
    tmp_path,
):
    """A Milvus Lite run killed (SIGKILL, workers and all) while it embeds
    keeps the staging files of the batches it finished; the rerun embeds only
    the other passages, stores the staged ones, and the rows equal one
    uninterrupted --do_index."""
    import signal
    import time

    from bert_tf.beam import staging

    data = squad_subset(squad_beir, tmp_path / "data", KILL_DOCS)
    output = tmp_path / "beam"
    flags = (
        f"--data_dir={data}",
        f"--output_dir={output}",
        f"--init_checkpoint={encoder_dir}",
        *PASSAGES,
        "--do_index",
        "--runner=DirectRunner",
    )
    staged_dir = output / staging.STAGING_DIR
    with open(tmp_path / "killed.log", "w") as log:
        process = _start_killable(*flags, log=log)
        try:
            deadline = time.time() + 600
            files = []
            while len(files) < 2 and process.poll() is None and time.time() < deadline:
                time.sleep(0.2)
                files = list(staged_dir.glob("*/*.npz"))
        finally:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == -signal.SIGKILL, (tmp_path / "killed.log").read_text()
    (directory,) = staged_dir.iterdir()
    staged = staging.staged_passages(str(directory))
    assert len(staged) >= 2 * 256  # two whole batches at least

    documents, embedded, kept, removed, from_staging = _beam_index(
        data, encoder_dir, output, beam_options=""
    )
    assert not staged_dir.exists()  # stored, then deleted
    _one_process_index(data, encoder_dir, tmp_path / "one")
    expected = _rows(tmp_path / "one" / "index.db", in_child=False)
    # The kill came before the writer: nothing was stored, every staged
    # passage is stored from its staging file, the others embedded.
    assert (documents, kept, removed) == (KILL_DOCS, 0, 0)
    assert from_staging == len(staged)
    assert embedded + from_staging == len(expected)
    _assert_same_rows(_rows(output / "index.db"), expected)
