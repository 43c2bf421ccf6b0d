"""Tests for bert_tf.data_prep.glue: the other tasks, custom files and bad rows.

Every task but MRPC, SST-2, CoLA and STS-B (whose real files are
tests/test_glue.py's) is checked on small files written here in the standard
GLUE layouts, as are custom files (.tsv, .csv, .jsonl) and the handling of bad
rows. Expected values were worked out by hand from the original
run_classifier.py.
"""

import csv
import json
import logging
import os

import pytest
from glue_files import summary
from glue_files import write

from bert_tf.data_prep import glue


def _tsv(*rows):
    return "".join("\t".join(row) + "\n" for row in rows)


# ---------------------------------------------------------------------------
# Fixture files for the other tasks

MNLI_TRAIN_HEADER = (
    "index promptID pairID genre sentence1_binary_parse sentence2_binary_parse "
    "sentence1_parse sentence2_parse sentence1 sentence2 label1 gold_label"
).split()
MNLI_DEV_HEADER = (
    MNLI_TRAIN_HEADER[:-1] + "label2 label3 label4 label5 gold_label".split()
)
MNLI_TEST_HEADER = MNLI_TRAIN_HEADER[:10]


def _mnli_row(index, genre, premise, hypothesis, labels):
    return [index, "31193", "31193n", genre, "(p)", "(h)", "(P)", "(H)"] + [
        premise,
        hypothesis,
        *labels,
    ]


@pytest.fixture
def mnli_dir(tmp_path):
    d = tmp_path / "MNLI"
    write(
        d / "train.tsv",
        _tsv(
            MNLI_TRAIN_HEADER,
            _mnli_row(
                "0",
                "government",
                "Conceptually cream",
                "Product and",
                ["neutral", "neutral"],
            ),
            _mnli_row(
                "1", "telephone", 'you know "during', "You lose", ["entailment"] * 2
            ),
        ),
    )
    write(
        d / "dev_matched.tsv",
        _tsv(
            MNLI_DEV_HEADER,
            _mnli_row("0", "fiction", "The new rights", "Everyone", ["neutral"] * 6),
            _mnli_row("7", "fiction", "a", "b", ["contradiction"] * 5 + ["entailment"]),
        ),
    )
    write(
        d / "dev_mismatched.tsv",
        _tsv(
            MNLI_DEV_HEADER,
            _mnli_row(
                "0",
                "letters",
                "Your contribution",
                "Your contri",
                ["contradiction"] * 6,
            ),
        ),
    )
    write(
        d / "test_matched.tsv",
        _tsv(MNLI_TEST_HEADER, _mnli_row("0", "fiction", "Hierbas", "Hierbas is", [])),
    )
    write(
        d / "test_mismatched.tsv",
        _tsv(MNLI_TEST_HEADER, _mnli_row("5", "letters", "What", "Not", [])),
    )
    return str(d)


def test_mnli_matched_and_mismatched(mnli_dir):
    processor = glue.get_processor("MNLI")
    assert processor.get_labels() == ["contradiction", "entailment", "neutral"]
    assert [summary(e) for e in processor.get_train_examples(mnli_dir)] == [
        ("train-0", "Conceptually cream", "Product and", "neutral"),
        ("train-1", 'you know "during', "You lose", "entailment"),
    ]
    # label = the last column (gold_label), as the original's line[-1].
    assert [summary(e) for e in processor.get_dev_examples(mnli_dir)] == [
        ("dev_matched-0", "The new rights", "Everyone", "neutral"),
        ("dev_matched-7", "a", "b", "entailment"),
    ]
    assert [summary(e) for e in processor.get_test_examples(mnli_dir)] == [
        ("test-0", "Hierbas", "Hierbas is", "contradiction"),
    ]
    mismatched_dev = [
        ("dev_mismatched-0", "Your contribution", "Your contri", "contradiction")
    ]
    mismatched_test = [("test_mismatched-5", "What", "Not", "contradiction")]
    assert [
        summary(e) for e in processor.get_dev_examples(mnli_dir, matched=False)
    ] == (mismatched_dev)
    assert [
        summary(e) for e in processor.get_test_examples(mnli_dir, matched=False)
    ] == mismatched_test
    mm = glue.get_processor("mnli-mm")
    assert [summary(e) for e in mm.get_dev_examples(mnli_dir)] == mismatched_dev
    assert [summary(e) for e in mm.get_test_examples(mnli_dir)] == mismatched_test
    assert len(mm.get_dev_examples(mnli_dir, matched=True)) == 2


