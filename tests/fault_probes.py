"""The fault suite's probes (tests/test_fault_suite.py): for each tool, the bad
inputs it is run on, and the checks of what a correct result (or a stopped
run) leaves behind.

A probe's paths hold placeholders the suite fills in: {T} its temporary
directory (the fixtures it writes there), {D} BERT_TF_DATA, {V} the real
bert-base-uncased vocabulary. `error` probes must end in a clear error naming
each of their names, `correct` ones in a result their check accepts.
"""

import json
import os

V = "{V}"  # the real bert-base-uncased vocab
C = "{T}/bert_config.json"  # the tiny 2-layer config
K = "{T}/ckpt/bert_model.ckpt"  # its checkpoint
MRPC = "{D}/glue/MRPC"
SQUAD = "{D}/squad/dev-v1.1.json"
CONLL = "{D}/ner/wnut17/emerging.dev.conll"
TEXT = "{D}/bert_sample_text/sample_text.txt"

# A small pre-training corpus (two documents) that a tool must not overwrite.
CORPUS = "The cat sat on the mat.\nIt was happy.\n\nDogs bark at night.\nThey sleep by day.\n"

CLS = ["--vocab_file=" + V, "--bert_config_file=" + C, "--max_seq_length=32"]
CLS_MRPC = ["--task_name=MRPC", "--data_dir=" + MRPC, *CLS]
CUSTOM = ["--task_name=custom", *CLS, "--text_a_column=0", "--label_column=1"]
SQ = ["--vocab_file=" + V, "--bert_config_file=" + C, "--max_seq_length=48"]
SQ += ["--max_query_length=16", "--doc_stride=16"]
PRE = ["--bert_config_file=" + C, "--max_seq_length=16", "--max_predictions_per_seq=3"]
PRE += ["--train_batch_size=2", "--eval_batch_size=2", "--num_train_steps=1"]
NER = ["--vocab_file=" + V, "--bert_config_file=" + C, "--max_seq_length=32"]
CPD = ["--vocab_file=" + V, "--max_seq_length=32"]
EXT = ["--vocab_file=" + V, "--bert_config_file=" + C, "--init_checkpoint=" + K]
EXT += ["--max_seq_length=16", "--layers=-1"]
EXP = ["--vocab_file=" + V, "--bert_config_file=" + C, "--max_seq_length=32"]
SWAPPED = "{T}/vocab_swapped.txt"  # V with two tokens swapped


def swap_vocab(argv):
    """`argv` with --vocab_file naming the swapped vocabulary."""
    return ["--vocab_file=" + SWAPPED if a == "--vocab_file=" + V else a for a in argv]


def error(tool, pid, argv, *names, env=None, pre=None, check=None, slow=False):
    """A probe that must stop with one line naming each of `names`; then
    `check(paths, pid, result)`, if given, checks what it left behind.
    `slow` probes (training, export, > 2 s) run in the second driver pass."""
    return dict(
        tool=tool,
        id=pid,
        argv=argv,
        expect="error",
        names=names,
        env=env,
        pre=pre,
        check=check,
        slow=slow,
    )


def correct(tool, pid, argv, check, env=None, pre=None, slow=False):
    """A probe that must succeed; `check(paths, pid, result)` checks its output."""
    return dict(
        tool=tool,
        id=pid,
        argv=argv,
        expect="ok",
        check=check,
        env=env,
        pre=pre,
        slow=slow,
    )


def out(pid):
    return "{T}/out/" + pid


# The runs trained by the probes (custom-label-trailing-space, and
# ner-ill-formed-read-as-conlleval), whose records win over the flags.
TRAINED = out("trained")
NER_TRAINED = out("ner-ill-formed-read-as-conlleval")
PREDICT_TRAINED = [
    "--do_predict",
    "--output_dir=" + TRAINED,
    *CUSTOM,
    "--train_file={T}/trailing_space.tsv",
    "--test_file={T}/trailing_space.tsv",
]
EXP_TRAINED = [
    "--model_type=classifier",
    "--init_checkpoint=" + TRAINED,
    "--bert_config_file=" + C,
    "--max_seq_length=32",
]


def _labels_are(expected):
    def check(paths, pid, result):
        path = os.path.join(paths["T"], "out", "trained", "label_list.json")
        assert json.load(open(path)) == {"labels": expected}
        checkpoints = os.path.join(paths["T"], "out", "trained", "checkpoints")
        assert not [n for n in os.listdir(checkpoints) if n.endswith("_temp")]

    return check


def _older_checkpoint_used(paths, pid, result):
    stderr = result["stderr"]
    assert "cannot be read" in stderr and "ckpt-2" in stderr, stderr[-2000:]
    path = os.path.join(paths["T"], "out", "trained", "eval_results.txt")
    results = dict(line.split(" = ") for line in open(path).read().splitlines())
    assert results["global_step"] == "1", results  # the older checkpoint
    assert 0.0 <= float(results["eval_accuracy"]) <= 1.0, results


def _only_finite_checkpoints(paths, pid, result):
    """A run stopped by a NaN loss keeps its checkpoints, none of them NaN:
    the eval probe after it reads the newest."""
    directory = os.path.join(paths["T"], "out", pid, "checkpoints")
    assert any(name.endswith(".index") for name in os.listdir(directory))


def _last_good_checkpoint_evaluated(paths, pid, result):
    path = os.path.join(paths["T"], "out", "cls-nan-loss-stops", "eval_results.txt")
    results = dict(line.split(" = ") for line in open(path).read().splitlines())
    assert 0 < int(results["global_step"]) < 20, (
        results
    )  # stopped early, before the NaN
    assert float(results["eval_loss"]) < 1e30, results  # finite: not NaN
    assert 0.0 <= float(results["eval_accuracy"]) <= 1.0, results


def _predictions_of_the_trained_run(paths, pid, result):
    path = os.path.join(paths["T"], "out", "trained", "test_results.tsv")
    rows = [line.split("\t") for line in open(path).read().splitlines()]
    assert len(rows) == 4 and all(len(row) == 2 for row in rows), rows  # neg, pos
    for row in rows:
        assert abs(sum(float(p) for p in row) - 1.0) < 1e-4, row


def _exported_with_renamed_labels(paths, pid, result):
    path = os.path.join(
        paths["T"], "out", pid, "1", "assets.extra", "bert_tf_export.json"
    )
    metadata = json.load(open(path))
    assert metadata["labels"] == ["negative", "positive"], metadata
    assert metadata["trained_labels"] == ["neg", "pos"], metadata  # label_list.json


def _exported_with_the_run_record(paths, pid, result):
    path = os.path.join(
        paths["T"], "out", pid, "1", "assets.extra", "bert_tf_export.json"
    )
    metadata = json.load(open(path))
    assert metadata["labels"] == ["neg", "pos"], metadata  # its label_list.json
    assert metadata["do_lower_case"] is True, metadata


def _nothing_trained(paths, pid, result):
    assert not os.path.exists(os.path.join(paths["T"], "out", pid, "checkpoints"))


def _ner_labels(paths, pid, result):
    path = os.path.join(paths["T"], "out", pid, "label_list.json")
    saved = json.load(open(path))
    assert saved == {"labels": ["O", "B-location", "I-location"], "tag_scheme": "iob2"}


def _pretraining_eval(paths, pid, result):
    path = os.path.join(paths["T"], "out", pid, "eval_results.txt")
    results = dict(line.split(" = ") for line in open(path).read().splitlines())
    assert int(results["global_step"]) == 1, results  # --num_train_steps=1
    # Random-init heads over a 30522-word vocab: the MLM loss is near ln(30522).
    assert 9.0 < float(results["masked_lm_loss"]) < 11.5, results
    assert 0.0 <= float(results["next_sentence_accuracy"]) <= 1.0, results


def _pretraining_records(paths, pid, result):
    from bert_tf.data_prep.pretraining.records import decode_record
    from bert_tf.data_prep.tfrecord_files import iter_checked_records

    path = os.path.join(paths["T"], "out", pid + ".tfrecord")
    records = [decode_record(data) for _, data in iter_checked_records(path)]
    assert records, "no record written"
    for record in records:
        ids = record["input_ids"]
        assert len(ids) == 32 and ids[0] == 101 and 102 in ids  # [CLS] ... [SEP]
        weights = record["masked_lm_weights"]
        assert len(weights) == 20 and sum(weights) >= 1
        assert all(
            i > 0 for i, w in zip(record["masked_lm_ids"], weights, strict=True) if w
        )


