"""run_retrieval.py end to end on SQuAD-as-BEIR: Milvus Lite for real, sentence-transformers as reference."""

import dataclasses
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
from beir_fixtures import write_jsonl  # noqa: E402
from cli_script import REPO  # noqa: E402
from cli_script import run_script  # noqa: E402
from cli_script import script_env  # noqa: E402

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.errors import UserInputError  # noqa: E402
from bert_tf.metrics.retrieval import retrieval_metrics  # noqa: E402
from bert_tf.options import RetrievalOptions  # noqa: E402
from bert_tf.options import RunOptions  # noqa: E402
from bert_tf.options import TrainingOptions  # noqa: E402
from bert_tf.options.run_identity import stop_if_other_run  # noqa: E402

SCRIPT = os.path.join(REPO, "run_retrieval.py")
NUM_DOCS = 40


@pytest.fixture(scope="module")
def small_beir(squad_beir, tmp_path_factory):  # noqa: F811
    """The first 40 paragraphs of SQuAD dev (Super Bowl 50) as BEIR: every
    third question in qrels/test.tsv, the others in qrels/train.tsv."""
    return squad_subset(squad_beir, tmp_path_factory.mktemp("small_beir"), NUM_DOCS)


def _tiny_st_dir(shared_data, directory, seed):
    """A tiny random sentence encoder written as a sentence-transformers directory."""
    import keras
    from tiny_models import tiny_bert_config

    from bert_tf.models.bert_sentence_encoder import BertSentenceEncoder
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(seed)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    model = BertSentenceEncoder(
        tiny_bert_config(30522, max_position_embeddings=64, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 64, padding="longest"),
        pooling="mean",
        normalize=True,
    )
    model.save_sentence_transformers(directory)
    return str(directory)