XNLI_HEADER = (
    "language gold_label sentence1_binary_parse sentence2_binary_parse "
    "sentence1_parse sentence2_parse sentence1 sentence2 promptID pairID genre "
    "label1 label2 label3 label4 label5 sentence1_tokenized sentence2_tokenized match"
).split()


def _xnli_row(language, label, premise, hypothesis):
    return (
        [language, label, "", "", "", "", premise, hypothesis, "1", "1", "facetoface"]
        + [label] * 5
        + [premise, hypothesis, "True"]
    )


@pytest.fixture
def xnli_dir(tmp_path):
    d = tmp_path / "XNLI"
    for language in ("zh", "de"):
        write(
            d / "multinli" / f"multinli.train.{language}.tsv",
            _tsv(
                ["premise", "hypo", "label"],
                [f"{language} p1", f"{language} h1", "contradictory"],
                [f"{language} p2", f"{language} h2", "neutral"],
            ),
        )
    rows = [
        _xnli_row("de", "neutral", "de a", "de b"),
        _xnli_row("zh", "entailment", "他说", "他"),
        _xnli_row("en", "neutral", "x", "y"),
        _xnli_row("zh", "contradiction", "妈妈", "没有"),
    ]
    write(d / "xnli.dev.tsv", _tsv(XNLI_HEADER, *rows))
    write(d / "xnli.test.tsv", _tsv(XNLI_HEADER, *reversed(rows)))
    return str(d)


def test_xnli_language_filter_and_mapping(xnli_dir):
    processor = glue.get_processor("xnli")
    assert processor.language == "zh"
    assert [summary(e) for e in processor.get_train_examples(xnli_dir)] == [
        ("train-1", "zh p1", "zh h1", "contradiction"),  # "contradictory" mapped
        ("train-2", "zh p2", "zh h2", "neutral"),
    ]
    # guid = row index in the file (header is row 0), kept after filtering.
    assert [summary(e) for e in processor.get_dev_examples(xnli_dir)] == [
        ("dev-2", "他说", "他", "entailment"),
        ("dev-4", "妈妈", "没有", "contradiction"),
    ]
    assert [summary(e) for e in processor.get_test_examples(xnli_dir)] == [
        ("test-1", "妈妈", "没有", "contradiction"),
        ("test-3", "他说", "他", "entailment"),
    ]
    german = glue.get_processor("xnli", language="de")
    assert [e.text_a for e in german.get_train_examples(xnli_dir)] == ["de p1", "de p2"]
    assert [e.guid for e in german.get_dev_examples(xnli_dir)] == ["dev-1"]