def _corpus_intact(paths, pid, result):
    with open(os.path.join(paths["T"], "corpus.txt"), encoding="utf-8") as f:
        assert f.read() == CORPUS


def _no_corpus_shard(paths, pid, result):
    """A stopped prepare_corpus leaves no shard, finished-looking or not."""
    folder = os.path.join(paths["T"], "out", pid)
    left = os.listdir(folder) if os.path.isdir(folder) else []
    assert not [n for n in left if n.startswith("corpus")], left


def _features_of_two_lines(paths, pid, result):
    path = os.path.join(paths["T"], "out", pid + ".jsonl")
    lines = [json.loads(line) for line in open(path)]
    tokens = [[f["token"] for f in line["features"]] for line in lines]
    # two_lines.txt, lower-cased and split as the original's tokenizer does.
    assert tokens == [
        ["[CLS]", "the", "cat", "sat", ".", "[SEP]"],
        ["[CLS]", "hello", "world", "[SEP]", "again", "[SEP]"],
    ], tokens
    layer = lines[0]["features"][0]["layers"]
    assert [entry["index"] for entry in layer] == [-1]
    assert len(layer[0]["values"]) == 16  # hidden_size


def _input_intact(name, content):
    def check(paths, pid, result):
        with open(os.path.join(paths["T"], name), encoding="utf-8") as f:
            assert f.read() == content

    return check


def _saved_model_seq_length(length):
    def check(paths, pid, result):
        path = os.path.join(
            paths["T"], "out", pid, "1", "assets.extra", "bert_tf_export.json"
        )
        assert json.load(open(path))["seq_length"] == length

    return check


def _litert_seq_length(length):
    def check(paths, pid, result):
        from bert_tf.serving.litert_model import read_metadata

        path = os.path.join(paths["T"], "out", pid + ".tflite")
        assert read_metadata(open(path, "rb").read())["seq_length"] == length

    return check


def _every_document_in_the_run(paths, pid, result):
    """run.tsv: TREC's 6 fields a line, and with --eval_top_k beyond the
    corpus every document once per query: coll (cut into passages) and the
    document named coll#0 both."""
    corpus = [
        json.loads(line)["_id"]
        for line in open(os.path.join(paths["T"], "beir", "corpus.jsonl"))
    ]
    rows = [
        line.split() for line in open(os.path.join(paths["T"], "out", pid, "run.tsv"))
    ]
    assert rows and all(len(row) == 6 for row in rows)
    for query in ("q0", "qz"):
        assert sorted(row[2] for row in rows if row[0] == query) == sorted(corpus)
    # Every passage cut is a row of the index: none written over another.
    import re

    from pymilvus import MilvusClient

    cut = int(re.search(r"(\d+) documents -> (\d+) passages", result["stderr"])[2])
    client = MilvusClient(uri=os.path.join(paths["T"], "out", pid, "index.db"))
    try:
        rows = client.query("bert_tf", filter="", output_fields=["count(*)"])
    finally:
        client.close()
    assert rows[0]["count(*)"] == cut, (rows, cut)


def _ivf_warned(paths, pid, result):
    assert "IVF_FLAT nlist=128 over 10 passages" in result["stderr"], result["stderr"][
        -2000:
    ]


# Two corpus shards that both hold document d1; a gzip shard cut in half.
_SHARDS = (
    "import json, os; os.makedirs(r'{T}/shards', exist_ok=True)\n"
    "for name, ids in (('a', (0, 1)), ('b', (1, 2))):\n"
    "    open(rf'{T}/shards/{name}.jsonl', 'w').write(''.join(json.dumps({'_id': f'd{i}', 'title': '', 'text': f'text {i}'}) + '\\n' for i in ids))"
)
_CUT_GZ = (
    "import gzip, json, os; os.makedirs(r'{T}/cut', exist_ok=True)\n"
    "data = gzip.compress(''.join(json.dumps({'_id': f'd{i}', 'title': '', 'text': f'text number {i}'}) + '\\n' for i in range(200)).encode())\n"
    "open(r'{T}/cut/corpus.jsonl.gz', 'wb').write(data[: len(data) // 2])"
)
RET = ["--init_checkpoint={T}/st", "--eval_split=test", "--data_dir={T}/beir"]
SIM = ["--init_checkpoint={T}/st", "--num_train_epochs=1"]
EMB = ["--init_checkpoint={T}/st", "--input_file={T}/two_lines.txt"]

