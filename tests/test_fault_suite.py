"""The fault suite: hostile inputs and faults replayed against every command-line tool.

Each probe runs a tool (run_classifier, run_squad, run_pretraining, run_ner,
create_pretraining_data, extract_features, export_saved_model, prepare_corpus)
on one bad input
and checks it ends in one of two ways, never a third:

* a clear error: exit status 2, no traceback, and exactly one
  ``<tool>: error: ...`` line, the last on stderr (log lines may come before
  it), naming the file (and line where there is one) or the flag at fault;
* a correct result: exit status 0 and output checked against what the input
  says (e.g. a label with a trailing space counts as the same label).

Exit 0 with wrong output ("silently wrong") and a traceback, a TensorFlow
message or an error naming nothing ("unclear") both fail the probe.

The probes, by category:

* files: a missing file for every file flag, empty files, a directory where a
  file belongs, a glob matching nothing, non-UTF-8 text;
* rows: header-only and single-class train files, wrong column counts, a
  header read as data (--has_header=false), labels with stray spaces;
* SQuAD JSON: duplicate question ids, a v2.0 file under v1.1 flags, broken JSON;
* CoNLL: unknown tags in strict mode, tab and space columns mixed, extra columns;
* corpora (prepare_corpus): a truncated .bz2 dump, a .xml that is not XML,
  XML of another schema, Parquet and JSON-lines without the text column, a
  JSON-lines line that is not JSON, a corpus left empty by the cleaning, an
  output_dir holding the inputs; none leaves a shard behind;
* TFRecords: truncated inside a record header and inside record data,
  classifier records given to run_pretraining;
* flags: zero and negative sizes, max_seq_length beyond the model's positions,
  doc_stride longer than the window, unknown choices, bad --num_tasks /
  --task_index, TF_CONFIG that is not JSON;
* models: a vocab that does not fit the config, a config with more layers
  than the checkpoint, a TF2 checkpoint that is not BERT, a KerasHub
  directory without its weights, --do_eval with no trained checkpoint, export
  of a checkpoint that does not exist, a tagger export without labels;
* output_dir: reused with other settings (the differences listed), held by a
  second writer (the holder named);
* faults (issue 29): a NaN loss (training stops, the checkpoint that gave it
  is removed, the last good one is evaluated), NaN in a config, an output
  file that is an input (itself, a glob match, a symlink, the vocab), a
  vocabulary cased otherwise than --do_lower_case, a full disk (/dev/full),
  FIFOs as inputs, symlink loops, dangling symlinks, directories as files, a
  vocab without [CLS], export versions TF Serving never loads or that exist,
  an export_dir that is a file, a half-written checkpoint save left behind;
* a trained run is the source of truth (issue 29): --do_predict of run_classifier
  and run_ner, and export_saved_model of a run, with another vocabulary, casing
  or label order than the run recorded (a clear error naming the flag and the
  recorded value), and without those flags (the run's own are used).

A probe still running after PROBE_TIMEOUT seconds is a hang. The probes
marked slow (they train or export) run in a second driver pass.

To stay fast, one driver process per tool imports the tool's `Command` once
and runs all its probes in turn (the flags are reset between them); most
probes stop at flag validation or data reading, before a model is built.

The probes themselves, and the checks of their results, are in
tests/fault_probes.py; this module writes the fixtures they read, runs them
and classifies each run.
"""

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from cli_script import REPO
from cli_script import hold_output_dir_lock
from cli_script import script_env
from fault_probes import CORPUS
from fault_probes import PROBES

DATA = os.environ.get("BERT_TF_DATA")
pytestmark = pytest.mark.skipif(not DATA, reason="BERT_TF_DATA is not set")