def test_qqp_qnli_rte_wnli_sst2_stsb(tmp_path):
    qqp = tmp_path / "QQP"
    header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    write(
        qqp / "train.tsv",
        _tsv(header, ["133273", "213221", "213222", "How?", "Why?", "0"]),
    )
    write(
        qqp / "dev.tsv", _tsv(header, ["201359", "303345", "303346", "A?", "B?", "1"])
    )
    write(qqp / "test.tsv", _tsv(["id", "question1", "question2"], ["0", "C?", "D?"]))
    # One-row training files: a single class, allowed explicitly.
    p = glue.get_processor("qqp", allow_single_class=True)
    assert summary(p.get_train_examples(str(qqp))[0]) == (
        "train-133273",
        "How?",
        "Why?",
        "0",
    )
    assert summary(p.get_dev_examples(str(qqp))[0]) == ("dev-201359", "A?", "B?", "1")
    assert summary(p.get_test_examples(str(qqp))[0]) == ("test-0", "C?", "D?", "0")

    for task, labels, label in [
        ("qnli", ["entailment", "not_entailment"], "not_entailment"),
        ("rte", ["entailment", "not_entailment"], "entailment"),
        ("wnli", ["0", "1"], "1"),
    ]:
        d = tmp_path / task
        write(
            d / "train.tsv",
            _tsv(["index", "s1", "s2", "label"], ["0", "a", "b", label]),
        )
        write(
            d / "dev.tsv", _tsv(["index", "s1", "s2", "label"], ["3", "c", "d", label])
        )
        write(d / "test.tsv", _tsv(["index", "s1", "s2"], ["9", "e", "f"]))
        p = glue.get_processor(task, allow_single_class=True)
        assert p.get_labels() == labels
        assert summary(p.get_train_examples(str(d))[0]) == ("train-0", "a", "b", label)
        assert summary(p.get_dev_examples(str(d))[0]) == ("dev-3", "c", "d", label)
        # Test sets get the first label as placeholder, as the original does.
        assert summary(p.get_test_examples(str(d))[0]) == (
            "test-9",
            "e",
            "f",
            labels[0],
        )

    sst = tmp_path / "SST-2"
    write(sst / "train.tsv", _tsv(["sentence", "label"], ["good film ", "1"]))
    write(sst / "test.tsv", _tsv(["index", "sentence"], ["0", "bad film"]))
    p = glue.get_processor("sst-2", allow_single_class=True)
    assert summary(p.get_train_examples(str(sst))[0]) == (
        "train-1",
        "good film ",
        None,
        "1",
    )
    assert summary(p.get_test_examples(str(sst))[0]) == (
        "test-1",
        "bad film",
        None,
        "0",
    )

    sts = tmp_path / "STS-B"
    header = (
        "index genre filename year old_index source1 source2 sentence1 sentence2 score"
    )
    row = ["4", "main-captions", "MSRvid", "2012test", "0004", "none", "none", "x", "y"]
    write(sts / "train.tsv", _tsv(header.split(), row + ["3.800"]))
    p = glue.get_processor("sts-b")
    assert summary(p.get_train_examples(str(sts))[0]) == ("train-4", "x", "y", 3.8)


def test_bom_and_literal_double_quotes(tmp_path):
    """A BOM never reaches the first field; quotes are ordinary characters."""
    mrpc = tmp_path / "MRPC"
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    rows = [
        header,
        ["1", "1", "2", 'He said "hi', 'a "quoted" b'],
        ["0", "3", "4", '"', '""'],
    ]
    write(mrpc / "train.tsv", b"\xef\xbb\xbf" + _tsv(*rows).encode())
    examples = glue.MrpcProcessor().get_train_examples(str(mrpc))
    assert [summary(e) for e in examples] == [
        ("train-1", 'He said "hi', 'a "quoted" b', "1"),
        ("train-2", '"', '""', "0"),
    ]
    # The original's csv.reader would give the same fields.
    assert glue.DataProcessor._read_tsv(str(mrpc / "train.tsv"))[1:] == rows[1:]

    # BOM before a header used by name (custom files): the name still matches.
    path = write(
        tmp_path / "bom.tsv",
        b"\xef\xbb\xbf" + _tsv(["sentence", "label"], ["x", "1"]).encode(),
    )
    custom = glue.CustomProcessor(
        train_file=path,
        text_a_column="sentence",
        label_column="label",
        allow_single_class=True,
    )
    assert [summary(e) for e in custom.get_train_examples()] == [
        ("train-0", "x", None, "1")
    ]

    # BOM on a header-less CoLA file stays out of the (unused) first column and
    # of the sentence.
    cola = tmp_path / "CoLA"
    write(
        cola / "train.tsv",
        b"\xef\xbb\xbf" + _tsv(["gj04", "1", "", "It works."]).encode(),
    )
    cola_processor = glue.ColaProcessor(allow_single_class=True)
    assert summary(cola_processor.get_train_examples(str(cola))[0]) == (
        "train-0",
        "It works.",
        None,
        "1",
    )