# fmt: off
PROBES = [
    # ---- run_classifier: flags
    error("run_classifier", "cls-no-action", ["--output_dir=" + out("a"), *CLS_MRPC], "`do_train`, `do_eval` or `do_predict'"),
    error("run_classifier", "cls-no-output-dir", ["--do_train", *CLS_MRPC], "output_dir"),
    error("run_classifier", "cls-no-task", ["--do_train", "--output_dir=" + out("b"), "--data_dir=" + MRPC, *CLS], "task_name"),
    error("run_classifier", "cls-unknown-task", ["--do_train", "--output_dir=" + out("c"), "--task_name=nope", "--data_dir=" + MRPC, *CLS], "nope"),
    error("run_classifier", "cls-train-batch-0", ["--do_train", "--output_dir=" + out("d"), *CLS_MRPC, "--train_batch_size=0"], "--train_batch_size: must be positive, got 0"),
    error("run_classifier", "cls-eval-batch-negative", ["--do_eval", "--output_dir=" + out("e"), *CLS_MRPC, "--eval_batch_size=-1"], "eval_batch_size"),
    error("run_classifier", "cls-epochs-negative", ["--do_train", "--output_dir=" + out("f"), *CLS_MRPC, "--num_train_epochs=-1"], "num_train_epochs"),
    error("run_classifier", "cls-warmup-2", ["--do_train", "--output_dir=" + out("g"), *CLS_MRPC, "--warmup_proportion=2"], "warmup_proportion"),
    error("run_classifier", "cls-seq-beyond-positions", ["--do_train", "--output_dir=" + out("h"), *CLS_MRPC[:-1], "--max_seq_length=512"], "max_seq_length", "max_position_embeddings"),
    error("run_classifier", "cls-seq-0", ["--do_train", "--output_dir=" + out("i"), *CLS_MRPC[:-1], "--max_seq_length=0"], "max_seq_length"),
    error("run_classifier", "cls-bad-int-flag", ["--do_train", "--output_dir=" + out("j"), *CLS_MRPC, "--train_batch_size=abc"], "train_batch_size"),
    error("run_classifier", "cls-unknown-flag", ["--do_train", "--output_dir=" + out("k"), *CLS_MRPC, "--no_such_flag=1"], "no_such_flag"),
    error("run_classifier", "cls-grad-accum-0", ["--do_train", "--output_dir=" + out("l"), *CLS_MRPC, "--gradient_accumulation_steps=0"], "gradient_accumulation_steps"),
    error("run_classifier", "cls-grad-accum-not-dividing-batch", ["--do_train", "--output_dir=" + out("l2"), *CLS_MRPC, "--gradient_accumulation_steps=3"], "--gradient_accumulation_steps=3"),
    error("run_classifier", "cls-tf-config-not-json", ["--do_train", "--output_dir=" + out("m"), *CLS_MRPC], "TF_CONFIG", env={"TF_CONFIG": "{not json"}),
    error("run_classifier", "cls-tf-config-not-json-multi-worker", ["--do_train", "--output_dir=" + out("m2"), *CLS_MRPC, "--distribution_strategy=multi_worker_mirrored"], "TF_CONFIG", env={"TF_CONFIG": "{not json"}),
    # ---- run_classifier: files
    error("run_classifier", "cls-missing-vocab", ["--do_train", "--output_dir=" + out("n"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file={T}/nope.txt", "--bert_config_file=" + C, "--max_seq_length=32"], "{T}/nope.txt"),
    error("run_classifier", "cls-missing-config", ["--do_train", "--output_dir=" + out("o"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/nope.json", "--max_seq_length=32"], "{T}/nope.json"),
    error("run_classifier", "cls-config-not-json", ["--do_train", "--output_dir=" + out("p"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/empty.txt", "--max_seq_length=32"], "{T}/empty.txt"),
    error("run_classifier", "cls-missing-data-dir", ["--do_train", "--output_dir=" + out("q"), "--task_name=MRPC", "--data_dir={T}/nodir", *CLS], "{T}/nodir"),
    error("run_classifier", "cls-missing-init-checkpoint", ["--do_train", "--output_dir=" + out("r"), *CLS_MRPC, "--init_checkpoint={T}/nockpt/model.ckpt"], "{T}/nockpt"),
    error("run_classifier", "cls-vocab-bigger-than-config", ["--do_train", "--output_dir=" + out("s"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/small_vocab_config.json", "--max_seq_length=32"], "vocab"),
    error("run_classifier", "custom-missing-train-file", ["--do_train", "--output_dir=" + out("t"), *CUSTOM, "--train_file={T}/nope.tsv"], "{T}/nope.tsv"),
    error("run_classifier", "custom-empty-train-file", ["--do_train", "--output_dir=" + out("u"), *CUSTOM, "--train_file={T}/empty.tsv"], "{T}/empty.tsv"),
    error("run_classifier", "custom-header-only", ["--do_train", "--output_dir=" + out("v"), *CUSTOM, "--train_file={T}/header_only.tsv"], "{T}/header_only.tsv"),
    error("run_classifier", "custom-single-class", ["--do_train", "--output_dir=" + out("w"), *CUSTOM, "--train_file={T}/single_class.tsv"], "{T}/single_class.tsv"),
    error("run_classifier", "custom-short-row", ["--do_train", "--output_dir=" + out("x"), *CUSTOM, "--train_file={T}/short_row.tsv"], "{T}/short_row.tsv:3"),
    error("run_classifier", "custom-no-header-flag-on-header-file", ["--do_train", "--output_dir=" + out("y"), *CUSTOM, "--train_file={T}/two_class.tsv", "--has_header=false"], "{T}/two_class.tsv:1"),
    error("run_classifier", "custom-unknown-label-column", ["--do_train", "--output_dir=" + out("z"), *CUSTOM[:-1], "--label_column=polarity", "--train_file={T}/two_class.tsv"], "polarity"),
    error("run_classifier", "custom-label-column-out-of-range", ["--do_train", "--output_dir=" + out("aa"), *CUSTOM[:-1], "--label_column=7", "--train_file={T}/two_class.tsv"], "{T}/two_class.tsv"),
    error("run_classifier", "custom-non-utf8", ["--do_train", "--output_dir=" + out("ab"), *CUSTOM, "--train_file={T}/latin1.tsv"], "{T}/latin1.tsv"),
    error("run_classifier", "cls-eval-without-checkpoint", ["--do_eval", "--output_dir=" + out("ad"), *CLS_MRPC], "checkpoint"),
    error("run_classifier", "cls-config-more-layers-than-checkpoint", ["--do_train", "--output_dir=" + out("ae"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/four_layer_config.json", "--init_checkpoint=" + K, "--max_seq_length=32"], K, "layers"),
    error("run_classifier", "cls-tf2-checkpoint-not-bert", ["--do_train", "--output_dir=" + out("af"), *CLS_MRPC, "--init_checkpoint={T}/tf2/ckpt"], "{T}/tf2/ckpt"),
    error("run_classifier", "cls-keras-hub-dir-without-weights", ["--do_train", "--output_dir=" + out("ag"), *CLS_MRPC, "--init_checkpoint={T}/keras_hub"], "{T}/keras_hub"),
    error("run_classifier", "cls-output-dir-other-settings", ["--do_train", "--output_dir=" + out("reused"), *CLS_MRPC], "--output_dir", "Differences",
          pre="import json, os; os.makedirs(r'{T}/out/reused', exist_ok=True); json.dump({'learning_rate': 1.0}, open(r'{T}/out/reused/run_settings.json', 'w'))"),
    error("run_classifier", "cls-output-dir-second-writer", ["--do_train", "--output_dir=" + out("held"), *CLS_MRPC], "pid", "{T}/out/held"),
    error("run_classifier", "cls-output-dir-is-a-file", ["--do_train", "--output_dir={T}/empty.txt", *CLS_MRPC], "{T}/empty.txt"),
    # Also: the shards of a save that never finished (full disk, kill) are removed.
    correct("run_classifier", "custom-label-trailing-space", ["--do_train", "--output_dir=" + out("trained"), *CUSTOM, "--train_file={T}/trailing_space.tsv", "--train_batch_size=2", "--save_checkpoints_steps=1", "--num_train_epochs=1"], _labels_are(["neg", "pos"]),
            pre="import os; os.makedirs(r'{T}/out/trained/checkpoints/ckpt-5_temp'); open(r'{T}/out/trained/checkpoints/ckpt-5_temp/part-00000-of-00001.data-00000-of-00001', 'w').write('x' * 1000)"),
    error("run_classifier", "custom-text-column-is-label-column", ["--do_train", "--output_dir=" + out("as"), *CUSTOM[:-2], "--text_a_column=label", "--label_column=label", "--train_file={T}/two_class.tsv"], "--text_a_column", "--label_column", "{T}/two_class.tsv"),
    error("run_classifier", "custom-two-columns-of-one-name", ["--do_train", "--output_dir=" + out("at"), *CUSTOM[:-2], "--text_a_column=text", "--label_column=label", "--train_file={T}/dup_columns.tsv"], "{T}/dup_columns.tsv:1", "'text'"),
    error("run_classifier", "custom-train-file-fifo", ["--do_train", "--output_dir=" + out("ar"), *CUSTOM, "--train_file={T}/pipe.tsv"], "{T}/pipe.tsv", "FIFO"),
    error("run_classifier", "custom-dev-label-unseen", ["--do_eval", "--output_dir=" + out("trained"), *CUSTOM, "--train_file={T}/trailing_space.tsv", "--dev_file={T}/dev_unseen_label.tsv"], "{T}/dev_unseen_label.tsv:2"),
    # The run above saved checkpoints 1 and 2: the newest is cut in half.
    correct("run_classifier", "cls-damaged-newest-checkpoint", ["--do_eval", "--output_dir=" + out("trained"), *CUSTOM, "--train_file={T}/trailing_space.tsv", "--dev_file={T}/trailing_space.tsv"], _older_checkpoint_used,
            pre="import glob, os\nindex = max(glob.glob(r'{T}/out/trained/checkpoints/ckpt-*.index'), key=lambda p: int(p[:-6].rsplit('-', 1)[1]))\ndata = index[:-6] + '.data-00000-of-00001'\nos.truncate(data, os.path.getsize(data) // 2)\n"),
    # Predicting with the run (issue 29): its vocabulary, casing and labels win over the flags.
    error("run_classifier", "cls-predict-other-vocab", swap_vocab(PREDICT_TRAINED), "--vocab_file=" + SWAPPED, "{T}/out/trained/vocab.txt"),
    error("run_classifier", "cls-predict-other-casing", [*PREDICT_TRAINED, "--do_lower_case=false"], "--do_lower_case=false", "--do_lower_case=true", "{T}/out/trained"),
    error("run_classifier", "cls-predict-other-labels", [*PREDICT_TRAINED[:-2], "--train_file={T}/three_class.tsv", "--test_file={T}/trailing_space.tsv"], "--train_file={T}/three_class.tsv", "meh,neg,pos", "neg,pos"),
    correct("run_classifier", "cls-predict-as-recorded", PREDICT_TRAINED, _predictions_of_the_trained_run),
    # A vocabulary without [CLS]/[UNK], one segment type for pairs, an export that must fail: before training.
    error("run_classifier", "cls-vocab-without-cls", ["--do_train", "--output_dir=" + out("au"), *[a.replace("--vocab_file=" + V, "--vocab_file={T}/vocab_no_cls.txt") for a in CUSTOM], "--train_file={T}/two_class.tsv"], "{T}/vocab_no_cls.txt", "[CLS]"),
    error("run_classifier", "cls-one-segment-type-pairs", ["--do_train", "--output_dir=" + out("av"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/one_type_config.json", "--max_seq_length=32"], "{T}/one_type_config.json", "type_vocab_size=1"),
    error("run_classifier", "cls-export-dir-is-a-file", ["--do_train", "--output_dir=" + out("cls-export-dir-is-a-file"), *CUSTOM, "--train_file={T}/two_class.tsv", "--export_dir={T}/empty.txt"], "--export_dir={T}/empty.txt", check=_nothing_trained),
    error("run_classifier", "cls-export-version-exists", ["--do_train", "--output_dir=" + out("cls-export-version-exists"), *CUSTOM, "--train_file={T}/two_class.tsv", "--export_dir=" + out("ey"), "--export_version=1"], "{T}/out/ey/1", "already exists", check=_nothing_trained,
          pre="import os; os.makedirs(r'{T}/out/ey/1', exist_ok=True)"),
    error("run_classifier", "custom-jsonl-broken-line", ["--do_train", "--output_dir=" + out("ah"), *CUSTOM[:-2], "--text_a_column=text", "--label_column=label", "--train_file={T}/broken.jsonl"], "{T}/broken.jsonl:2"),
    error("run_classifier", "custom-csv-short-row", ["--do_train", "--output_dir=" + out("ai"), *CUSTOM, "--train_file={T}/short_row.csv"], "{T}/short_row.csv:3"),
    error("run_classifier", "cls-data-dir-without-train-tsv", ["--do_train", "--output_dir=" + out("aj"), "--task_name=MRPC", "--data_dir={T}/keras_hub", *CLS], "{T}/keras_hub/train.tsv"),
    error("run_classifier", "custom-no-train-file", ["--do_train", "--output_dir=" + out("ak"), *CUSTOM], "--train_file"),
    error("run_classifier", "custom-unknown-extension", ["--do_train", "--output_dir=" + out("al"), *CUSTOM, "--train_file={T}/two_class.xyz"], "{T}/two_class.xyz"),
    error("run_classifier", "cls-eval-with-encoder-only-checkpoint", ["--do_eval", "--output_dir=" + out("am"), *CLS_MRPC, "--init_checkpoint=" + K], "--init_checkpoint"),
    error("run_classifier", "cls-config-hidden-not-multiple-of-heads", ["--do_train", "--output_dir=" + out("an"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/odd_hidden_config.json", "--max_seq_length=32"], "{T}/odd_hidden_config.json", "hidden_size"),
    error("run_classifier", "cls-config-unknown-activation", ["--do_train", "--output_dir=" + out("ao"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/bad_act_config.json", "--max_seq_length=32"], "{T}/bad_act_config.json", "hidden_act"),
    error("run_classifier", "cls-config-without-vocab-size", ["--do_train", "--output_dir=" + out("ap"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/no_vocab_config.json", "--max_seq_length=32"], "{T}/no_vocab_config.json", "vocab_size"),
    error("run_classifier", "cls-config-nan-initializer-range", ["--do_train", "--output_dir=" + out("aq"), "--task_name=MRPC", "--data_dir=" + MRPC, "--vocab_file=" + V, "--bert_config_file={T}/nan_config.json", "--max_seq_length=32"], "{T}/nan_config.json", "initializer_range"),
    # --learning_rate=1e9: the loss is NaN after a few steps (the original: "NaN loss during training").
    error("run_classifier", "cls-nan-loss-stops", ["--do_train", "--output_dir=" + out("cls-nan-loss-stops"), *CUSTOM, "--train_file={T}/trailing_space.tsv", "--train_batch_size=2", "--save_checkpoints_steps=1", "--num_train_epochs=10", "--learning_rate=1e9"], "NaN loss during training", "is kept",
          check=_only_finite_checkpoints, slow=True),
    correct("run_classifier", "cls-nan-run-evaluates-last-good", ["--do_eval", "--output_dir=" + out("cls-nan-loss-stops"), *CUSTOM, "--train_file={T}/trailing_space.tsv", "--dev_file={T}/trailing_space.tsv"], _last_good_checkpoint_evaluated, slow=True),
    # ---- run_squad
    error("run_squad", "squad-no-action", ["--output_dir=" + out("sa"), *SQ], "`do_train` or `do_predict`"),
    error("run_squad", "squad-train-without-file", ["--do_train", "--output_dir=" + out("sb"), *SQ], "train_file"),
    error("run_squad", "squad-eval-without-predict", ["--do_train", "--do_eval", "--train_file=" + SQUAD, "--output_dir=" + out("sc"), *SQ], "do_predict"),
    error("run_squad", "squad-missing-predict-file", ["--do_predict", "--predict_file={T}/nope.json", "--init_checkpoint=" + K, "--output_dir=" + out("sd"), *SQ], "{T}/nope.json"),
    error("run_squad", "squad-empty-file", ["--do_train", "--train_file={T}/empty.txt", "--output_dir=" + out("se"), *SQ], "{T}/empty.txt"),
    error("run_squad", "squad-broken-json", ["--do_train", "--train_file={T}/broken.json", "--output_dir=" + out("sf"), *SQ], "{T}/broken.json"),
    error("run_squad", "squad-non-utf8", ["--do_train", "--train_file={T}/latin1.json", "--output_dir=" + out("sg"), *SQ], "{T}/latin1.json"),
    error("run_squad", "squad-duplicate-id", ["--do_train", "--train_file={T}/dup_id.json", "--output_dir=" + out("sh"), *SQ], "{T}/dup_id.json", "q1"),
    error("run_squad", "squad-v2-file-v1-flags", ["--do_train", "--train_file={T}/v2.json", "--output_dir=" + out("si"), *SQ], "{T}/v2.json", "version_2_with_negative"),
    error("run_squad", "squad-seq-le-query", ["--do_train", "--train_file=" + SQUAD, "--output_dir=" + out("sj"), *SQ[:2], "--max_seq_length=16", "--max_query_length=16", "--doc_stride=4"], "max_query_length"),
    error("run_squad", "squad-max-answer-length-0", ["--do_predict", "--predict_file={T}/v1_small.json", "--init_checkpoint=" + K, "--output_dir=" + out("sk"), *SQ, "--max_answer_length=0"], "max_answer_length"),
    error("run_squad", "squad-doc-stride-0", ["--do_train", "--train_file={T}/v1_small.json", "--output_dir=" + out("sl"), *SQ[:-1], "--doc_stride=0"], "doc_stride"),
    error("run_squad", "squad-seq-beyond-positions", ["--do_train", "--train_file={T}/v1_small.json", "--output_dir=" + out("sm"), *SQ[:2], "--max_seq_length=128"], "max_seq_length", "max_position_embeddings"),
    error("run_squad", "squad-predict-without-checkpoint", ["--do_predict", "--predict_file={T}/v1_small.json", "--output_dir=" + out("sn"), *SQ], "checkpoint"),
    error("run_squad", "squad-n-best-0", ["--do_predict", "--predict_file={T}/v1_small.json", "--init_checkpoint=" + K, "--output_dir=" + out("so"), *SQ, "--n_best_size=0"], "n_best_size"),
    error("run_squad", "squad-no-paragraphs", ["--do_train", "--train_file={T}/no_data.json", "--output_dir=" + out("sp"), *SQ], "{T}/no_data.json"),
    error("run_squad", "squad-missing-train-file", ["--do_train", "--train_file={T}/nope.json", "--output_dir=" + out("sq"), *SQ], "{T}/nope.json"),
    error("run_squad", "squad-answer-outside-context", ["--do_train", "--train_file={T}/answer_outside.json", "--output_dir=" + out("sr"), *SQ], "{T}/answer_outside.json", "q1"),
    error("run_squad", "squad-v1-file-v2-flags", ["--do_train", "--version_2_with_negative", "--train_file={T}/v1_small.json", "--output_dir=" + out("ss"), *SQ], "{T}/v1_small.json", "version_2_with_negative"),
    error("run_squad", "squad-two-answers-for-training", ["--do_train", "--train_file={T}/two_answers.json", "--output_dir=" + out("st"), *SQ], "{T}/two_answers.json", "train_answer"),
    error("run_squad", "squad-one-segment-type", ["--do_train", "--train_file={T}/v1_small.json", "--output_dir=" + out("su"), *SQ[:1], "--bert_config_file={T}/one_type_config.json", *SQ[2:]], "{T}/one_type_config.json", "type_vocab_size=1"),
    error("run_squad", "squad-vocab-without-unk", ["--do_train", "--train_file={T}/v1_small.json", "--output_dir=" + out("sv"), "--vocab_file={T}/vocab_no_unk.txt", *SQ[1:]], "{T}/vocab_no_unk.txt", "[UNK]"),
    # ---- run_pretraining
    error("run_pretraining", "pre-no-action", ["--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pa"), *PRE], "`do_train` or `do_eval`"),
    error("run_pretraining", "pre-no-input-file", ["--do_train", "--output_dir=" + out("pa2"), *PRE], "input_file"),
    error("run_pretraining", "pre-no-output-dir", ["--do_train", "--input_file={T}/pretrain.tfrecord", *PRE], "output_dir"),
    error("run_pretraining", "pre-grad-accum-not-dividing-batch", ["--do_train", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pa3"), *PRE, "--gradient_accumulation_steps=3"], "--gradient_accumulation_steps=3"),
    error("run_pretraining", "pre-glob-matches-nothing", ["--do_train", "--input_file={T}/none-*.tfrecord", "--output_dir=" + out("pb"), *PRE], "{T}/none-*.tfrecord", "input_file", "matches no file"),
    error("run_pretraining", "pre-predictions-0", ["--do_train", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pc"), *PRE[:2], "--max_predictions_per_seq=0", "--train_batch_size=2"], "max_predictions_per_seq"),
    error("run_pretraining", "pre-train-steps-0", ["--do_train", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pd"), *PRE[:-1], "--num_train_steps=0"], "num_train_steps"),
    error("run_pretraining", "pre-masked-lm-prob-1", ["--do_train", "--dynamic_masking", "--vocab_file=" + V, "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pe"), *PRE, "--masked_lm_prob=1.5"], "masked_lm_prob"),
    error("run_pretraining", "pre-dynamic-masking-without-vocab", ["--do_train", "--dynamic_masking", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pf"), *PRE], "--dynamic_masking needs --vocab_file"),
    error("run_pretraining", "pre-truncated-in-header", ["--do_train", "--input_file={T}/cut_header.tfrecord", "--init_checkpoint=" + K, "--output_dir=" + out("pg"), *PRE], "{T}/cut_header.tfrecord"),
    error("run_pretraining", "pre-truncated-in-data", ["--do_train", "--input_file={T}/cut_data.tfrecord", "--init_checkpoint=" + K, "--output_dir=" + out("ph"), *PRE], "{T}/cut_data.tfrecord"),
    error("run_pretraining", "pre-classifier-records", ["--do_train", "--input_file={T}/classifier.tfrecord", "--init_checkpoint=" + K, "--output_dir=" + out("pi"), *PRE], "{T}/classifier.tfrecord"),
    error("run_pretraining", "pre-text-file-as-records", ["--do_train", "--input_file=" + TEXT, "--init_checkpoint=" + K, "--output_dir=" + out("pj"), *PRE], TEXT),
    error("run_pretraining", "pre-seq-beyond-positions", ["--do_train", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pk"), *PRE, "--max_seq_length=128"], "max_seq_length", "max_position_embeddings"),
    error("run_pretraining", "pre-export-dir", ["--do_train", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pl"), *PRE, "--export_dir={T}/exp"], "export_dir"),
    error("run_pretraining", "pre-missing-config", ["--do_train", "--input_file={T}/pretrain.tfrecord", "--output_dir=" + out("pm"), "--bert_config_file={T}/nope.json", *PRE[1:]], "{T}/nope.json"),
    error("run_pretraining", "pre-eval-with-encoder-only-checkpoint", ["--do_eval", "--input_file={T}/pretrain.tfrecord", "--init_checkpoint=" + K, "--output_dir=" + out("pn"), *PRE], "--init_checkpoint"),
    correct("run_pretraining", "pre-train-and-eval", ["--do_train", "--do_eval", "--max_eval_steps=2", "--input_file={T}/pretrain.tfrecord", "--init_checkpoint=" + K, "--output_dir=" + out("pre-train-and-eval"), *PRE], _pretraining_eval),
    # ---- run_ner
    error("run_ner", "ner-no-action", ["--output_dir=" + out("na"), "--train_file=" + CONLL, *NER], "do_train"),
    error("run_ner", "ner-no-train-file", ["--do_train", "--output_dir=" + out("nb"), *NER], "train_file"),
    error("run_ner", "ner-missing-train-file", ["--do_train", "--train_file={T}/nope.conll", "--output_dir=" + out("nc"), *NER], "{T}/nope.conll"),
    error("run_ner", "ner-empty-file", ["--do_train", "--train_file={T}/empty.txt", "--output_dir=" + out("nd"), *NER], "{T}/empty.txt"),
    error("run_ner", "ner-bad-tag-strict", ["--do_train", "--strict_tags", "--train_file={T}/bad_tag.conll", "--output_dir=" + out("ne"), *NER], "{T}/bad_tag.conll:3"),
    error("run_ner", "ner-tabs-and-spaces-mixed", ["--do_train", "--train_file={T}/mixed_columns.conll", "--output_dir=" + out("nf"), *NER], "{T}/mixed_columns.conll:2"),
    error("run_ner", "ner-ill-formed-strict", ["--do_train", "--strict_tags", "--train_file={T}/ill_formed.conll", "--output_dir=" + out("nk"), *NER], "{T}/ill_formed.conll:2"),
    error("run_ner", "ner-doc-stride-beyond-window", ["--do_train", "--train_file=" + CONLL, "--doc_stride=100", "--output_dir=" + out("nm"), *NER], "doc_stride"),
    error("run_ner", "ner-bad-tag-scheme", ["--do_train", "--train_file=" + CONLL, "--tag_scheme=xyz", "--output_dir=" + out("ng"), *NER], "tag_scheme"),
    error("run_ner", "ner-non-utf8", ["--do_train", "--train_file={T}/latin1.conll", "--output_dir=" + out("nh"), *NER], "{T}/latin1.conll"),
    error("run_ner", "ner-batch-0", ["--do_train", "--train_file=" + CONLL, "--output_dir=" + out("ni"), *NER, "--train_batch_size=0"], "train_batch_size"),
    error("run_ner", "ner-eval-missing-dev", ["--do_eval", "--dev_file={T}/nope.conll", "--output_dir=" + out("nj"), *NER], "{T}/nope.conll"),
    error("run_ner", "ner-data-dir-without-train-txt", ["--do_train", "--data_dir={T}/keras_hub", "--output_dir=" + out("nl"), *NER], "{T}/keras_hub"),
    error("run_ner", "ner-labels-flag-lacks-a-type", ["--do_train", "--labels=person", "--train_file={T}/ill_formed.conll", "--output_dir=" + out("nn"), *NER], "{T}/ill_formed.conll", "--labels"),
    # Not strict: I-location after O is read as conlleval reads it (a new entity).
    correct("run_ner", "ner-ill-formed-read-as-conlleval", ["--do_train", "--train_batch_size=1", "--num_train_epochs=1", "--train_file={T}/ill_formed.conll", "--output_dir=" + out("ner-ill-formed-read-as-conlleval"), *NER], _ner_labels),
    error("run_ner", "ner-dev-type-unseen-in-training", ["--do_eval", "--dev_file={T}/dev_person.conll", "--output_dir=" + out("ner-ill-formed-read-as-conlleval"), *NER], "{T}/dev_person.conll"),
    error("run_ner", "ner-dev-without-tags", ["--do_eval", "--dev_file={T}/words_only.conll", "--output_dir=" + out("ner-ill-formed-read-as-conlleval"), *NER], "{T}/words_only.conll"),
    error("run_ner", "ner-predict-other-vocab", ["--do_predict", "--test_file={T}/words_only.conll", "--output_dir=" + NER_TRAINED, *swap_vocab(NER)], "--vocab_file=" + SWAPPED, NER_TRAINED),
    error("run_ner", "ner-predict-other-casing", ["--do_predict", "--test_file={T}/words_only.conll", "--output_dir=" + NER_TRAINED, *NER, "--do_lower_case=false"], "--do_lower_case=false", "--do_lower_case=true"),
    error("run_ner", "ner-predict-other-labels", ["--do_predict", "--test_file={T}/words_only.conll", "--labels=person", "--output_dir=" + NER_TRAINED, *NER], "--labels=person", "O,B-location,I-location"),
    error("run_ner", "ner-vocab-without-unk", ["--do_train", "--train_file=" + CONLL, "--output_dir=" + out("no"), "--vocab_file={T}/vocab_no_unk.txt", *NER[1:]], "{T}/vocab_no_unk.txt", "[UNK]"),
    # ---- prepare_corpus (issue 55): bad inputs, each named, and no shard left behind
    error("prepare_corpus", "pc-truncated-bz2", ["--input_file={T}/truncated-pages-articles.xml.bz2", "--output_dir=" + out("pa")], "{T}/truncated-pages-articles.xml.bz2", "ends early", check=_no_corpus_shard),
    error("prepare_corpus", "pc-not-xml", ["--input_file={T}/not_xml.xml", "--output_dir=" + out("pb")], "{T}/not_xml.xml:1", "XML", check=_no_corpus_shard),
    error("prepare_corpus", "pc-other-schema", ["--input_file={T}/rss.xml", "--output_dir=" + out("pc")], "{T}/rss.xml", "another schema", check=_no_corpus_shard),
    error("prepare_corpus", "pc-parquet-no-text-column", ["--input_file={T}/no_text.parquet", "--output_dir=" + out("pd")], "{T}/no_text.parquet", "--text_column", check=_no_corpus_shard),
    error("prepare_corpus", "pc-jsonl-no-text-field", ["--input_file={T}/no_text.jsonl", "--output_dir=" + out("pe")], "{T}/no_text.jsonl:1", "--text_column", check=_no_corpus_shard),
    error("prepare_corpus", "pc-jsonl-not-json", ["--input_file={T}/broken.jsonl", "--output_dir=" + out("pf")], "{T}/broken.jsonl:2", "not JSON", check=_no_corpus_shard),
    error("prepare_corpus", "pc-empty-after-filtering", ["--input_file={T}/corpus.txt", "--output_dir=" + out("pg")], "{T}/corpus.txt", "--min_document_chars", check=_no_corpus_shard),
    error("prepare_corpus", "pc-output-inside-input", ["--input_file={T}/corpus_in/*.txt", "--output_dir={T}/corpus_in"], "--output_dir={T}/corpus_in", "--input_file"),
    error("prepare_corpus", "pc-glob-matches-nothing", ["--input_file={T}/none-*.jsonl", "--output_dir=" + out("ph")], "{T}/none-*.jsonl"),
    error("prepare_corpus", "pc-dedup-threshold-0", ["--input_file={T}/corpus.txt", "--output_dir=" + out("pi"), "--dedup_threshold=0"], "--dedup_threshold"),
    error("prepare_corpus", "pc-non-utf8", ["--input_file={T}/latin1.txt", "--output_dir=" + out("pj")], "{T}/latin1.txt:1", check=_no_corpus_shard),
    # ---- create_pretraining_data
    error("create_pretraining_data", "cpd-no-input", ["--output_file=" + out("ca") + ".tfrecord", *CPD], "input_file"),
    error("create_pretraining_data", "cpd-glob-matches-nothing", ["--input_file={T}/none-*.txt", "--output_file=" + out("cb") + ".tfrecord", *CPD], "{T}/none-*.txt"),
    error("create_pretraining_data", "cpd-non-utf8", ["--input_file={T}/latin1.txt", "--output_file=" + out("cc") + ".tfrecord", *CPD], "{T}/latin1.txt"),
    error("create_pretraining_data", "cpd-missing-vocab", ["--input_file=" + TEXT, "--output_file=" + out("cd") + ".tfrecord", "--vocab_file={T}/nope.txt"], "{T}/nope.txt"),
    error("create_pretraining_data", "cpd-seq-3", ["--input_file=" + TEXT, "--output_file=" + out("ce") + ".tfrecord", "--vocab_file=" + V, "--max_seq_length=3"], "max_seq_length"),
    error("create_pretraining_data", "cpd-dupe-factor-0", ["--input_file=" + TEXT, "--output_file=" + out("cf") + ".tfrecord", *CPD, "--dupe_factor=0"], "dupe_factor"),
    error("create_pretraining_data", "cpd-masked-lm-prob-negative", ["--input_file=" + TEXT, "--output_file=" + out("cg") + ".tfrecord", *CPD, "--masked_lm_prob=-0.1"], "masked_lm_prob"),
    error("create_pretraining_data", "cpd-num-tasks-0", ["--input_file=" + TEXT, "--output_file=" + out("ch") + ".tfrecord", *CPD, "--num_tasks=0"], "num_tasks"),
    error("create_pretraining_data", "cpd-task-index-out-of-range", ["--input_file=" + TEXT, "--output_file=" + out("ci") + ".tfrecord", *CPD, "--num_tasks=2", "--task_index=2"], "task_index"),
    error("create_pretraining_data", "cpd-output-dir-missing", ["--input_file=" + TEXT, "--output_file={T}/empty.txt/x.tfrecord", *CPD], "{T}/empty.txt"),
    error("create_pretraining_data", "cpd-empty-input", ["--input_file={T}/empty.txt", "--output_file=" + out("cj") + ".tfrecord", *CPD], "{T}/empty.txt"),
    # Data loss: an output that is an input (itself, a glob match, a symlink to it, the vocab).
    error("create_pretraining_data", "cpd-output-is-input", ["--input_file={T}/corpus.txt", "--output_file={T}/corpus.txt", *CPD], "--output_file={T}/corpus.txt", "--input_file", check=_corpus_intact),
    error("create_pretraining_data", "cpd-output-matches-input-glob", ["--input_file={T}/corp*.txt", "--output_file={T}/corpus.txt", *CPD], "--output_file={T}/corpus.txt", "--input_file", check=_corpus_intact),
    error("create_pretraining_data", "cpd-output-links-to-input", ["--input_file={T}/corpus.txt", "--output_file={T}/out/corpus_link.tfrecord", *CPD], "--output_file={T}/out/corpus_link.tfrecord", "{T}/corpus.txt", check=_corpus_intact,
          pre="import os; os.path.lexists(r'{T}/out/corpus_link.tfrecord') or os.symlink(r'{T}/corpus.txt', r'{T}/out/corpus_link.tfrecord')"),
    error("create_pretraining_data", "cpd-output-is-vocab", ["--input_file={T}/corpus.txt", "--output_file={T}/vocab_copy.txt", "--vocab_file={T}/vocab_copy.txt", "--max_seq_length=32"], "--output_file={T}/vocab_copy.txt", "--vocab_file"),
    # File-system faults: a full disk, a FIFO, symlink loops, dangling symlinks, a directory as a file.
    error("create_pretraining_data", "cpd-output-disk-full", ["--input_file={T}/corpus.txt", "--output_file=/dev/full", *CPD], "/dev/full", "No space left on device"),
    # Issue 61.9: Beam's user errors (each was our line inside Beam's traceback,
    # a raw ValueError, or 154 lines of Beam's usage).
    error("create_pretraining_data", "cpd-beam-non-utf8", ["--runner=DirectRunner", "--input_file={T}/latin1.txt", "--output_file=" + out("cq") + ".tfrecord", *CPD], "{T}/latin1.txt", slow=True),
    error("create_pretraining_data", "cpd-beam-unknown-runner", ["--runner=Bogus", "--input_file={T}/corpus.txt", "--output_file=" + out("cr") + ".tfrecord", *CPD], "--runner='Bogus'"),
    error("create_pretraining_data", "cpd-beam-bad-option-value", ["--runner=DirectRunner", "--beam_options=--direct_num_workers=abc", "--input_file={T}/corpus.txt", "--output_file=" + out("cs") + ".tfrecord", *CPD], "--beam_options='--direct_num_workers=abc'", "invalid int value"),
    error("create_pretraining_data", "cpd-input-fifo", ["--input_file={T}/pipe.txt", "--output_file=" + out("cm") + ".tfrecord", *CPD], "{T}/pipe.txt", "FIFO"),
    error("create_pretraining_data", "cpd-input-symlink-loop", ["--input_file={T}/loop.txt", "--output_file=" + out("cn") + ".tfrecord", *CPD], "{T}/loop.txt"),
    error("create_pretraining_data", "cpd-vocab-dangling-symlink", ["--input_file={T}/corpus.txt", "--output_file=" + out("co") + ".tfrecord", "--vocab_file={T}/dangling.txt"], "{T}/dangling.txt"),
    error("create_pretraining_data", "cpd-vocab-is-a-directory", ["--input_file={T}/corpus.txt", "--output_file=" + out("cp") + ".tfrecord", "--vocab_file={T}/keras_hub"], "{T}/keras_hub"),
    error("create_pretraining_data", "cpd-vocab-without-cls", ["--input_file={T}/corpus.txt", "--output_file=" + out("cq") + ".tfrecord", "--vocab_file={T}/vocab_no_cls.txt"], "{T}/vocab_no_cls.txt", "[CLS]"),
    # The vocabulary's casing against --do_lower_case (the original only knew seven checkpoint names).
    error("create_pretraining_data", "cpd-cased-vocab-lower-cased", ["--input_file={T}/corpus.txt", "--output_file=" + out("ck") + ".tfrecord", "--vocab_file={D}/vocab/bert-base-cased/vocab.txt", "--max_seq_length=32"], "--do_lower_case=true", "{D}/vocab/bert-base-cased/vocab.txt", "--do_lower_case=false"),
    error("create_pretraining_data", "cpd-uncased-vocab-not-lower-cased", ["--input_file={T}/corpus.txt", "--output_file=" + out("cl") + ".tfrecord", *CPD, "--do_lower_case=false"], "--do_lower_case=false", V, "--do_lower_case=true"),
    correct("create_pretraining_data", "cpd-sample-text", ["--input_file=" + TEXT, "--output_file=" + out("cpd-sample-text") + ".tfrecord", *CPD, "--dupe_factor=1"], _pretraining_records),
    # ---- extract_features
    error("extract_features", "ext-missing-input", ["--input_file={T}/nope.txt", "--output_file=" + out("ea") + ".jsonl", *EXT], "{T}/nope.txt"),
    error("extract_features", "ext-missing-checkpoint", ["--input_file=" + TEXT, "--output_file=" + out("eb") + ".jsonl", *EXT[:2], "--layers=-1", "--init_checkpoint={T}/nockpt/model.ckpt", "--max_seq_length=16"], "{T}/nockpt"),
    error("extract_features", "ext-bad-layers", ["--input_file=" + TEXT, "--output_file=" + out("ec") + ".jsonl", *EXT, "--layers=-9"], "layers"),
    error("extract_features", "ext-layers-not-int", ["--input_file=" + TEXT, "--output_file=" + out("ed") + ".jsonl", *EXT, "--layers=a,b"], "layers"),
    error("extract_features", "ext-non-utf8", ["--input_file={T}/latin1.txt", "--output_file=" + out("ee") + ".jsonl", *EXT], "{T}/latin1.txt"),
    error("extract_features", "ext-batch-0", ["--input_file=" + TEXT, "--output_file=" + out("ef") + ".jsonl", *EXT, "--batch_size=0"], "batch_size"),
    error("extract_features", "ext-seq-beyond-positions", ["--input_file=" + TEXT, "--output_file=" + out("eg") + ".jsonl", *EXT[:-2], "--layers=-1", "--max_seq_length=128"], "max_seq_length"),
    error("extract_features", "ext-config-more-layers", ["--input_file=" + TEXT, "--output_file=" + out("eh") + ".jsonl", "--vocab_file=" + V, "--bert_config_file={T}/four_layer_config.json", "--init_checkpoint=" + K, "--max_seq_length=16"], K, "layers"),
    correct("extract_features", "ext-two-lines", ["--input_file={T}/two_lines.txt", "--output_file=" + out("ext-two-lines") + ".jsonl", *EXT, "--layers=-1"], _features_of_two_lines),
    # ---- export_saved_model
    error("export_saved_model", "exp-no-model-type", ["--init_checkpoint=" + K, "--export_dir=" + out("xa"), *EXP], "model_type"),
    error("export_saved_model", "exp-bad-model-type", ["--model_type=nope", "--init_checkpoint=" + K, "--export_dir=" + out("xb"), *EXP], "model_type"),
    error("export_saved_model", "exp-missing-checkpoint", ["--model_type=encoder", "--init_checkpoint={T}/nockpt/model.ckpt", "--export_dir=" + out("xc"), *EXP], "{T}/nockpt"),
    error("export_saved_model", "exp-tagger-without-labels", ["--model_type=tagger", "--init_checkpoint=" + K, "--export_dir=" + out("xd"), *EXP], "labels"),
    error("export_saved_model", "exp-labels-and-task", ["--model_type=classifier", "--labels=a,b", "--task_name=MRPC", "--init_checkpoint=" + K, "--export_dir=" + out("xe"), *EXP], "labels", "task_name"),
    error("export_saved_model", "exp-no-export-dir", ["--model_type=encoder", "--init_checkpoint=" + K, *EXP], "export_dir"),
    error("export_saved_model", "exp-seq-beyond-positions", ["--model_type=encoder", "--init_checkpoint=" + K, "--export_dir=" + out("xf"), *EXP, "--max_seq_length=128"], "max_seq_length"),
    error("export_saved_model", "exp-tf2-not-bert", ["--model_type=encoder", "--init_checkpoint={T}/tf2/ckpt", "--export_dir=" + out("xg"), *EXP], "{T}/tf2/ckpt"),
    error("export_saved_model", "exp-span-doc-stride-0", ["--model_type=span", "--doc_stride=0", "--init_checkpoint=" + K, "--export_dir=" + out("xj"), *EXP], "doc_stride"),
    error("export_saved_model", "exp-unknown-task", ["--model_type=classifier", "--task_name=nope", "--init_checkpoint=" + K, "--export_dir=" + out("xh"), *EXP], "task_name", "nope"),
    # Export collisions and versions TF Serving never loads.
    error("export_saved_model", "exp-version-negative", ["--model_type=encoder", "--export_version=-1", "--init_checkpoint=" + K, "--export_dir=" + out("xk"), *EXP], "--export_version=-1", slow=True),
    error("export_saved_model", "exp-export-dir-is-a-file", ["--model_type=encoder", "--init_checkpoint=" + K, "--export_dir={T}/empty.txt", *EXP], "--export_dir={T}/empty.txt", slow=True),
    error("export_saved_model", "exp-version-exists", ["--model_type=encoder", "--export_version=1", "--init_checkpoint=" + K, "--export_dir=" + out("xl"), *EXP], "{T}/out/xl/1", "already exists", slow=True,
          pre="import os; os.makedirs(r'{T}/out/xl/1', exist_ok=True)"),
    # Exporting a run (issue 29): its vocabulary, casing and labels win (slow: after the fast pass trained it).
    error("export_saved_model", "exp-run-other-vocab", [*EXP_TRAINED, "--vocab_file=" + SWAPPED, "--export_dir=" + out("xm")], "--vocab_file=" + SWAPPED, "{T}/out/trained/vocab.txt", slow=True),
    error("export_saved_model", "exp-run-other-casing", [*EXP_TRAINED, "--do_lower_case=false", "--export_dir=" + out("xn")], "--do_lower_case=false", "--do_lower_case=true", slow=True),
    error("export_saved_model", "exp-run-labels-reversed", [*EXP_TRAINED, "--labels=pos,neg", "--export_dir=" + out("xo")], "--labels=pos,neg", "neg,pos", slow=True),
    error("export_saved_model", "exp-tagger-labels-reordered", ["--model_type=tagger", "--init_checkpoint=" + NER_TRAINED, "--labels=O,I-location,B-location", "--export_dir=" + out("xp"), *EXP], "--labels=O,I-location,B-location", "O,B-location,I-location", slow=True),
    correct("export_saved_model", "exp-run-as-recorded", [*EXP_TRAINED, "--export_dir=" + out("exp-run-as-recorded")], _exported_with_the_run_record, slow=True),
    # --labels with new names renames the run's, in label-id order (recorded).
    correct("export_saved_model", "exp-run-labels-renamed", [*EXP_TRAINED, "--labels=negative,positive", "--export_dir=" + out("exp-run-labels-renamed")], _exported_with_renamed_labels, slow=True),
    error("export_saved_model", "exp-run-labels-other-count", [*EXP_TRAINED, "--labels=a,b,c", "--export_dir=" + out("xs2")], "--labels=a,b,c", "3 labels", "neg,pos", slow=True),
    error("export_saved_model", "exp-vocab-without-unk", ["--model_type=encoder", "--init_checkpoint=" + K, "--export_dir=" + out("xq"), "--vocab_file={T}/vocab_no_unk.txt", *EXP[1:]], "{T}/vocab_no_unk.txt", "[UNK]"),
    error("export_saved_model", "exp-span-one-segment-type", ["--model_type=span", "--init_checkpoint=" + K, "--export_dir=" + out("xr"), "--vocab_file=" + V, "--bert_config_file={T}/one_type_config.json", "--max_seq_length=32"], "{T}/one_type_config.json", "type_vocab_size=1"),
    error("export_saved_model", "exp-custom-task-without-labels", ["--model_type=classifier", "--task_name=custom", "--init_checkpoint=" + K, "--export_dir=" + out("xi"), *EXP], "labels"),
    # ---- issue 50: embedding, similarity, retrieval and export paths
    error("embed", "emb-batch-negative", [*EMB, "--output_file=" + out("ma") + ".npy", "--batch_size=-1"], "--batch_size"),
    error("embed", "emb-batch-0", [*EMB, "--output_file=" + out("mb") + ".npy", "--batch_size=0"], "--batch_size"),
    error("embed", "emb-seq-2", [*EMB, "--output_file=" + out("mc") + ".npy", "--max_seq_length=2"], "--max_seq_length=2"),
    error("embed", "emb-seq-negative", [*EMB, "--output_file=" + out("mc") + ".npy", "--max_seq_length=-5"], "--max_seq_length=-5"),
    error("embed", "emb-seq-1", [*EMB, "--output_file=" + out("mc") + ".npy", "--max_seq_length=1"], "--max_seq_length=1"),
    error("embed", "emb-seq-beyond-positions", [*EMB, "--output_file=" + out("mc") + ".npy", "--max_seq_length=100"], "--max_seq_length=100", "64"),
    error("embed", "emb-output-is-input", [*EMB, "--output_file={T}/two_lines.txt"], "--output_file={T}/two_lines.txt", "--input_file",
          check=_input_intact("two_lines.txt", "The cat sat.\nHello world ||| again\n")),
    error("embed", "emb-pooling-cls-on-mean-model", [*EMB, "--output_file=" + out("md") + ".npy", "--pooling=cls"], "--pooling='cls'", "'mean'"),
    error("embed", "emb-plain-bert-without-pooling", ["--init_checkpoint={T}/plain", "--input_file={T}/two_lines.txt", "--output_file=" + out("me") + ".npy"], "--pooling=", "{T}/plain"),
    error("run_similarity", "sim-seq-2", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--score_scale=5", "--output_dir=" + out("ta"), *SIM, "--max_seq_length=2"], "--max_seq_length=2"),
    error("run_similarity", "sim-seq-negative", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--score_scale=5", "--output_dir=" + out("tb"), *SIM, "--max_seq_length=-5"], "--max_seq_length"),
    error("run_similarity", "sim-seq-1", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--score_scale=5", "--output_dir=" + out("tc"), *SIM, "--max_seq_length=1"], "--max_seq_length=1"),
    error("run_similarity", "sim-dev-score-nan", ["--do_eval", "--dev_file={T}/sts_nan.tsv", "--output_dir=" + out("td"), *SIM], "{T}/sts_nan.tsv:4", "nan"),
    # Issue 61.15: a correlation of constant scores (before: numpy's
    # RuntimeWarning and nan in eval_results.txt, exit 0).
    error("run_similarity", "sim-dev-scores-constant", ["--do_eval", "--dev_file={T}/sts_constant.tsv", "--output_dir=" + out("tj"), *SIM], "{T}/sts_constant.tsv", "every score 2", "undefined"),
    error("run_similarity", "sim-dev-one-row", ["--do_eval", "--dev_file={T}/sts_one_row.tsv", "--output_dir=" + out("tk"), *SIM], "{T}/sts_one_row.tsv", "1 row,", "undefined"),
    error("run_similarity", "sim-dev-score-true", ["--do_eval", "--dev_file={T}/sts_true.jsonl", "--output_dir=" + out("te"), *SIM], "{T}/sts_true.jsonl:1", "True"),
    error("run_similarity", "sim-0-5-scores-without-scale", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--output_dir=" + out("tf"), *SIM], "{T}/sts_0_5.tsv", "0.5 to 4.5", "--score_scale=5"),
    error("run_similarity", "sim-scaled-beyond-1", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--score_scale=2", "--output_dir=" + out("tg"), *SIM], "--score_scale=2", "2.25"),
    error("run_similarity", "sim-one-column-twice", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--score_scale=5", "--text_b_column=sentence1", "--output_dir=" + out("th"), *SIM], "--text_a_column", "--text_b_column", "'sentence1'"),
    error("run_similarity", "sim-mnr-batch-1", ["--do_train", "--train_file={T}/sts_0_5.tsv", "--loss=mnr", "--train_batch_size=1", "--output_dir=" + out("ti"), *SIM], "--loss=mnr", "--train_batch_size"),
    error("run_classifier", "cls-seq-2", ["--do_train", "--output_dir=" + out("h2"), *CLS_MRPC[:-1], "--max_seq_length=2"], "--max_seq_length=2"),
    error("run_classifier", "cls-seq-1", ["--do_train", "--output_dir=" + out("h3"), *CLS_MRPC[:-1], "--max_seq_length=1"], "--max_seq_length=1"),
    error("run_classifier", "cls-seq-negative", ["--do_train", "--output_dir=" + out("h4"), *CLS_MRPC[:-1], "--max_seq_length=-5"], "--max_seq_length"),
    error("create_pretraining_data", "cpd-short-seq-prob-negative", ["--input_file={T}/corpus.txt", "--output_file=" + out("cr") + ".tfrecord", *CPD, "--short_seq_prob=-0.1"], "short_seq_prob", "-0.1"),
    error("create_pretraining_data", "cpd-short-seq-prob-above-1", ["--input_file={T}/corpus.txt", "--output_file=" + out("cs") + ".tfrecord", *CPD, "--short_seq_prob=1.5"], "short_seq_prob", "1.5"),
    error("export_saved_model", "exp-embedding-plain-bert", ["--model_type=embedding", "--init_checkpoint={T}/plain", "--export_dir=" + out("xs")], "--pooling=", "{T}/plain"),
    error("export_saved_model", "exp-embedding-seq-beyond-positions", ["--model_type=embedding", "--init_checkpoint={T}/st", "--max_seq_length=100", "--export_dir=" + out("xt")], "--max_seq_length=100", "64"),
    correct("export_saved_model", "exp-embedding-seq-16", ["--model_type=embedding", "--init_checkpoint={T}/st", "--max_seq_length=16", "--export_dir=" + out("exp-embedding-seq-16")], _saved_model_seq_length(16), slow=True),
    correct("export_litert", "lite-embedding-seq-16", ["--model_type=embedding", "--init_checkpoint={T}/st", "--max_seq_length=16", "--quantization=none", "--output_file=" + out("lite-embedding-seq-16") + ".tflite"], _litert_seq_length(16), slow=True),
    error("run_retrieval", "ret-id-with-space", ["--do_index", "--output_dir=" + out("ra"), *RET[:-1], "--data_dir={T}/beir_space_id"], "{T}/beir_space_id/corpus.jsonl:11", "'d 9'"),
    error("run_retrieval", "ret-empty-query", ["--do_eval", "--output_dir=" + out("rb"), *RET[:-1], "--data_dir={T}/beir_empty_query"], "{T}/beir_empty_query/queries.jsonl:6", "'q9'"),
    error("run_retrieval", "ret-passage-length-beyond-encoder", ["--do_index", "--passage_length=500", "--output_dir=" + out("rc"), *RET], "--passage_length=500", "62"),
    # Issue 61.7: fusion flags that cannot act, rescoring a hybrid search,
    # zero weights (before: each ran, the flag dropped without a word).
    error("run_retrieval", "ret-fusion-without-hybrid", ["--do_eval", "--fusion=weighted", "--output_dir=" + out("rf1"), *RET], "--fusion=weighted", "--retrieval_mode=dense"),
    error("run_retrieval", "ret-weights-with-rrf", ["--do_eval", "--retrieval_mode=hybrid", "--dense_weight=0.7", "--output_dir=" + out("rf2"), *RET], "--dense_weight=0.7", "--fusion=rrf"),
    error("run_retrieval", "ret-zero-weights", ["--do_eval", "--retrieval_mode=hybrid", "--fusion=weighted", "--dense_weight=0", "--bm25_weight=0", "--output_dir=" + out("rf3"), *RET], "--dense_weight=0 --bm25_weight=0"),
    error("run_retrieval", "ret-rescore-hybrid", ["--do_eval", "--retrieval_mode=hybrid", "--vector_type=int8", "--rescore_k=50", "--output_dir=" + out("rf4"), *RET], "--rescore_k=50", "hybrid"),
    error("run_retrieval", "ret-milvus-path-not-a-database", ["--do_index", "--milvus_uri={T}/not_a_database.db", "--output_dir=" + out("rd"), *RET], "--milvus_uri={T}/not_a_database.db", "not a Milvus Lite database"),
    correct("run_retrieval", "ret-passage-ids-never-document-ids", ["--do_index", "--do_eval", "--passage_length=16", "--output_dir=" + out("ret-passage-ids-never-document-ids"), *RET], _every_document_in_the_run, slow=True),
    error("run_retrieval", "ret-eval-other-passage-length", ["--do_eval", "--passage_length=8", "--output_dir=" + out("ret-passage-ids-never-document-ids"), *RET], "--overwrite_index", "does not match", slow=True),
    correct("run_retrieval", "ret-ivf-on-few-passages-warns", ["--do_index", "--index_type=IVF_FLAT", "--output_dir=" + out("ret-ivf-on-few-passages-warns"), *RET], _ivf_warned, slow=True),
    # (Last: a Beam run in the driver leaves INFO logs off for the runs after it.)
    error("run_retrieval", "ret-beam-id-in-two-shards", ["--do_index", "--runner=DirectRunner", "--corpus_file={T}/shards/*.jsonl", "--output_dir=" + out("rg"), *RET], "'d1' comes from 2 documents", pre=_SHARDS, slow=True),
    error("run_retrieval", "ret-beam-truncated-gz", ["--do_index", "--runner=DirectRunner", "--corpus_file={T}/cut/*.gz", "--output_dir=" + out("rh"), *RET], "{T}/cut/corpus.jsonl.gz", "not a whole gzip file", pre=_CUT_GZ, slow=True),
]
# fmt: on