@pytest.fixture(scope="module")
def tiny_encoders(shared_data, tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny_st")
    return [_tiny_st_dir(shared_data, root / f"seed{s}", s) for s in (1, 2)]


def _read_run(path):
    run = {}
    for line in open(path):
        qid, q0, doc_id, rank, score, name = line.split()
        assert q0 == "Q0" and name == "bert_tf"
        run.setdefault(qid, []).append((doc_id, int(rank), float(score)))
    for rows in run.values():
        assert [r for _, r, _ in rows] == list(range(1, len(rows) + 1))
        assert len({d for d, _, _ in rows}) == len(rows)  # documents, not passages
        scores = [s for _, _, s in rows]
        assert scores == sorted(scores, reverse=True)
    return run


def _read_results(path):
    lines = open(path).read().splitlines()
    return {k: float(v) for k, v in (line.split(" = ") for line in lines)}


def test_options_are_checked_before_tensorflow(tmp_path):
    (tmp_path / "corpus.jsonl").write_text('{"_id": "d", "text": "a"}\n')

    def options(**kwargs):
        return RetrievalOptions(data_dir=str(tmp_path), **kwargs)

    def run(**kwargs):
        return RunOptions(output_dir=str(tmp_path), do_lower_case=None, **kwargs)

    with pytest.raises(UserInputError, match="At least one of --do_train"):
        options().check(run())
    with pytest.raises(UserInputError, match="--passage_stride=9: must be at most"):
        options(passage_length=8, passage_stride=9)
    with pytest.raises(UserInputError, match="--hard_negatives=-1"):
        options(hard_negatives=-1)
    with pytest.raises(UserInputError, match="--data_dir=.*: not a directory"):
        RetrievalOptions(data_dir=str(tmp_path / "missing"))
    with pytest.raises(UserInputError, match="--rerank_checkpoint: needs --do_eval"):
        options(rerank_checkpoint=str(tmp_path)).check(run(do_predict=True))
    with pytest.raises(UserInputError, match="--bm25_function: Milvus's BM25"):
        options(retrieval_mode="hybrid", bm25_function=True)
    with pytest.raises(UserInputError, match="--rescore_k=10: rescoring needs"):
        options(rescore_k=10)
    with pytest.raises(UserInputError, match="--fusion=max: expected one of"):
        options(fusion="max")
    with pytest.raises(UserInputError, match="--bm25_b=2.0: k1 must be"):
        options(bm25_b=2.0)
    (tmp_path / "empty").mkdir()
    with pytest.raises(UserInputError, match="--data_dir=.*: no corpus.jsonl"):
        RetrievalOptions(data_dir=str(tmp_path / "empty"))
    with pytest.raises(UserInputError, match="--milvus_uri=.*: a Milvus Lite file"):
        options(milvus_uri=str(tmp_path / "index.txt"))
    with pytest.raises(UserInputError, match="--init_checkpoint: .* does not exist"):
        options().check(run(do_eval=True, init_checkpoint=str(tmp_path / "nothing")))
    assert options().uri(str(tmp_path)) == os.path.join(str(tmp_path), "index.db")
    hnsw = options(index_type="HNSW", hnsw_ef=16, eval_top_k=100)
    assert hnsw.search_params() == {"ef": 100}
    # Issue 50: IVF_FLAT's defaults over a small corpus, with the numbers.
    ivf = options(index_type="IVF_FLAT")
    assert ivf.recall_warning(30).startswith(
        "IVF_FLAT nlist=128 over 30 passages: each query searches 16 of 128 lists"
    )
    assert ivf.recall_warning(39 * 128) is None
    assert options(index_type="IVF_FLAT", ivf_nprobe=128).recall_warning(30) is None
    assert options().recall_warning(30) is None  # FLAT


@pytest.mark.slow
def test_zero_shot_minilm_equals_sentence_transformers(
    small_beir, minilm_dir, tmp_path
):
    st = pytest.importorskip("sentence_transformers", reason="test extra")
    from bert_tf.tasks import retrieval

    run = RunOptions(
        output_dir=str(tmp_path),
        init_checkpoint=minilm_dir,
        do_lower_case=None,
        max_seq_length=None,
        do_predict=True,  # --do_index
        do_eval=True,
    )
    run_options = run
    ours = retrieval.run(run, RetrievalOptions(data_dir=small_beir))
    run = _read_run(tmp_path / "run.tsv")

    # The reference: sentence-transformers embeddings + exact inner product.
    corpus = beir.read_corpus(small_beir)
    queries = beir.read_queries(small_beir)
    qrels = beir.read_qrels(small_beir, "test")
    # The same passages (paragraphs over 254 word pieces are cut in two), each
    # document scored by its best passage.
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(minilm_dir, "vocab.txt"), True)
    passages = beir.split_passages(
        corpus, lambda w: len(tokenizer.tokenize(w)) or 1, 254, 127
    )
    model = st.SentenceTransformer(minilm_dir, device="cpu")
    p_vec = model.encode([p.text for p in passages], normalize_embeddings=False)
    q_vec = model.encode([queries[q].text for q in qrels], normalize_embeddings=False)
    reference = {}
    for q, s in zip(qrels, q_vec @ p_vec.T, strict=True):
        best = {}
        for passage, score in zip(passages, s, strict=True):
            best[passage.doc_id] = max(best.get(passage.doc_id, -np.inf), float(score))
        reference[q] = best
    expected = retrieval_metrics(qrels, reference)
    for name in ("recall@1", "recall@10", "mrr@10", "ndcg@10"):
        assert ours[name] == pytest.approx(expected[name], abs=1.01 / len(qrels)), name
    same_top = np.mean(
        [run[q][0][0] == max(reference[q], key=reference[q].get) for q in qrels]
    )
    assert same_top >= 0.98
    assert ours["recall@10"] > 0.8  # a real model on real questions
    assert _read_results(tmp_path / "eval_results.txt")["num_queries"] == len(qrels)
    # --eval_backend=milvus searches the Milvus Lite collection itself: the
    # same documents (FLAT is exact) as the copy --eval_backend=auto searched.
    milvus = retrieval.run(
        dataclasses.replace(run_options, do_predict=False),
        RetrievalOptions(data_dir=small_beir, eval_backend="milvus"),
    )
    searched = _read_run(tmp_path / "run.tsv")
    assert {q: [d for d, _, _ in rows] for q, rows in searched.items()} == {
        q: [d for d, _, _ in rows] for q, rows in run.items()
    }
    for name in ("recall@1", "recall@10", "mrr@10"):
        assert milvus[name] == pytest.approx(ours[name], abs=1e-6)