def test_crlf_line_ends(tmp_path):
    d = tmp_path / "SST-2"
    write(d / "dev.tsv", "sentence\tlabel\r\nfine\t1\r\nbad\t2\r\n")
    with pytest.raises(glue.BadRowError, match=r"dev\.tsv:3: unknown label '2'"):
        glue.Sst2Processor().get_dev_examples(str(d))


# ---------------------------------------------------------------------------
# Custom files


CUSTOM_ROWS = [
    ("the first", "a b", "pos"),
    ('say "hi', "c", "neg"),
    ("third, with comma", "d", "pos"),
]


def _custom_files(tmp_path, header=True):
    """The same rows as .tsv, .csv and .jsonl; returns {format: path}."""
    names = ["text", "pair", "label"]
    rows = ([names] if header else []) + [list(r) for r in CUSTOM_ROWS]
    tsv = write(tmp_path / "train.tsv", _tsv(*rows))
    csv_path = tmp_path / "train.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    jsonl = write(
        tmp_path / "train.jsonl",
        "".join(
            json.dumps(dict(zip(names, r, strict=True)), ensure_ascii=False) + "\n"
            for r in CUSTOM_ROWS
        ),
    )
    return {"tsv": tsv, "csv": str(csv_path), "jsonl": jsonl}


@pytest.mark.parametrize("file_format", ["tsv", "csv", "jsonl"])
def test_custom_by_name(tmp_path, file_format):
    path = _custom_files(tmp_path)[file_format]
    processor = glue.get_processor(
        "custom",
        train_file=os.path.basename(path),
        text_a_column="text",
        text_b_column="pair",
        label_column="label",
    )
    examples = processor.get_train_examples(str(tmp_path))
    assert [summary(e) for e in examples] == [
        (f"train-{i}", a, b, label) for i, (a, b, label) in enumerate(CUSTOM_ROWS)
    ]
    assert processor.get_labels() == ["neg", "pos"]
    # Every processor accepts get_labels(data_dir) (only custom uses it).
    fresh = glue.get_processor(
        "custom",
        train_file=os.path.basename(path),
        text_a_column="text",
        label_column="label",
    )
    assert fresh.get_labels(str(tmp_path)) == ["neg", "pos"]
    assert glue.get_processor("rte").get_labels(str(tmp_path)) == [
        "entailment",
        "not_entailment",
    ]


@pytest.mark.parametrize("file_format", ["tsv", "csv"])
def test_custom_by_index_without_header(tmp_path, file_format):
    path = _custom_files(tmp_path, header=False)[file_format]
    processor = glue.CustomProcessor(
        train_file=path,
        dev_file=path,
        text_a_column=0,
        label_column=2,
        has_header=False,
    )
    assert [summary(e) for e in processor.get_dev_examples()] == [
        (f"dev-{i}", a, None, label) for i, (a, _, label) in enumerate(CUSTOM_ROWS)
    ]


def test_custom_index_with_header_and_unlabelled_test(tmp_path):
    write(tmp_path / "train.tsv", _tsv(["text", "label"], ["x", "b"], ["y", "a"]))
    write(tmp_path / "test.tsv", _tsv(["text"], ["z"]))
    processor = glue.CustomProcessor(
        train_file="train.tsv", test_file="test.tsv", text_a_column=0, label_column=1
    )
    assert processor.get_labels(str(tmp_path)) == ["a", "b"]
    # The test file has no label column: placeholder first label.
    assert [summary(e) for e in processor.get_test_examples(str(tmp_path))] == [
        ("test-0", "z", None, "a")
    ]


def test_custom_regression_and_json_values(tmp_path):
    path = write(
        tmp_path / "r.jsonl",
        '{"s": "a", "y": 0.5}\n{"s": "b", "y": "2"}\n{"s": "c", "y": 3}\n',
    )
    processor = glue.CustomProcessor(
        train_file=path, text_a_column="s", label_column="y", is_regression=True
    )
    assert [e.label for e in processor.get_train_examples()] == [0.5, 2.0, 3.0]
    assert processor.get_labels() == [None]

    path = write(tmp_path / "c.jsonl", '{"s": "a", "y": 1}\n{"s": "b", "y": true}\n')
    processor = glue.CustomProcessor(
        train_file=path, text_a_column="s", label_column="y"
    )
    assert processor.get_labels() == ["1", "true"]


