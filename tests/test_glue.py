"""Tests for bert_tf.data_prep.glue: processors, bad-row handling and feature conversion.

Real GLUE files (MRPC, SST-2, CoLA, STS-B) and the uncased vocabulary come from
$BERT_TF_DATA and are skipped without it; every other task is checked on small
files written here in the standard GLUE layouts. Expected values were read off
the files (counts: `wc -l` minus header) and worked out by hand from the
original run_classifier.py.
"""

import csv
import json
import logging
import os

import pytest

from bert_tf.data_prep import glue
from bert_tf.text import tokenization


def _write(path, text, encoding="utf-8"):
    """Writes `text` (str, or bytes as is) and returns the path as str."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = text if isinstance(text, bytes) else text.encode(encoding)
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def _tsv(*rows):
    return "".join("\t".join(row) + "\n" for row in rows)


def _summary(example):
    return (example.guid, example.text_a, example.text_b, example.label)


# ---------------------------------------------------------------------------
# Real GLUE files

MRPC_TRAIN_FIRST = (
    "train-1",
    'Amrozi accused his brother, whom he called "the witness", of deliberately '
    "distorting his evidence.",
    'Referring to him as only "the witness", Amrozi accused his brother of '
    "deliberately distorting his evidence.",
    "1",
)
MRPC_TRAIN_LAST = (
    "train-3668",
    "The 30-year bond US30YT=RR rose 22/32 for a yield of 4.31 percent, versus "
    "4.35 percent at Wednesday's close.",
    "The 30-year bond US30YT=RR grew 1-3/32 for a yield of 4.30 percent, down "
    "from 4.35 percent late Wednesday.",
    "0",
)

# (task, folder, split, count, first, last); (guid, text_a, text_b, label).
REAL_FILES = [
    ("mrpc", "MRPC", "train", 3668, MRPC_TRAIN_FIRST, MRPC_TRAIN_LAST),
    (
        "mrpc",
        "MRPC",
        "dev",
        408,
        (
            "dev-1",
            "He said the foodservice pie business doesn't fit the company's "
            "long-term growth strategy.",
            '"The foodservice pie business does not fit our long-term growth strategy.',
            "1",
        ),
        (
            "dev-408",
            "Ex-KGB agent Putin added that the Beatles were considered 'propaganda "
            "of an alien ideology'.",
            "In Soviet times the Beatles' music \"was considered propaganda of an "
            "alien ideology.",
            "1",
        ),
    ),
    (
        "mrpc",
        "MRPC",
        "test",
        1725,
        (
            "test-1",
            "PCCW's chief operating officer, Mike Butcher, and Alex Arena, the "
            "chief financial officer, will report directly to Mr So.",
            "Current Chief Operating Officer Mike Butcher and Group Chief Financial "
            "Officer Alex Arena will report to So.",
            "0",
        ),
        (
            "test-1725",
            "Sobig.F spreads when unsuspecting computer users open file attachments "
            'in emails that contain such familiar headings as "Thank You!," "Re: '
            'Details" or "Re: That Movie."',
            "The virus spreads when unsuspecting computer users open file "
            'attachments in emails that contain familiar headings like "Thank '
            'You!" and "Re: Details".',
            "0",
        ),
    ),
    (
        "sst-2",
        "SST-2",
        "train",
        67349,
        ("train-1", "hide new secretions from the parental units ", None, "0"),
        (
            "train-67349",
            "this new jangle of noise , mayhem and stupidity must be a serious "
            "contender for the title . ",
            None,
            "0",
        ),
    ),
    (
        "sst-2",
        "SST-2",
        "dev",
        872,
        ("dev-1", "it 's a charming and often affecting journey . ", None, "1"),
        (
            "dev-872",
            "looking aristocratic , luminous yet careworn in jane hamilton 's "
            "exemplary costumes , rampling gives a performance that could not be "
            "improved upon . ' ",
            None,
            "1",
        ),
    ),
    (
        "sst-2",
        "SST-2",
        "test",
        1821,
        ("test-1", "uneasy mishmash of styles and genres .", None, "0"),
        (
            "test-1821",
            "dazzling and sugar-sweet , a blast of shallow magnificence that only "
            "sex , scandal , and a chorus line of dangerous damsels can deliver .",
            None,
            "0",
        ),
    ),
    (
        "cola",
        "CoLA",
        "train",
        8551,
        (
            "train-0",
            "Our friends won't buy this analysis, let alone the next one we propose.",
            None,
            "1",
        ),
        ("train-8550", "What all did you get for Christmas?", None, "1"),
    ),
    (
        "cola",
        "CoLA",
        "dev",
        1043,
        ("dev-0", "The sailors rode the breeze clear of the rocks.", None, "1"),
        ("dev-1042", "John talked to Bill about himself.", None, "1"),
    ),
    (
        "cola",
        "CoLA",
        "test",
        1063,
        ("test-1", "Bill whistled past the house.", None, "0"),
        ("test-1063", "A picture of himself frightened John.", None, "0"),
    ),
    (
        "sts-b",
        "STS-B",
        "train",
        5749,
        ("train-0", "A plane is taking off.", "An air plane is taking off.", 5.0),
        (
            "train-5748",
            "Putin spokesman: Doping charges appear unfounded",
            "The Latest on Severe Weather: 1 Dead in Texas After Tornado",
            0.0,
        ),
    ),
    (
        "sts-b",
        "STS-B",
        "dev",
        1500,
        (
            "dev-0",
            "A man with a hard hat is dancing.",
            "A man wearing a hard hat is dancing.",
            5.0,
        ),
        (
            "dev-1499",
            "New video shows US police officers beating mentally-ill man",
            "New York police officer critically wounded in hatchet attack",
            0.0,
        ),
    ),
    (
        "sts-b",
        "STS-B",
        "test",
        1379,
        ("test-0", "A girl is styling her hair.", "A girl is brushing her hair.", 0.0),
        (
            "test-1378",
            "South Korea declares end to MERS outbreak",
            "North Korea Delegation Meets With South Korean Officials",
            0.0,
        ),
    ),
]

_REAL_CACHE = {}


def _real_examples(shared_data, task, folder, split):
    key = (task, split)
    if key not in _REAL_CACHE:
        processor = glue.get_processor(task)
        data_dir = os.path.join(shared_data, "glue", folder)
        _REAL_CACHE[key] = getattr(processor, f"get_{split}_examples")(data_dir)
    return _REAL_CACHE[key]


@pytest.mark.parametrize(
    "task, folder, split, count, first, last",
    REAL_FILES,
    ids=[f"{row[0]}-{row[2]}" for row in REAL_FILES],
)
def test_real_glue_counts_first_last(
    shared_data, task, folder, split, count, first, last
):
    examples = _real_examples(shared_data, task, folder, split)
    assert len(examples) == count
    assert _summary(examples[0]) == first
    assert _summary(examples[-1]) == last
    # Guids are unique (they name rows in predictions).
    assert len({example.guid for example in examples}) == count


@pytest.mark.parametrize(
    "task, folder, split, labels",
    [
        ("mrpc", "MRPC", "train", {"0": 1194, "1": 2474}),
        ("mrpc", "MRPC", "dev", {"0": 129, "1": 279}),
        ("mrpc", "MRPC", "test", {"0": 1725}),
        ("sst-2", "SST-2", "train", {"0": 29780, "1": 37569}),
        ("sst-2", "SST-2", "dev", {"0": 428, "1": 444}),
        ("cola", "CoLA", "train", {"0": 2528, "1": 6023}),
        ("cola", "CoLA", "dev", {"0": 322, "1": 721}),
        ("cola", "CoLA", "test", {"0": 1063}),
    ],
)
def test_real_glue_label_counts(shared_data, task, folder, split, labels):
    examples = _real_examples(shared_data, task, folder, split)
    counts = {}
    for example in examples:
        counts[example.label] = counts.get(example.label, 0) + 1
    assert counts == labels
    assert set(counts) <= set(glue.get_processor(task).get_labels())


def test_real_stsb_scores(shared_data):
    # (distinct scores, sum of scores), computed from the files' last column.
    expected = {"train": (140, 15528.0434), "dev": (78, 3545.8613)}
    for split, (distinct, total) in expected.items():
        scores = [e.label for e in _real_examples(shared_data, "sts-b", "STS-B", split)]
        assert all(isinstance(s, float) and 0.0 <= s <= 5.0 for s in scores)
        assert len(set(scores)) == distinct
        assert sum(scores) == pytest.approx(total, abs=1e-4)
    assert glue.StsbProcessor().get_labels() == [None]
    assert glue.StsbProcessor.is_regression


def _original_read_tsv(path):
    """The original's _read_tsv on Python 3 (text mode keeps a BOM)."""
    with open(path, encoding="utf-8", newline="") as f:
        return list(csv.reader(f, delimiter="\t", quotechar=None))