@pytest.mark.slow
def test_cli_index_rerun_update_eval_export(small_beir, tiny_encoders, tmp_path):
    import tensorflow as tf

    data = tmp_path / "data"
    os.makedirs(data / "qrels")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        with open(os.path.join(small_beir, name)) as f:
            (data / name).write_text(f.read())
    out = tmp_path / "out"
    common = [
        f"--data_dir={data}",
        f"--output_dir={out}",
        f"--init_checkpoint={tiny_encoders[0]}",
        "--passage_length=48",
        "--passage_stride=24",
    ]
    first = run_script(
        SCRIPT, *common, "--do_index", "--do_eval", f"--export_dir={tmp_path / 'sm'}"
    )
    corpus = beir.read_corpus(str(data))
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(os.path.join(tiny_encoders[0], "vocab.txt"), True)
    passages = beir.split_passages(
        corpus, lambda w: len(tokenizer.tokenize(w)) or 1, 48, 24
    )
    assert len(passages) > len(corpus)  # long paragraphs were cut
    assert f"0 passages already in the store, {len(passages)} to embed" in first.stderr
    results = _read_results(out / "eval_results.txt")
    assert list(results) == [
        "recall@1",
        "recall@5",
        "recall@10",
        "recall@100",
        "mrr@10",
        "ndcg@10",
        "num_queries",
    ]
    run = _read_run(out / "run.tsv")
    qrels = beir.read_qrels(str(data), "test")
    assert set(run) == set(qrels) and all(len(r) == NUM_DOCS for r in run.values())
    # The metrics are those of run.tsv.
    recomputed = retrieval_metrics(
        qrels, {q: {d: s for d, _, s in r} for q, r in run.items()}
    )
    assert recomputed["mrr@10"] == pytest.approx(results["mrr@10"])

    # The SavedModel answers as the Milvus FLAT path did.
    queries = beir.read_queries(str(data))
    some = list(qrels)[:20]
    loaded = tf.saved_model.load(str(tmp_path / "sm" / "1"))
    found = loaded.signatures["serving_default"](
        query=tf.constant([queries[q].text for q in some]), top_k=tf.constant(10)
    )
    ids = found["ids"].numpy().astype(str)
    assert ids.shape == (20, 10)
    for row, q in enumerate(some):
        assert list(ids[row]) == [d for d, _, _ in run[q][:10]]
        np.testing.assert_allclose(
            found["scores"].numpy()[row], [s for _, _, s in run[q][:10]], atol=1e-4
        )
    embeddings = loaded.signatures["query_embedding"](query=tf.constant(["who won?"]))
    assert embeddings["embeddings"].shape == (1, 32)

    # Rerun: nothing to embed, no duplicates.
    again = run_script(SCRIPT, *common, "--do_index")
    assert f"{len(passages)} passages already in the store, 0 to embed" in again.stderr
    # Reading the stored rows (a query iterator) logs nothing of Milvus Lite's
    # or pymilvus's own: Lite lacks AllocTimestamp, which pymilvus survives.
    for line in again.stderr.splitlines():
        assert "Traceback" not in line and "mvccTs" not in line, line
    # One document changed, one added, one removed: only those are touched.
    docs = [json.loads(line) for line in open(data / "corpus.jsonl")]
    docs[0]["text"] = "Denver won the game."  # one passage now
    removed = docs.pop(1)
    docs.append({"_id": "new_doc", "title": "", "text": "A new short document."})
    write_jsonl(data / "corpus.jsonl", docs)
    with open(data / "qrels/test.tsv") as f:
        kept = [line for line in f if f"\t{removed['_id']}\t" not in line]
    (data / "qrels/test.tsv").write_text("".join(kept))
    updated = run_script(SCRIPT, *common, "--do_index", "--do_eval")
    new_corpus = beir.read_corpus(str(data))
    new_passages = beir.split_passages(
        new_corpus, lambda w: len(tokenizer.tokenize(w)) or 1, 48, 24
    )
    unchanged = len(
        [p for p in new_passages if p.doc_id not in (docs[0]["_id"], "new_doc")]
    )
    assert f"{unchanged} passages already in the store, 2 to embed" in updated.stderr
    assert sorted(_stored_ids(out)) == sorted(p.id for p in new_passages)

    # Another model cannot write into (or search) this index: one line, exit 2.
    other = run_script(
        SCRIPT,
        *common[:2],
        f"--init_checkpoint={tiny_encoders[1]}",
        "--do_eval",
        check=False,
    )
    assert other.returncode == 2
    # One error line (Milvus Lite's own shutdown log may follow it).
    errors = [
        line for line in other.stderr.splitlines() if line.startswith("run_retrieval:")
    ]
    assert len(errors) == 1 and errors[0].startswith(
        "run_retrieval: error: --milvus_uri="
    )
    assert "indexed with another model" in errors[0]