def test_custom_explicit_labels_and_config_errors(tmp_path):
    path = write(tmp_path / "t.tsv", _tsv(["s", "y"], ["a", "c"]))
    processor = glue.CustomProcessor(
        dev_file=path, text_a_column="s", label_column="y", labels=["c", "d"]
    )
    assert processor.get_labels() == ["c", "d"]
    assert [e.label for e in processor.get_dev_examples()] == ["c"]
    with pytest.raises(ValueError, match="no train_file"):
        processor.get_train_examples()
    with pytest.raises(ValueError, match="unknown file type '.txt'"):
        glue.CustomProcessor(
            train_file=str(tmp_path / "x.txt"), text_a_column=0, label_column=1
        ).get_train_examples()
    with pytest.raises(glue.BadRowError, match=r"t\.tsv:1: no column named 'text'"):
        glue.CustomProcessor(
            train_file=path, text_a_column="text", label_column="y"
        ).get_train_examples()


# ---------------------------------------------------------------------------
# Bad rows


def _mrpc_dir(tmp_path, *rows):
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    good = ["1", "1", "2", "a", "b"]
    data = _tsv(header, good).encode() + b"".join(rows)
    write(tmp_path / "train.tsv", data)
    return str(tmp_path)


@pytest.mark.parametrize(
    "row, reason",
    [
        (b"1\t1\t2\tonly four\n", "expected 5 tab-separated columns, found 4"),
        (b"1\t1\t2\ta\tb\textra\n", "expected 5 tab-separated columns, found 6"),
        (b"2\t1\t2\ta\tb\n", "unknown label '2' (expected one of ['0', '1'])"),
        (
            b"1\t1\t2\tcaf\xe9\tb\n",
            "invalid UTF-8 (invalid continuation byte: byte 0xe9 at column 10)",
        ),
        (b"\n", "empty line"),
    ],
    ids=["few-columns", "many-columns", "unknown-label", "bad-utf8", "empty-line"],
)
def test_bad_row_messages(tmp_path, row, reason):
    data_dir = _mrpc_dir(tmp_path, row)
    path = os.path.join(data_dir, "train.tsv")
    with pytest.raises(glue.BadRowError) as info:
        glue.MrpcProcessor().get_train_examples(data_dir)
    assert str(info.value) == f"{path}:3: {reason}"
    assert isinstance(info.value, ValueError)
    assert (info.value.path, info.value.line, info.value.reason) == (path, 3, reason)


def test_bad_rows_in_headerless_cola_count_lines_from_1(tmp_path):
    write(tmp_path / "dev.tsv", _tsv(["s", "1", "", "ok"], ["s", "x", "", "no"]))
    with pytest.raises(glue.BadRowError, match=r"dev\.tsv:2: unknown label 'x'"):
        glue.ColaProcessor().get_dev_examples(str(tmp_path))


def test_bad_regression_score(tmp_path):
    header = (
        "index genre filename year old_index source1 source2 sentence1 sentence2 score"
    )
    row = ["0", "g", "f", "y", "0", "n", "n", "a", "b"]
    write(
        tmp_path / "dev.tsv",
        _tsv(header.split(), row + ["1.5"], row + ["high"], row + ["nan"]),
    )
    with pytest.raises(
        glue.BadRowError, match=r"dev\.tsv:3: label 'high' is not a number"
    ):
        glue.StsbProcessor().get_dev_examples(str(tmp_path))
    processor = glue.StsbProcessor(skip_bad_rows=True)
    assert [e.label for e in processor.get_dev_examples(str(tmp_path))] == [1.5]
    assert [(line, reason) for _, line, reason in processor.skipped] == [
        (3, "label 'high' is not a number"),
        (4, "label 'nan' is not a finite number"),
    ]