@pytest.mark.parametrize("split", ["train", "dev", "test"])
def test_real_mrpc_and_cola_equal_the_original_code(shared_data, split):
    """Our examples equal those of the original processors' code, transcribed."""
    mrpc = _original_read_tsv(os.path.join(shared_data, "glue/MRPC", split + ".tsv"))
    expected = []
    for i, line in enumerate(mrpc):
        if i == 0:
            continue
        label = "0" if split == "test" else line[0]
        expected.append((f"{split}-{i}", line[3], line[4], label))
    got = _real_examples(shared_data, "mrpc", "MRPC", split)
    assert [_summary(e) for e in got] == expected

    cola = _original_read_tsv(os.path.join(shared_data, "glue/CoLA", split + ".tsv"))
    expected = []
    for i, line in enumerate(cola):
        if split == "test" and i == 0:
            continue
        if split == "test":
            expected.append((f"test-{i}", line[1], None, "0"))
        else:
            expected.append((f"{split}-{i}", line[3], None, line[1]))
    got = _real_examples(shared_data, "cola", "CoLA", split)
    assert [_summary(e) for e in got] == expected


def test_real_mrpc_train_starts_with_bom(shared_data):
    """MRPC train/dev start with a UTF-8 BOM (as GLUE ships them)."""
    with open(os.path.join(shared_data, "glue/MRPC/train.tsv"), "rb") as f:
        assert f.read(3) == b"\xef\xbb\xbf"


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
    _write(
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
    _write(
        d / "dev_matched.tsv",
        _tsv(
            MNLI_DEV_HEADER,
            _mnli_row("0", "fiction", "The new rights", "Everyone", ["neutral"] * 6),
            _mnli_row("7", "fiction", "a", "b", ["contradiction"] * 5 + ["entailment"]),
        ),
    )
    _write(
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
    _write(
        d / "test_matched.tsv",
        _tsv(MNLI_TEST_HEADER, _mnli_row("0", "fiction", "Hierbas", "Hierbas is", [])),
    )
    _write(
        d / "test_mismatched.tsv",
        _tsv(MNLI_TEST_HEADER, _mnli_row("5", "letters", "What", "Not", [])),
    )
    return str(d)


def test_mnli_matched_and_mismatched(mnli_dir):
    processor = glue.get_processor("MNLI")
    assert processor.get_labels() == ["contradiction", "entailment", "neutral"]
    assert [_summary(e) for e in processor.get_train_examples(mnli_dir)] == [
        ("train-0", "Conceptually cream", "Product and", "neutral"),
        ("train-1", 'you know "during', "You lose", "entailment"),
    ]
    # label = the last column (gold_label), as the original's line[-1].
    assert [_summary(e) for e in processor.get_dev_examples(mnli_dir)] == [
        ("dev_matched-0", "The new rights", "Everyone", "neutral"),
        ("dev_matched-7", "a", "b", "entailment"),
    ]
    assert [_summary(e) for e in processor.get_test_examples(mnli_dir)] == [
        ("test-0", "Hierbas", "Hierbas is", "contradiction"),
    ]
    mismatched_dev = [
        ("dev_mismatched-0", "Your contribution", "Your contri", "contradiction")
    ]
    mismatched_test = [("test_mismatched-5", "What", "Not", "contradiction")]
    assert [
        _summary(e) for e in processor.get_dev_examples(mnli_dir, matched=False)
    ] == (mismatched_dev)
    assert [
        _summary(e) for e in processor.get_test_examples(mnli_dir, matched=False)
    ] == mismatched_test
    mm = glue.get_processor("mnli-mm")
    assert [_summary(e) for e in mm.get_dev_examples(mnli_dir)] == mismatched_dev
    assert [_summary(e) for e in mm.get_test_examples(mnli_dir)] == mismatched_test
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
        _write(
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
    _write(d / "xnli.dev.tsv", _tsv(XNLI_HEADER, *rows))
    _write(d / "xnli.test.tsv", _tsv(XNLI_HEADER, *reversed(rows)))
    return str(d)


def test_xnli_language_filter_and_mapping(xnli_dir):
    processor = glue.get_processor("xnli")
    assert processor.language == "zh"
    assert [_summary(e) for e in processor.get_train_examples(xnli_dir)] == [
        ("train-1", "zh p1", "zh h1", "contradiction"),  # "contradictory" mapped
        ("train-2", "zh p2", "zh h2", "neutral"),
    ]
    # guid = row index in the file (header is row 0), kept after filtering.
    assert [_summary(e) for e in processor.get_dev_examples(xnli_dir)] == [
        ("dev-2", "他说", "他", "entailment"),
        ("dev-4", "妈妈", "没有", "contradiction"),
    ]
    assert [_summary(e) for e in processor.get_test_examples(xnli_dir)] == [
        ("test-1", "妈妈", "没有", "contradiction"),
        ("test-3", "他说", "他", "entailment"),
    ]
    german = glue.get_processor("xnli", language="de")
    assert [e.text_a for e in german.get_train_examples(xnli_dir)] == ["de p1", "de p2"]
    assert [e.guid for e in german.get_dev_examples(xnli_dir)] == ["dev-1"]


def test_qqp_qnli_rte_wnli_sst2_stsb(tmp_path):
    qqp = tmp_path / "QQP"
    header = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    _write(
        qqp / "train.tsv",
        _tsv(header, ["133273", "213221", "213222", "How?", "Why?", "0"]),
    )
    _write(
        qqp / "dev.tsv", _tsv(header, ["201359", "303345", "303346", "A?", "B?", "1"])
    )
    _write(qqp / "test.tsv", _tsv(["id", "question1", "question2"], ["0", "C?", "D?"]))
    # One-row training files: a single class, allowed explicitly.
    p = glue.get_processor("qqp", allow_single_class=True)
    assert _summary(p.get_train_examples(str(qqp))[0]) == (
        "train-133273",
        "How?",
        "Why?",
        "0",
    )
    assert _summary(p.get_dev_examples(str(qqp))[0]) == ("dev-201359", "A?", "B?", "1")
    assert _summary(p.get_test_examples(str(qqp))[0]) == ("test-0", "C?", "D?", "0")

    for task, labels, label in [
        ("qnli", ["entailment", "not_entailment"], "not_entailment"),
        ("rte", ["entailment", "not_entailment"], "entailment"),
        ("wnli", ["0", "1"], "1"),
    ]:
        d = tmp_path / task
        _write(
            d / "train.tsv",
            _tsv(["index", "s1", "s2", "label"], ["0", "a", "b", label]),
        )
        _write(
            d / "dev.tsv", _tsv(["index", "s1", "s2", "label"], ["3", "c", "d", label])
        )
        _write(d / "test.tsv", _tsv(["index", "s1", "s2"], ["9", "e", "f"]))
        p = glue.get_processor(task, allow_single_class=True)
        assert p.get_labels() == labels
        assert _summary(p.get_train_examples(str(d))[0]) == ("train-0", "a", "b", label)
        assert _summary(p.get_dev_examples(str(d))[0]) == ("dev-3", "c", "d", label)
        # Test sets get the first label as placeholder, as the original does.
        assert _summary(p.get_test_examples(str(d))[0]) == (
            "test-9",
            "e",
            "f",
            labels[0],
        )

    sst = tmp_path / "SST-2"
    _write(sst / "train.tsv", _tsv(["sentence", "label"], ["good film ", "1"]))
    _write(sst / "test.tsv", _tsv(["index", "sentence"], ["0", "bad film"]))
    p = glue.get_processor("sst-2", allow_single_class=True)
    assert _summary(p.get_train_examples(str(sst))[0]) == (
        "train-1",
        "good film ",
        None,
        "1",
    )
    assert _summary(p.get_test_examples(str(sst))[0]) == (
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
    _write(sts / "train.tsv", _tsv(header.split(), row + ["3.800"]))
    p = glue.get_processor("sts-b")
    assert _summary(p.get_train_examples(str(sts))[0]) == ("train-4", "x", "y", 3.8)


def test_bom_and_literal_double_quotes(tmp_path):
    """A BOM never reaches the first field; quotes are ordinary characters."""
    mrpc = tmp_path / "MRPC"
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    rows = [
        header,
        ["1", "1", "2", 'He said "hi', 'a "quoted" b'],
        ["0", "3", "4", '"', '""'],
    ]
    _write(mrpc / "train.tsv", b"\xef\xbb\xbf" + _tsv(*rows).encode())
    examples = glue.MrpcProcessor().get_train_examples(str(mrpc))
    assert [_summary(e) for e in examples] == [
        ("train-1", 'He said "hi', 'a "quoted" b', "1"),
        ("train-2", '"', '""', "0"),
    ]
    # The original's csv.reader would give the same fields.
    assert glue.DataProcessor._read_tsv(str(mrpc / "train.tsv"))[1:] == rows[1:]

    # BOM before a header used by name (custom files): the name still matches.
    path = _write(
        tmp_path / "bom.tsv",
        b"\xef\xbb\xbf" + _tsv(["sentence", "label"], ["x", "1"]).encode(),
    )
    custom = glue.CustomProcessor(
        train_file=path,
        text_a_column="sentence",
        label_column="label",
        allow_single_class=True,
    )
    assert [_summary(e) for e in custom.get_train_examples()] == [
        ("train-0", "x", None, "1")
    ]

    # BOM on a header-less CoLA file stays out of the (unused) first column and
    # of the sentence.
    cola = tmp_path / "CoLA"
    _write(
        cola / "train.tsv",
        b"\xef\xbb\xbf" + _tsv(["gj04", "1", "", "It works."]).encode(),
    )
    cola_processor = glue.ColaProcessor(allow_single_class=True)
    assert _summary(cola_processor.get_train_examples(str(cola))[0]) == (
        "train-0",
        "It works.",
        None,
        "1",
    )


def test_crlf_line_ends(tmp_path):
    d = tmp_path / "SST-2"
    _write(d / "dev.tsv", "sentence\tlabel\r\nfine\t1\r\nbad\t2\r\n")
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
    tsv = _write(tmp_path / "train.tsv", _tsv(*rows))
    csv_path = tmp_path / "train.csv"
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    jsonl = _write(
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
    assert [_summary(e) for e in examples] == [
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
    assert [_summary(e) for e in processor.get_dev_examples()] == [
        (f"dev-{i}", a, None, label) for i, (a, _, label) in enumerate(CUSTOM_ROWS)
    ]


def test_custom_index_with_header_and_unlabelled_test(tmp_path):
    _write(tmp_path / "train.tsv", _tsv(["text", "label"], ["x", "b"], ["y", "a"]))
    _write(tmp_path / "test.tsv", _tsv(["text"], ["z"]))
    processor = glue.CustomProcessor(
        train_file="train.tsv", test_file="test.tsv", text_a_column=0, label_column=1
    )
    assert processor.get_labels(str(tmp_path)) == ["a", "b"]
    # The test file has no label column: placeholder first label.
    assert [_summary(e) for e in processor.get_test_examples(str(tmp_path))] == [
        ("test-0", "z", None, "a")
    ]


def test_custom_regression_and_json_values(tmp_path):
    path = _write(
        tmp_path / "r.jsonl",
        '{"s": "a", "y": 0.5}\n{"s": "b", "y": "2"}\n{"s": "c", "y": 3}\n',
    )
    processor = glue.CustomProcessor(
        train_file=path, text_a_column="s", label_column="y", is_regression=True
    )
    assert [e.label for e in processor.get_train_examples()] == [0.5, 2.0, 3.0]
    assert processor.get_labels() == [None]

    path = _write(tmp_path / "c.jsonl", '{"s": "a", "y": 1}\n{"s": "b", "y": true}\n')
    processor = glue.CustomProcessor(
        train_file=path, text_a_column="s", label_column="y"
    )
    assert processor.get_labels() == ["1", "true"]


def test_custom_explicit_labels_and_config_errors(tmp_path):
    path = _write(tmp_path / "t.tsv", _tsv(["s", "y"], ["a", "c"]))
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
    _write(tmp_path / "train.tsv", data)
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
    _write(tmp_path / "dev.tsv", _tsv(["s", "1", "", "ok"], ["s", "x", "", "no"]))
    with pytest.raises(glue.BadRowError, match=r"dev\.tsv:2: unknown label 'x'"):
        glue.ColaProcessor().get_dev_examples(str(tmp_path))


def test_bad_regression_score(tmp_path):
    header = (
        "index genre filename year old_index source1 source2 sentence1 sentence2 score"
    )
    row = ["0", "g", "f", "y", "0", "n", "n", "a", "b"]
    _write(
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
    jsonl = _write(
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
    train = _write(tmp_path / "train.csv", "s,y\na,p\nb,q\n")
    dev = _write(tmp_path / "dev.csv", 's,y\n"multi\nline",p\nc,r\n')
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
    tsv = _write(tmp_path / "n.tsv", "a\t0\nb\t1\textra\n")
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
    assert [_summary(e) for e in examples] == [
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
    path = _write(tmp_path / "x.tsv", b"a\tb\nc\xff\n")
    with pytest.raises(glue.BadRowError, match=r"x\.tsv:2: invalid UTF-8"):
        glue.DataProcessor._read_tsv(path)


def test_empty_file_and_unknown_task(tmp_path):
    _write(tmp_path / "train.tsv", "")
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


# ---------------------------------------------------------------------------
# Feature conversion


@pytest.fixture(scope="module")
def uncased(shared_data):
    return tokenization.FullTokenizer(
        os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt"),
        do_lower_case=True,
    )


def _features(
    tokenizer, text_a, text_b, max_seq_length, label_list=("0", "1"), label="1"
):
    example = glue.InputExample("g", text_a, text_b, label)
    return glue.convert_single_example(
        9, example, list(label_list), max_seq_length, tokenizer
    )


def test_pair_features_hand_checked(uncased):
    # [CLS] is this jacksonville ? [SEP] no it is not . [SEP] + 4 padding.
    f = _features(uncased, "Is this jacksonville?", "No it is not.", 16)
    assert f.input_ids == [
        101,
        2003,
        2023,
        13057,
        1029,
        102,
        2053,
        2009,
        2003,
        2025,
        1012,
        102,
        0,
        0,
        0,
        0,
    ]
    assert f.input_mask == [1] * 12 + [0] * 4
    assert f.segment_ids == [0] * 6 + [1] * 6 + [0] * 4
    assert f.label_id == 1 and f.is_real_example is True


def test_single_features_hand_checked(uncased):
    # [CLS] the dog is hairy . [SEP] + 3 padding.
    f = _features(uncased, "The dog is hairy.", None, 10, label="0")
    assert f.input_ids == [101, 1996, 3899, 2003, 15892, 1012, 102, 0, 0, 0]
    assert f.input_mask == [1] * 7 + [0] * 3
    assert f.segment_ids == [0] * 10
    assert f.label_id == 0


def test_truncation(uncased):
    # Uncased ids of the one-letter words "a", "b", "c" and "x", "y", "z".
    a, b, c, x, y, z = 1037, 1038, 1039, 1060, 1061, 1062
    # Longer side (A: 6 tokens) loses tokens until 6 + 2 <= 8 - 3.
    feats = _features(uncased, "a b c d e f", "x y", 8)
    assert feats.input_ids == [101, a, b, c, 102, x, y, 102]
    assert feats.segment_ids == [0] * 5 + [1] * 3
    # Tie (3 + 3 > 5): B is popped.
    feats = _features(uncased, "a b c", "x y z", 8)
    assert feats.input_ids == [101, a, b, c, 102, x, y, 102]
    # B longer: B is cut.
    feats = _features(uncased, "a", "x y z a b c", 7)
    assert feats.input_ids == [101, a, 102, x, y, z, 102]
    # Single sequence: cut to max_seq_length - 2.
    feats = _features(uncased, "a b c d e f", None, 5)
    assert feats.input_ids == [101, a, b, c, 102]
    assert feats.input_mask == [1] * 5


def test_empty_text_b_is_a_single_sequence(uncased):
    """As the original: `if example.text_b` and then `if tokens_b`."""
    for text_b in ("", " \t", "\x00"):
        feats = _features(uncased, "a b c d e f", text_b, 6)
        assert feats.input_ids == [101, 1037, 1038, 1039, 1040, 102]
        assert feats.segment_ids == [0] * 6


def test_regression_padding_and_label_errors(uncased):
    feats = _features(uncased, "a", "b", 6, label_list=[None], label=3.8)
    assert feats.label_id == 3.8 and isinstance(feats.label_id, float)
    pad = glue.convert_single_example(
        0, glue.PaddingInputExample(), ["0", "1"], 4, uncased
    )
    assert pad == glue.InputFeatures([0] * 4, [0] * 4, [0] * 4, 0, False)
    pad = glue.convert_single_example(0, glue.PaddingInputExample(), [None], 4, uncased)
    assert pad.label_id == 0.0 and isinstance(pad.label_id, float)
    with pytest.raises(
        ValueError, match=r"example g: label '7' is not in the label list"
    ):
        _features(uncased, "a", None, 6, label="7")


def _tiny_tokenizer(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "##s", "!"]
    path = _write(tmp_path / "vocab.txt", "".join(t + "\n" for t in vocab))
    return tokenization.FullTokenizer(path, do_lower_case=True)


def test_convert_examples_to_features_and_logging(tmp_path, caplog):
    """Runs without BERT_TF_DATA: a tiny vocabulary."""
    tokenizer = _tiny_tokenizer(tmp_path)
    examples = [
        glue.InputExample(
            f"t-{i}", "Hello worlds!", "xyz" if i % 2 else None, str(i % 2)
        )
        for i in range(7)
    ]
    # absl logs through the "absl" logger; other code (e.g. a SavedModel export)
    # may have set its level, so set it here, not only the root level.
    with caplog.at_level(logging.INFO, logger="absl"):
        features = glue.convert_examples_to_features(examples, ["0", "1"], 8, tokenizer)
    assert features[0].input_ids == [2, 4, 5, 6, 7, 3, 0, 0]
    assert features[1].input_ids == [2, 4, 5, 6, 7, 3, 1, 3]  # "xyz" -> [UNK]
    assert features[1].segment_ids == [0] * 6 + [1] * 2
    assert [f.label_id for f in features] == [0, 1, 0, 1, 0, 1, 0]
    guids = [
        r.getMessage() for r in caplog.records if r.getMessage().startswith("guid:")
    ]
    assert guids == [f"guid: t-{i}" for i in range(5)]
    assert "label: 1 (id = 1)" in caplog.text


@pytest.mark.parametrize(
    "task, folder",
    [("mrpc", "MRPC"), ("sst-2", "SST-2"), ("cola", "CoLA"), ("sts-b", "STS-B")],
)
def test_text_pair_matches_the_real_data(shared_data, task, folder):
    """`text_pair` (what an exported SavedModel takes) agrees with the files."""
    examples = _real_examples(shared_data, task, folder, "train")
    assert glue.get_processor(task).text_pair == any(e.text_b for e in examples)
    assert glue.get_processor("custom", text_b_column="b").text_pair
    assert not glue.get_processor("custom").text_pair


# ---------------------------------------------------------------------------
# Labels that never go silently wrong (real GLUE files)


def _real_lines(shared_data, task, name="train.tsv"):
    path = os.path.join(shared_data, "glue", task, name)
    with open(path, "rb") as f:
        return f.read().decode("utf-8-sig").splitlines(keepends=True)


def test_label_whitespace_is_stripped_in_every_task(shared_data, tmp_path):
    lines = _real_lines(shared_data, "SST-2")
    header, rows = lines[0], lines[1:41]
    # Trailing spaces after every other label: the same two classes, not four.
    spaced = [
        row.rstrip("\n") + (" \n" if i % 2 else "\n") for i, row in enumerate(rows)
    ]
    _write(tmp_path / "SST-2" / "train.tsv", header + "".join(spaced))
    examples = glue.get_processor("sst-2").get_train_examples(str(tmp_path / "SST-2"))
    assert {e.label for e in examples} == {"0", "1"}
    expected = [row.rstrip("\n").rsplit("\t", 1)[1] for row in rows]
    assert [e.label for e in examples] == expected

    custom = glue.CustomProcessor(
        train_file=str(tmp_path / "SST-2" / "train.tsv"),
        text_a_column="sentence",
        label_column="label",
    )
    assert custom.get_labels() == ["0", "1"]
    assert [e.label for e in custom.get_train_examples()] == expected
    # An empty label is a bad row (file:line), not a class "".
    _write(tmp_path / "empty.tsv", header + rows[0] + "x\t \n" + rows[1])
    with pytest.raises(glue.BadRowError, match=r"empty\.tsv:3: empty label"):
        glue.CustomProcessor(
            train_file=str(tmp_path / "empty.tsv"),
            text_a_column="sentence",
            label_column="label",
        ).get_labels()


def test_single_class_training_data_is_an_error(shared_data, tmp_path):
    lines = _real_lines(shared_data, "MRPC")
    positives = [line for line in lines[1:] if line.startswith("1\t")][:30]
    _write(tmp_path / "MRPC" / "train.tsv", lines[0] + "".join(positives))
    with pytest.raises(
        ValueError,
        match=r"MRPC/train\.tsv: all 30 training examples have the label '1'.*"
        r"allow_single_class",
    ):
        glue.get_processor("mrpc").get_train_examples(str(tmp_path / "MRPC"))
    allowed = glue.get_processor("mrpc", allow_single_class=True)
    assert len(allowed.get_train_examples(str(tmp_path / "MRPC"))) == 30
    # Custom task: its label list comes from the train file.
    custom = glue.CustomProcessor(
        train_file=str(tmp_path / "MRPC" / "train.tsv"),
        text_a_column="#1 String",
        text_b_column="#2 String",
        label_column="Quality",
    )
    with pytest.raises(ValueError, match="training examples have the label '1'"):
        custom.get_labels()
    # The real file has both classes.
    assert (
        len(
            glue.get_processor("mrpc").get_train_examples(
                os.path.join(shared_data, "glue", "MRPC")
            )
        )
        == 3668
    )


def test_header_like_first_row_without_header_is_an_error(shared_data, tmp_path):
    lines = _real_lines(shared_data, "SST-2")
    path = _write(tmp_path / "train.tsv", "".join(lines[:200]))

    def processor(**options):
        return glue.CustomProcessor(
            train_file=path,
            text_a_column=0,
            label_column=1,
            has_header=False,
            **options,
        )

    # "sentence<TAB>label" read as data would add a third class "label".
    with pytest.raises(
        glue.BadRowError, match=r"train\.tsv:1: this row looks like a header"
    ):
        processor().get_labels()
    assert processor(allow_header_like_first_row=True).get_labels() == [
        "0",
        "1",
        "label",
    ]
    # Without the header line the same file reads as data.
    headerless = _write(tmp_path / "headerless.tsv", "".join(lines[1:200]))
    assert glue.CustomProcessor(
        train_file=headerless, text_a_column=0, label_column=1, has_header=False
    ).get_labels() == ["0", "1"]


def test_header_only_train_file_names_the_file(shared_data, tmp_path):
    for task in ("MRPC", "SST-2", "STS-B"):
        header = _real_lines(shared_data, task)[0]
        _write(tmp_path / task / "train.tsv", header)
        with pytest.raises(
            ValueError,
            match=rf"{task}/train\.tsv: no training example \(an empty or "
            r"header-only file\)",
        ):
            glue.get_processor(task.lower()).get_train_examples(str(tmp_path / task))
    # Custom: the same, from get_labels as from get_train_examples.
    header = _real_lines(shared_data, "SST-2")[0]
    path = _write(tmp_path / "custom.tsv", header)
    custom = glue.CustomProcessor(
        train_file=path, text_a_column="sentence", label_column="label"
    )
    with pytest.raises(ValueError, match=r"custom\.tsv: no training example"):
        custom.get_labels()
    # Every row skipped: said so.
    bad = _write(tmp_path / "bad.tsv", header + "only one column\n")
    skipping = glue.CustomProcessor(
        train_file=bad,
        text_a_column="sentence",
        label_column="label",
        skip_bad_rows=True,
    )
    with pytest.raises(ValueError, match=r"bad\.tsv: .*all 1 data rows were skipped"):
        skipping.get_train_examples()