def _stored_ids(out):
    """The passage ids stored in out/index.db, whatever model filled it, read
    in a child process (a Milvus Lite file is open to one process at a time)."""
    code = textwrap.dedent(
        f"""
        import json
        from pymilvus import MilvusClient
        client = MilvusClient({str(out / "index.db")!r})
        client.load_collection("bert_tf")
        rows = client.query("bert_tf", filter='id != ""', output_fields=["id"], limit=16384)
        print(json.dumps([r["id"] for r in rows]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_killed_indexing_resumes(small_beir, tiny_encoders, tmp_path):
    child = textwrap.dedent(
        f"""
        import time
        from bert_tf.data_prep import beir
        from bert_tf.options import RetrievalOptions, RunOptions
        from bert_tf.retrieval import indexing
        from bert_tf.tasks import retrieval

        indexing.INDEX_CHUNK = 16
        options = RetrievalOptions(data_dir={small_beir!r})
        run = RunOptions(output_dir={str(tmp_path)!r}, init_checkpoint={tiny_encoders[0]!r},
                         do_lower_case=None, max_seq_length=None, do_predict=True)
        towers = retrieval.load_dual_encoder(run, options)
        passages = indexing.passages_of(beir.read_corpus({small_beir!r}), towers)
        store = retrieval.open_store(options, towers, {str(tmp_path)!r})
        upsert = store.upsert

        def slow_upsert(rows, vectors):
            upsert(rows, vectors)
            print("wrote", len(rows), flush=True)
            time.sleep(1.0)

        store.upsert = slow_upsert
        indexing.index_corpus(towers, passages, store)
        """
    )
    process = subprocess.Popen(
        [sys.executable, "-c", child],
        stdout=subprocess.PIPE,
        text=True,
        env=script_env(),
    )
    written = 0
    while written < 2:  # two chunks durably written (the progress bar aside)
        line = process.stdout.readline()
        assert line, "the indexing child ended early"
        written += line.startswith("wrote")
    process.kill()
    process.wait()

    from bert_tf.data_prep import beir as beir_module
    from bert_tf.retrieval import indexing
    from bert_tf.tasks import retrieval

    options = RetrievalOptions(data_dir=small_beir)
    run = RunOptions(
        output_dir=str(tmp_path),
        init_checkpoint=tiny_encoders[0],
        do_lower_case=None,
        max_seq_length=None,
        do_predict=True,
    )
    towers = retrieval.load_dual_encoder(run, options)
    passages = indexing.passages_of(beir_module.read_corpus(small_beir), towers)
    with retrieval.open_store(options, towers, str(tmp_path)) as store:
        counts = indexing.index_corpus(towers, passages, store)
        assert (
            counts["kept"] >= 32
            and counts["embedded"] == len(passages) - counts["kept"]
        )
        assert sorted(store.stored_passages()) == sorted(p.id for p in passages)
    # The resumed index holds exactly the vectors of a clean run.
    clean = towers.encode_documents([p.text for p in passages])
    order = {p.id: i for i, p in enumerate(passages)}
    with retrieval.open_store(options, towers, str(tmp_path)) as store:
        stored, vectors = store.vectors()
    np.testing.assert_allclose(vectors, clean[[order[p.id] for p in stored]], atol=1e-5)


@pytest.mark.slow
def test_training_separate_towers_with_hard_negatives(
    small_beir, tiny_encoders, tmp_path
):
    """run_retrieval's --do_train --noshared_towers --hard_negatives=2, then
    --do_index --do_eval, in process: better than the zero-shot towers."""
    from bert_tf.tasks import retrieval

    def run(output_dir, **kwargs):
        return retrieval.run(
            RunOptions(
                output_dir=str(output_dir),
                init_checkpoint=tiny_encoders[0],
                do_lower_case=None,
                max_seq_length=None,
                do_predict=True,  # --do_index
                do_eval=True,
                **kwargs,
            ),
            RetrievalOptions(
                data_dir=small_beir,
                eval_split="train",
                shared_towers=False,
                hard_negatives=2,
            ),
        )

    before = run(tmp_path / "zero")
    after = run(
        tmp_path / "tuned",
        do_train=True,
        training=TrainingOptions(
            train_batch_size=16,
            learning_rate=1e-3,
            num_train_epochs=3,
            optimizer="adamw",
        ),
    )
    assert after["mrr@10"] > before["mrr@10"] + 0.05, (before, after)
    assert _read_results(tmp_path / "tuned" / "eval_results.txt")[
        "mrr@10"
    ] == pytest.approx(after["mrr@10"])
    for tower in ("query_encoder", "document_encoder"):
        assert os.path.isfile(tmp_path / "tuned" / tower / "model.safetensors")
    assert os.listdir(tmp_path / "tuned" / "tensorboard" / "train")


@pytest.mark.slow
def test_interrupted_training_resumes_where_it_stopped(
    small_beir, tiny_encoders, tmp_path, monkeypatch
):
    """Killed after its step-2 checkpoint, the rerun resumes at step 2 and ends
    with the towers of an uninterrupted run, bit for bit (a mined hard
    negative per query; in-process, a tiny encoder, 4 steps)."""
    import tensorflow as tf

    from bert_tf.retrieval.dual_encoder import DualEncoder
    from bert_tf.tasks import retrieval
    from bert_tf.training.trainer import Trainer

    options = RetrievalOptions(
        data_dir=small_beir,
        passage_length=48,
        passage_stride=24,
        hard_negatives=1,
    )

    def run_for(output_dir):
        return RunOptions(
            output_dir=str(output_dir),
            init_checkpoint=tiny_encoders[0],
            do_lower_case=None,
            max_seq_length=None,
            do_train=True,
            training=TrainingOptions(
                train_batch_size=8,
                learning_rate=1e-3,
                num_train_epochs=0.08,  # 4 steps
                optimizer="adamw",
                save_checkpoints_steps=2,
            ),
        )

    def train(output_dir):
        return retrieval.run(run_for(output_dir), options)

    class Killed(Exception):
        pass

    starts = []
    restore = Trainer.restore
    monkeypatch.setattr(
        Trainer, "restore", lambda self: starts.append(restore(self)) or starts[-1]
    )
    train(tmp_path / "uninterrupted")
    save = tf.train.CheckpointManager.save

    def save_then_die(self, *args, **kwargs):
        save(self, *args, **kwargs)
        raise Killed

    with monkeypatch.context() as patch:
        patch.setattr(tf.train.CheckpointManager, "save", save_then_die)
        with pytest.raises(Killed):
            train(tmp_path / "killed")
    assert not DualEncoder.saved_in(tmp_path / "killed")
    train(tmp_path / "killed")
    assert starts == [0, 0, 2]
    assert tf.train.latest_checkpoint(tmp_path / "killed" / "checkpoints").endswith(
        "ckpt-4"
    )
    # The settings the early check reads from the flags and files are those
    # the runner recorded: the same run passes it, another seed stops there.
    stop_if_other_run("run_retrieval", run_for(tmp_path / "killed"), options)
    with pytest.raises(UserInputError, match="seed: 12345 -> 7"):
        stop_if_other_run(
            "run_retrieval",
            dataclasses.replace(run_for(tmp_path / "killed"), seed=7),
            options,
        )

    reference = DualEncoder.load(tmp_path / "uninterrupted")
    resumed = DualEncoder.load(tmp_path / "killed")
    initial = DualEncoder.from_checkpoint(tiny_encoders[0])
    for ours, theirs, start in zip(
        resumed.towers, reference.towers, initial.towers, strict=True
    ):
        for a, b in zip(ours.weights, theirs.weights, strict=True):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        assert any(
            not np.array_equal(a.numpy(), c.numpy())
            for a, c in zip(ours.weights, start.weights, strict=True)
        )


def test_export_options_of_the_retrieval_type(small_beir, tmp_path):
    from bert_tf.options import ExportOptions
    from bert_tf.options import SavedModelExportOptions

    def export_options(**kwargs):
        return SavedModelExportOptions(
            model_type="retrieval",
            init_checkpoint=str(tmp_path),
            export=ExportOptions(
                str(tmp_path / "sm"), serving_dtype=kwargs.pop("dtype", "float32")
            ),
            **kwargs,
        )

    with pytest.raises(UserInputError, match="Flag --data_dir must be specified"):
        export_options()
    with pytest.raises(UserInputError, match="--serving_dtype=float16: expected"):
        export_options(data_dir=small_beir, dtype="float16")
    with pytest.raises(UserInputError, match="--passage_stride=9: must be at most"):
        export_options(data_dir=small_beir, passage_length=8, passage_stride=9)
    with pytest.raises(UserInputError, match="are for --model_type=retrieval"):
        SavedModelExportOptions(
            model_type="embedding",
            init_checkpoint=str(tmp_path),
            export=ExportOptions(str(tmp_path / "sm")),
            data_dir=small_beir,
        )


@pytest.mark.slow
def test_export_saved_model_retrieval_equals_milvus_flat(
    small_beir, tiny_encoders, tmp_path
):
    """export_saved_model --model_type=retrieval (in process): the corpus
    embedded at export, searched in the graph, answers as Milvus Lite's FLAT
    index of the same passages does; stock TF Serving ops only."""
    import tensorflow as tf
    from serving_ops import STOCK_TF_TEXT_OPS
    from serving_ops import ops_outside_core_tensorflow

    from bert_tf.options import ExportOptions
    from bert_tf.options import SavedModelExportOptions
    from bert_tf.retrieval.corpus_index import CorpusIndex
    from bert_tf.retrieval.document_search import search_documents
    from bert_tf.retrieval.dual_encoder import DualEncoder
    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.retrieval.vector_store import StoredPassage
    from bert_tf.tasks import saved_model_export
    from bert_tf.text.tokenization import FullTokenizer

    path = saved_model_export.run(
        SavedModelExportOptions(
            model_type="retrieval",
            init_checkpoint=tiny_encoders[0],
            export=ExportOptions(str(tmp_path / "sm")),
            data_dir=small_beir,
            passage_length=48,
            passage_stride=24,
        )
    )
    assert ops_outside_core_tensorflow(path) <= STOCK_TF_TEXT_OPS

    # The reference: the same passages in Milvus Lite (FLAT, inner product).
    towers = DualEncoder.from_checkpoint(tiny_encoders[0])
    tokenizer = FullTokenizer(os.path.join(tiny_encoders[0], "vocab.txt"), True)
    passages = beir.split_passages(
        beir.read_corpus(small_beir), lambda w: len(tokenizer.tokenize(w)) or 1, 48, 24
    )
    queries = beir.read_queries(small_beir)
    texts = [queries[q].text for q in list(beir.read_qrels(small_beir, "test"))[:16]]
    with MilvusStore(
        str(tmp_path / "index.db"), "flat", towers.embedding_dim, "tiny"
    ) as store:
        store.upsert(
            [StoredPassage(p.id, p.doc_id, "") for p in passages],
            towers.encode_documents([p.text for p in passages]),
        )
        expected = search_documents(store, towers.encode_queries(texts), passages, 10)

    loaded = tf.saved_model.load(path)
    found = loaded.signatures["serving_default"](
        query=tf.constant(texts), top_k=tf.constant(10)
    )
    ids = found["ids"].numpy().astype(str)
    for row, best in enumerate(expected):
        assert list(ids[row]) == [d for d, _ in best]
        np.testing.assert_allclose(
            found["scores"].numpy()[row], [s for _, s in best], atol=1e-5
        )
    embedded = loaded.signatures["query_embedding"](query=tf.constant(texts[:2]))
    np.testing.assert_allclose(
        embedded["embeddings"].numpy(), towers.encode_queries(texts[:2]), atol=1e-5
    )
    metadata = json.load(
        open(os.path.join(path, "assets.extra", "bert_tf_export.json"))
    )
    assert metadata["model"] == "retrieval"
    assert metadata["num_passages"] == len(passages)

    # --serving_dtype=bfloat16: the corpus stored in bfloat16 (half the bytes),
    # the same documents' scores within its precision (8 bits of mantissa);
    # the family in process (the export above wrote the same graph).
    from bert_tf import serving

    index = CorpusIndex.of_towers(
        towers,
        [StoredPassage(p.id, p.doc_id, "") for p in passages],
        towers.encode_documents([p.text for p in passages]),
        passages,
    )
    half = serving.signature_module_for(
        index, towers.query_encoder.preprocessor, corpus_dtype="bfloat16"
    )
    assert half.state.corpus.dtype == tf.bfloat16
    rounded_ids, rounded_scores = half.search(tf.constant(texts), 10)
    for row, best in enumerate(expected):
        exact = dict(best)
        for doc, score in zip(
            rounded_ids.numpy()[row].astype(str),
            rounded_scores.numpy()[row],
            strict=True,
        ):
            if doc in exact:
                assert score == pytest.approx(exact[doc], abs=1e-2)
    top1 = np.mean(rounded_ids.numpy()[:, 0].astype(str) == ids[:, 0])
    assert top1 >= 0.75


@pytest.mark.slow
def test_export_from_a_run_reuses_its_index_vectors(
    small_beir, tiny_encoders, tmp_path
):
    """Issue 49: export_saved_model --model_type=retrieval on a run_retrieval
    output_dir takes the vectors --do_index stored when the index holds this
    corpus embedded by this model; the SavedModel answers as one embedded at
    export (ids equal, scores within 1e-6). An index of another model, or of
    another corpus, is embedded again, saying why."""
    import shutil

    import tensorflow as tf

    from bert_tf.options import ExportOptions
    from bert_tf.options import SavedModelExportOptions
    from bert_tf.retrieval.indexing import index_corpus
    from bert_tf.retrieval.indexing import passages_of
    from bert_tf.retrieval.indexing import towers_at
    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.tasks import saved_model_export
    from bert_tf.tasks.retrieval import vectors_in_run_index

    run_dir = tmp_path / "run"
    shutil.copytree(tiny_encoders[0], run_dir)
    towers = towers_at(str(run_dir))
    passages = passages_of(beir.read_corpus(small_beir), towers, 48, 24)
    assert vectors_in_run_index(run_dir, towers, passages)[2] == (
        f"no index.db in {run_dir}"
    )

    def index(directory, fingerprint, indexed):
        with MilvusStore(
            str(directory / "index.db"), "bert_tf", towers.embedding_dim, fingerprint
        ) as store:
            index_corpus(towers, indexed, store)

    index(run_dir, towers.fingerprint(), passages)
    stored, vectors, why_not = vectors_in_run_index(run_dir, towers, passages)
    assert why_not is None
    text_of = {p.id: p.text for p in passages}
    np.testing.assert_allclose(
        vectors, towers.encode_documents([text_of[s.id] for s in stored]), atol=1e-6
    )

    def export(init_checkpoint, name):
        return saved_model_export.run(
            SavedModelExportOptions(
                model_type="retrieval",
                init_checkpoint=str(init_checkpoint),
                export=ExportOptions(str(tmp_path / name)),
                data_dir=small_beir,
                passage_length=48,
                passage_stride=24,
            )
        )

    queries = beir.read_queries(small_beir)
    texts = [queries[q].text for q in list(beir.read_qrels(small_beir, "test"))[:16]]
    answers = []
    for path in (export(run_dir, "reused"), export(tiny_encoders[0], "embedded")):
        found = tf.saved_model.load(path).signatures["serving_default"](
            query=tf.constant(texts), top_k=tf.constant(10)
        )
        answers.append((found["ids"].numpy(), found["scores"].numpy()))
    np.testing.assert_array_equal(answers[0][0], answers[1][0])
    np.testing.assert_allclose(answers[0][1], answers[1][1], atol=1e-6)

    other = tmp_path / "other_model"
    shutil.copytree(tiny_encoders[0], other)
    index(other, "another model", passages)
    assert (
        "indexed with another model" in vectors_in_run_index(other, towers, passages)[2]
    )
    assert vectors_in_run_index(run_dir, towers, passages[:-1])[2].endswith(
        f"0 of {len(passages) - 1} passages missing or changed, 1 others"
    )