def test_bad_custom_rows(tmp_path):
    jsonl = write(
        tmp_path / "train.jsonl",
        '{"s": "a", "y": "p"}\n{"s": "b"}\n[1]\n{"s": \n{"s": 5, "y": "p"}\n'
        '{"s": "c", "y": null}\n',
    )
    processor = glue.CustomProcessor(
        train_file=jsonl,
        text_a_column="s",
        label_column="y",
        skip_bad_rows=True,
        allow_single_class=True,
    )
    assert [e.text_a for e in processor.get_train_examples()] == ["a"]
    reasons = [(line, reason.split(":")[0]) for _, line, reason in processor.skipped]
    assert reasons == [
        (2, "missing key 'y'"),
        (3, "expected a JSON object, got list"),
        (4, "invalid JSON"),
        (5, "text_a is not a string"),
        (6, "label is not a string or number"),
    ]

    # A dev label that the train file does not have.
    train = write(tmp_path / "train.csv", "s,y\na,p\nb,q\n")
    dev = write(tmp_path / "dev.csv", 's,y\n"multi\nline",p\nc,r\n')
    processor = glue.CustomProcessor(
        train_file=train, dev_file=dev, text_a_column="s", label_column="y"
    )
    # The quoted field spans lines 2-3, so the bad row is on line 4.
    with pytest.raises(
        glue.BadRowError,
        match=r"dev\.csv:4: unknown label 'r' \(train labels: \['p', 'q'\]\)",
    ):
        processor.get_dev_examples()

    # Wrong column count in a header-less file: compared with the first row.
    tsv = write(tmp_path / "n.tsv", "a\t0\nb\t1\textra\n")
    with pytest.raises(
        glue.BadRowError, match=r"n\.tsv:2: expected 2 columns, found 3"
    ):
        glue.CustomProcessor(
            train_file=tsv, text_a_column=0, label_column=1, has_header=False
        ).get_train_examples()


def test_skip_bad_rows_counts_and_logs(tmp_path, caplog):
    data_dir = _mrpc_dir(
        tmp_path,
        *[b"1\tbad\n"] * 6,
        b"0\t1\t2\tc\td\n",
        b"1\t1\t2\t\xff\tb\n",
    )
    path = os.path.join(data_dir, "train.tsv")
    processor = glue.get_processor("mrpc", skip_bad_rows=True)
    with caplog.at_level(logging.WARNING):
        examples = processor.get_train_examples(data_dir)
    # guids still name the row of the file.
    assert [summary(e) for e in examples] == [
        ("train-1", "a", "b", "1"),
        ("train-8", "c", "d", "0"),
    ]
    assert [line for _, line, _ in processor.skipped] == [3, 4, 5, 6, 7, 8, 10]
    assert all(p == path for p, _, _ in processor.skipped)
    assert processor.skipped[-1][2].startswith("invalid UTF-8")
    message = " ".join(
        r.getMessage() for r in caplog.records if r.levelno == logging.WARNING
    )
    assert "Skipped 7 bad row(s)" in message
    assert f"{path}:7: expected 5" in message  # 5th skip is logged
    assert f"{path}:8:" not in message  # 6th is only counted


def test_read_tsv_compat_raises_on_bad_bytes(tmp_path):
    path = write(tmp_path / "x.tsv", b"a\tb\nc\xff\n")
    with pytest.raises(glue.BadRowError, match=r"x\.tsv:2: invalid UTF-8"):
        glue.DataProcessor._read_tsv(path)


def test_empty_file_and_unknown_task(tmp_path):
    write(tmp_path / "train.tsv", "")
    with pytest.raises(glue.BadRowError, match=r"train\.tsv:1: empty file"):
        glue.MrpcProcessor().get_train_examples(str(tmp_path))
    with pytest.raises(
        ValueError, match=r"Task not found: 'foo'\. Known tasks: cola, custom, mnli"
    ):
        glue.get_processor("foo")
    assert sorted(glue.PROCESSORS) == [
        "cola",
        "custom",
        "mnli",
        "mnli-mm",
        "mrpc",
        "qnli",
        "qqp",
        "rte",
        "sst-2",
        "sts-b",
        "wnli",
        "xnli",
    ]
