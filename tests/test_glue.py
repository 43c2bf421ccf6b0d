"""Tests for bert_tf.data_prep.glue: the real GLUE files, feature conversion and labels.

Real GLUE files (MRPC, SST-2, CoLA, STS-B) and the uncased vocabulary come from
$BERT_TF_DATA and are skipped without it. Expected values were read off
the files (counts: `wc -l` minus header) and worked out by hand from the
original run_classifier.py. The other tasks, custom files and bad rows, on
small files in the standard GLUE layouts, are tests/test_glue_processors.py.
"""

import csv
import logging
import os

import pytest
from glue_files import summary
from glue_files import write

from bert_tf.data_prep import glue
from bert_tf.text import tokenization

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
    assert summary(examples[0]) == first
    assert summary(examples[-1]) == last
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
    assert [summary(e) for e in got] == expected

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
    assert [summary(e) for e in got] == expected


def test_real_mrpc_train_starts_with_bom(shared_data):
    """MRPC train/dev start with a UTF-8 BOM (as GLUE ships them)."""
    with open(os.path.join(shared_data, "glue/MRPC/train.tsv"), "rb") as f:
        assert f.read(3) == b"\xef\xbb\xbf"


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
    path = write(tmp_path / "vocab.txt", "".join(t + "\n" for t in vocab))
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
    write(tmp_path / "SST-2" / "train.tsv", header + "".join(spaced))
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
    write(tmp_path / "empty.tsv", header + rows[0] + "x\t \n" + rows[1])
    with pytest.raises(glue.BadRowError, match=r"empty\.tsv:3: empty label"):
        glue.CustomProcessor(
            train_file=str(tmp_path / "empty.tsv"),
            text_a_column="sentence",
            label_column="label",
        ).get_labels()


def test_single_class_training_data_is_an_error(shared_data, tmp_path):
    lines = _real_lines(shared_data, "MRPC")
    positives = [line for line in lines[1:] if line.startswith("1\t")][:30]
    write(tmp_path / "MRPC" / "train.tsv", lines[0] + "".join(positives))
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
    path = write(tmp_path / "train.tsv", "".join(lines[:200]))

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
    headerless = write(tmp_path / "headerless.tsv", "".join(lines[1:200]))
    assert glue.CustomProcessor(
        train_file=headerless, text_a_column=0, label_column=1, has_header=False
    ).get_labels() == ["0", "1"]


def test_header_only_train_file_names_the_file(shared_data, tmp_path):
    for task in ("MRPC", "SST-2", "STS-B"):
        header = _real_lines(shared_data, task)[0]
        write(tmp_path / task / "train.tsv", header)
        with pytest.raises(
            ValueError,
            match=rf"{task}/train\.tsv: no training example \(an empty or "
            r"header-only file\)",
        ):
            glue.get_processor(task.lower()).get_train_examples(str(tmp_path / task))
    # Custom: the same, from get_labels as from get_train_examples.
    header = _real_lines(shared_data, "SST-2")[0]
    path = write(tmp_path / "custom.tsv", header)
    custom = glue.CustomProcessor(
        train_file=path, text_a_column="sentence", label_column="label"
    )
    with pytest.raises(ValueError, match=r"custom\.tsv: no training example"):
        custom.get_labels()
    # Every row skipped: said so.
    bad = write(tmp_path / "bad.tsv", header + "only one column\n")
    skipping = glue.CustomProcessor(
        train_file=bad,
        text_a_column="sentence",
        label_column="label",
        skip_bad_rows=True,
    )
    with pytest.raises(ValueError, match=r"bad\.tsv: .*all 1 data rows were skipped"):
        skipping.get_train_examples()