# Runs every probe of one tool in one process. argv: tool, probes.json, out.json.
DRIVER = textwrap.dedent(
    r"""
    import importlib, json, os, signal, sys, tempfile, traceback
    from absl import flags
    from absl import logging

    class Hang(BaseException):
        # A probe still running after its time: recorded as a hang.
        pass

    def on_alarm(signum, frame):
        raise Hang()

    signal.signal(signal.SIGALRM, on_alarm)

    # As app.run does for a single run (its set-up runs once per process).
    logging.use_absl_handler()
    tool, probes_path, out_path = sys.argv[1:4]
    command = importlib.import_module(f"bert_tf.cli.{tool}").COMMAND
    results = {}
    for probe in json.load(open(probes_path)):
        saved_env = {k: os.environ.get(k) for k in probe.get("env", {})}
        os.environ.update(probe.get("env", {}))
        if probe.get("pre"):
            exec(probe["pre"], {})
        out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()
        sys.stdout.flush(); sys.stderr.flush()
        saved_out, saved_err = os.dup(1), os.dup(2)
        os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)
        signal.alarm(probe["timeout"])
        try:
            command.main([tool, *probe["argv"]])
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except Hang:
            code = "hang"
        except BaseException:
            traceback.print_exc()
            code = 1
        finally:
            signal.alarm(0)
            sys.stdout.flush(); sys.stderr.flush()
            os.dup2(saved_out, 1); os.dup2(saved_err, 2)
            os.close(saved_out); os.close(saved_err)
        flags.FLAGS.unparse_flags()
        for k, v in saved_env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        out.seek(0); err.seek(0)
        results[probe["id"]] = {
            "code": code,
            "stdout": out.read().decode("utf-8", "replace"),
            "stderr": err.read().decode("utf-8", "replace"),
        }
        json.dump(results, open(out_path, "w"))
    """
)

# Writes the TensorFlow-made fixtures: a tiny 2-layer BERT checkpoint, a TF2
# checkpoint that is not BERT, classifier and pre-training TFRecords.
MAKE_FIXTURES = textwrap.dedent(
    r"""
    import os, sys
    import numpy as np
    import tensorflow as tf
    import bert_tf
    from bert_tf.config import BertConfig

    root = sys.argv[1]
    config = BertConfig.from_json_file(os.path.join(root, "bert_config.json"))
    model = bert_tf.BertEncoder(config)
    bert_tf.save_tf1_checkpoint(model, os.path.join(root, "ckpt", "bert_model.ckpt"))
    tf.train.Checkpoint(foo=tf.Variable([1.0, 2.0])).write(os.path.join(root, "tf2", "ckpt"))
    # A config beside it, so that the weights themselves are what is wrong.
    config.to_json_file(os.path.join(root, "tf2", "bert_config.json"))

    def ints(values):
        return tf.train.Feature(int64_list=tf.train.Int64List(value=list(values)))

    def floats(values):
        return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))

    with tf.io.TFRecordWriter(os.path.join(root, "classifier.tfrecord")) as w:
        for i in range(4):
            f = {"input_ids": ints([101, 2000 + i, 102] + [0] * 13),
                 "input_mask": ints([1] * 3 + [0] * 13),
                 "segment_ids": ints([0] * 16), "label_ids": ints([i % 2]),
                 "is_real_example": ints([1])}
            w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    path = os.path.join(root, "pretrain.tfrecord")
    with tf.io.TFRecordWriter(path) as w:
        for i in range(8):
            f = {"input_ids": ints([101, 103, 2000 + i, 102] + [0] * 12),
                 "input_mask": ints([1] * 4 + [0] * 12),
                 "segment_ids": ints([0] * 16),
                 "masked_lm_positions": ints([1, 0, 0]),
                 "masked_lm_ids": ints([2001, 0, 0]),
                 "masked_lm_weights": floats([1.0, 0.0, 0.0]),
                 "next_sentence_labels": ints([i % 2])}
            w.write(tf.train.Example(features=tf.train.Features(feature=f)).SerializeToString())
    # Issue 50: a mean-pooling sentence encoder (sentence-transformers
    # layout) and a plain BERT directory (checkpoint, config and vocab).
    import shutil
    from bert_tf.text.preprocessing import BertPreprocessor
    vocab = sys.argv[2]
    import keras
    keras.utils.set_random_seed(1)
    bert_tf.BertSentenceEncoder(
        config, preprocessor=BertPreprocessor(vocab, True, 64, padding="longest"),
        pooling="mean", normalize=True,
    ).save_sentence_transformers(os.path.join(root, "st"))
    bert_tf.save_tf1_checkpoint(model, os.path.join(root, "plain", "bert_model.ckpt"))
    config.to_json_file(os.path.join(root, "plain", "bert_config.json"))
    shutil.copy(vocab, os.path.join(root, "plain", "vocab.txt"))
    data = open(path, "rb").read()
    record = len(data) // 8
    # Cut 5 bytes into the 8-byte length header of the last record, and in
    # the middle of its data.
    open(os.path.join(root, "cut_header.tfrecord"), "wb").write(data[: 7 * record + 5])
    open(os.path.join(root, "cut_data.tfrecord"), "wb").write(data[: 7 * record + record // 2])
    """
)


def _write_text_fixtures(root, vocab):
    def write(name, text, encoding="utf-8"):
        with open(os.path.join(root, name), "w", encoding=encoding) as f:
            f.write(text)

    config = {
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 16,
        "initializer_range": 0.02,
        "intermediate_size": 32,
        "max_position_embeddings": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "type_vocab_size": 2,
        "vocab_size": sum(1 for _ in open(vocab, encoding="utf-8")),
    }
    write("bert_config.json", json.dumps(config))
    write("four_layer_config.json", json.dumps({**config, "num_hidden_layers": 4}))
    write("small_vocab_config.json", json.dumps({**config, "vocab_size": 100}))
    write("empty.txt", "")
    write("odd_hidden_config.json", json.dumps({**config, "hidden_size": 15}))
    write("one_type_config.json", json.dumps({**config, "type_vocab_size": 1}))
    write("bad_act_config.json", json.dumps({**config, "hidden_act": "swishy"}))
    # json.dumps writes NaN, which json.load reads back.
    write("nan_config.json", json.dumps({**config, "initializer_range": float("nan")}))
    write(
        "no_vocab_config.json",
        json.dumps({k: v for k, v in config.items() if k != "vocab_size"}),
    )
    write("two_class.xyz", "sentence\tlabel\nfine\tpos\nbad\tneg\n")
    write("broken.jsonl", '{"text": "fine", "label": "pos"}\n{"text": "bad", "label"\n')
    write("short_row.csv", "sentence,label\nfine,pos\njust text\n")
    write("empty.tsv", "")
    write("header_only.tsv", "sentence\tlabel\n")
    write("single_class.tsv", "sentence\tlabel\n" + "a good film\tpos\n" * 4)
    write("two_class.tsv", "sentence\tlabel\nfine\tpos\nbad\tneg\n")
    write(
        "trailing_space.tsv", "sentence\tlabel\n" + "great fun\tpos \nawful\tneg\n" * 2
    )
    write("short_row.tsv", "sentence\tlabel\nfine\tpos\njust text\n")
    write("dev_unseen_label.tsv", "sentence\tlabel\nok\tneutral\n")
    write(
        "latin1.tsv",
        "sentence\tlabel\ncaf\u00e9 cr\u00e8me\tpos\nbad\tneg\n",
        "latin-1",
    )
    write(
        "latin1.txt",
        "Caf\u00e9 cr\u00e8me br\u00fbl\u00e9e.\nAnother line.\n",
        "latin-1",
    )
    write("latin1.conll", "Caf\u00e9 O\nParis B-location\n", "latin-1")
    write(
        "latin1.json",
        json.dumps({"data": [], "x": "\u00e9"}, ensure_ascii=False),
        "latin-1",
    )
    write("broken.json", '{"data": [{"paragraphs": [')
    write("bad_tag.conll", "Paris\tB-location\nis\tO\nnice\tX-weird\n")
    write("mixed_columns.conll", "Paris\tB-location\nis O extra\nnice\tO\n")
    write("dev_person.conll", "Alice\tB-person\nsang\tO\n")
    write("words_only.conll", "Alice\nsang\n")
    write("ill_formed.conll", "is\tO\nParis\tI-location\n")
    write("two_lines.txt", "The cat sat.\nHello world ||| again\n")
    write("corpus.txt", CORPUS)
    write("dup_columns.tsv", "text\ttext\tlabel\nfine\tgood\tpos\nbad\tawful\tneg\n")
    os.mkfifo(os.path.join(root, "pipe.txt"))  # no writer: open() blocks
    os.mkfifo(os.path.join(root, "pipe.tsv"))
    os.symlink("loop.txt", os.path.join(root, "loop.txt"))
    os.symlink("nowhere.txt", os.path.join(root, "dangling.txt"))
    words = [w for w in open(vocab, encoding="utf-8").read().split("\n") if w]
    write("vocab_no_cls.txt", "\n".join(w for w in words if w != "[CLS]") + "\n")
    write("vocab_no_unk.txt", "\n".join(w for w in words if w != "[UNK]") + "\n")
    write("vocab_copy.txt", open(vocab, encoding="utf-8").read())
    # As many tokens, two of them swapped: other ids for the same words.
    swapped = list(words)
    swapped[2000], swapped[2001] = swapped[2001], swapped[2000]
    write("vocab_swapped.txt", "\n".join(swapped) + "\n")
    write("three_class.tsv", "sentence\tlabel\nfine\tpos\nbad\tneg\nso so\tmeh\n")
    os.makedirs(os.path.join(root, "keras_hub"))
    write(
        "keras_hub/config.json",
        json.dumps({"registered_name": "keras_hub>BertBackbone", "config": {}}),
    )

    def squad(questions, is_impossible=None):
        qas = []
        for qid, answer in questions:
            qa = {"id": qid, "question": "Who wrote it?", "answers": []}
            if answer:
                qa["answers"] = [{"text": "Alice", "answer_start": 0}]
            if is_impossible is not None:
                qa["is_impossible"] = not answer
            qas.append(qa)
        context = "Alice wrote the book in the garden of the old house."
        return json.dumps(
            {
                "version": "1.1",
                "data": [
                    {"title": "t", "paragraphs": [{"context": context, "qas": qas}]}
                ],
            }
        )

    write("dup_id.json", squad([("q1", True), ("q1", True)]))
    write("v2.json", squad([("q1", True), ("q2", False)], is_impossible=True))
    write("v1_small.json", squad([("q1", True), ("q2", True)]))
    outside = json.loads(squad([("q1", True)]))
    outside["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 500
    write("answer_outside.json", json.dumps(outside))
    two = json.loads(squad([("q1", True)]))
    answers = two["data"][0]["paragraphs"][0]["qas"][0]["answers"]
    answers.append(dict(answers[0]))
    write("two_answers.json", json.dumps(two))
    write("no_data.json", json.dumps({"version": "1.1", "data": []}))
    _write_issue_50_fixtures(root, write)
    _write_corpus_fixtures(root, write)


def _write_corpus_fixtures(root, write):
    """The bad inputs of the prepare_corpus probes."""
    dump = os.path.join(
        DATA,
        "wikipedia",
        "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2",
    )
    with open(dump, "rb") as f:
        head = f.read(300_000)  # a download cut short
    with open(os.path.join(root, "truncated-pages-articles.xml.bz2"), "wb") as f:
        f.write(head)
    write("not_xml.xml", "This is a text file named .xml.\n")
    write("rss.xml", '<?xml version="1.0"?>\n<rss version="2.0"><channel/></rss>\n')
    write("no_text.jsonl", '{"body": "A document under another field."}\n')
    import pyarrow
    import pyarrow.parquet

    table = pyarrow.table({"body": ["A document under another column."]})
    pyarrow.parquet.write_table(table, os.path.join(root, "no_text.parquet"))
    os.makedirs(os.path.join(root, "corpus_in"))
    write("corpus_in/a.txt", CORPUS)


def _write_issue_50_fixtures(root, write):
    """Similarity rows and BEIR directories of the issue-50 probes."""
    header = "sentence1\tsentence2\tscore\n"
    pairs = "a cat sat\ta cat sits\t4.5\ndogs bark\tthe sky is blue\t0.5\n"
    write("sts_0_5.tsv", header + pairs + "hello\thi\t3\n")
    write("sts_nan.tsv", header + pairs + "hello\thi\tnan\n")
    write("sts_constant.tsv", header + "a cat sat\ta cat sits\t2\ndogs bark\tsky\t2\n")
    write("sts_one_row.tsv", header + "a cat sat\ta cat sits\t4.5\n")
    write("sts_true.jsonl", '{"sentence1": "a", "sentence2": "b", "score": true}\n')
    write("not_a_database.db", "not a Milvus Lite database\n")
    words = "apple river stone cloud music paper garden window silver engine".split()
    corpus = {
        f"d{i}": " ".join(words[(i + j) % 10] for j in range(12)) for i in range(8)
    }
    # A long document cut into coll#0, coll#1, ... and one named coll#0.
    corpus["coll"] = " ".join(words[j % 7] for j in range(40))
    corpus["coll#0"] = "zebra giraffe elephant lion tiger monkey"
    queries = {f"q{i}": (corpus[f"d{i}"][:30], f"d{i}") for i in range(4)}
    queries["qz"] = ("zebra giraffe elephant", "coll#0")
    variants = {
        "beir": (corpus, queries),
        "beir_space_id": ({**corpus, "d 9": "a document"}, queries),
        "beir_empty_query": (corpus, {**queries, "q9": (" ", "d1")}),
    }
    for name, (docs, asked) in variants.items():
        os.makedirs(os.path.join(root, name, "qrels"))
        write(
            f"{name}/corpus.jsonl",
            "".join(
                json.dumps({"_id": k, "title": "", "text": v}) + "\n"
                for k, v in docs.items()
            ),
        )
        write(
            f"{name}/queries.jsonl",
            "".join(
                json.dumps({"_id": k, "text": t}) + "\n" for k, (t, _) in asked.items()
            ),
        )
        write(
            f"{name}/qrels/test.tsv",
            "query-id\tcorpus-id\tscore\n"
            + "".join(f"{k}\t{d}\t1\n" for k, (_, d) in asked.items()),
        )


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("faults"))
    vocab = os.path.join(DATA, "vocab", "bert-base-uncased", "vocab.txt")
    _write_text_fixtures(root, vocab)
    os.makedirs(os.path.join(root, "out"))
    result = subprocess.run(
        [sys.executable, "-c", MAKE_FIXTURES, root, vocab],
        capture_output=True,
        text=True,
        env=script_env(),
        cwd=REPO,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {"T": root, "D": DATA, "V": vocab}


def _fill(value, paths):
    for key, path in paths.items():
        value = value.replace("{" + key + "}", path)
    return value


# A probe still running after this long is recorded as a hang.
PROBE_TIMEOUT = 240


@pytest.fixture(scope="module")
def results(paths):
    """{probe id: {code, stdout, stderr}} of the fast probes: every tool's
    driver run once."""
    return _run_probes(paths, [p for p in PROBES if not p["slow"]])


@pytest.fixture(scope="module")
def slow_results(paths, results):
    """As `results`, for the slow probes (they train or export), after the
    fast ones (some read the runs those trained)."""
    return _run_probes(paths, [p for p in PROBES if p["slow"]])


def _run_probes(paths, selected):
    holder = hold_output_dir_lock(os.path.join(paths["T"], "out", "held"))
    found = {}
    try:
        for tool in sorted({p["tool"] for p in selected}):
            probes = [
                {
                    "id": p["id"],
                    "argv": [_fill(a, paths) for a in p["argv"]],
                    "env": p["env"] or {},
                    "pre": _fill(p["pre"], paths) if p["pre"] else None,
                    "timeout": PROBE_TIMEOUT,
                }
                for p in selected
                if p["tool"] == tool
            ]
            probes_path = os.path.join(paths["T"], f"{tool}.probes.json")
            out_path = os.path.join(paths["T"], f"{tool}.results.json")
            with open(probes_path, "w") as f:
                json.dump(probes, f)
            run = subprocess.run(
                [sys.executable, "-c", DRIVER, tool, probes_path, out_path],
                capture_output=True,
                text=True,
                env=script_env(),
                cwd=REPO,
                timeout=600 + PROBE_TIMEOUT * len(probes),
            )
            if os.path.exists(out_path):
                found.update(json.load(open(out_path)))
            for p in probes:
                found.setdefault(
                    p["id"], {"code": None, "stdout": "", "stderr": run.stderr[-3000:]}
                )
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    return found


def classify(probe, result, paths):
    """'clear', 'correct', 'unclear', 'silently wrong' or 'hang', with the reason."""
    code, stderr = result["code"], result["stderr"]
    lines = [line for line in stderr.splitlines() if line.strip()]
    if code == "hang":
        return "hang", f"still running after {PROBE_TIMEOUT} s: {stderr[-2000:]}"
    if probe["expect"] == "ok":
        if code != 0:
            return "unclear", f"exit {code}: {stderr[-2000:]}"
        try:
            probe["check"](paths, probe["id"], result)
        except (AssertionError, OSError, ValueError, KeyError) as e:
            return "silently wrong", f"wrong output: {e!r}"
        return "correct", ""
    if code == 0:
        return "silently wrong", f"exit 0 on bad input: {stderr[-2000:]}"
    prefix = f"{probe['tool']}: error: "
    errors = [line for line in lines if line.startswith(prefix)]
    if code != 2 or "Traceback" in stderr or len(errors) != 1 or lines[-1] != errors[0]:
        return "unclear", f"exit {code}: {stderr[-2000:]}"
    missing = [n for n in probe["names"] if _fill(n, paths) not in errors[0]]
    if missing:
        return "unclear", f"{errors[0]!r} does not name {missing}"
    if probe["check"] is not None:
        # What a stopped run leaves behind (e.g. only good checkpoints).
        try:
            probe["check"](paths, probe["id"], result)
        except (AssertionError, OSError, ValueError, KeyError) as e:
            return "silently wrong", f"clear error, but left behind: {e!r}"
    return "clear", ""


VERDICTS = ("clear", "correct", "unclear", "silently wrong", "hang")


# Every probe runs a tool in a driver process: the whole suite is slow. The
# probes marked slow (they train or export) run in a second driver pass.
@pytest.mark.slow
@pytest.mark.parametrize("probe", PROBES, ids=[p["id"] for p in PROBES])
def test_probe_ends_in_a_clear_error_or_a_correct_result(probe, request, paths):
    results = request.getfixturevalue("slow_results" if probe["slow"] else "results")
    verdict, reason = classify(probe, results[probe["id"]], paths)
    assert verdict in ("clear", "correct"), f"{verdict}: {reason}"


@pytest.mark.slow
def test_totals_none_silently_wrong(results, slow_results, paths):
    """The suite's totals, printed (pytest -s): clear errors, correct results,
    unclear errors, silently wrong results, hangs."""
    every = {**results, **slow_results}
    verdicts = [classify(p, every[p["id"]], paths)[0] for p in PROBES]
    totals = {v: verdicts.count(v) for v in VERDICTS}
    print(f"\nfault suite: {len(PROBES)} probes: {totals}")
    assert len(PROBES) >= 60
    assert totals["silently wrong"] == 0, totals
    assert totals["hang"] == 0, totals


@pytest.mark.parametrize(
    "code", ["EROFS", "ENOSPC", "EDQUOT", "ELOOP", "EISDIR", "ENOTDIR", "EEXIST"]
)
def test_file_system_errors_are_one_line_errors(code):
    """Faults of the file system the user can fix (no way to make a read-only
    or full disk in a test for each) end in one line naming the path."""
    from bert_tf.cli.command import is_user_error
    from bert_tf.cli.command import one_line

    number = getattr(errno, code)
    error = OSError(number, os.strerror(number), "/data/run/ckpt-3.index")
    assert is_user_error(error)
    assert one_line(error) == f"/data/run/ckpt-3.index: {os.strerror(number)}"
    assert not is_user_error(OSError(errno.EBADF, os.strerror(errno.EBADF)))
