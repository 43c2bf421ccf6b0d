"""--tfds_name input: the same examples and features as the file path.

The TFDS datasets are built offline by TFDS's own builders (`glue`, `squad`,
`conll2003`) from the shared GLUE and SQuAD files (trimmed copies for the
larger ones) into a temporary data dir; MNLI, for which there are no files,
uses `tfds.testing.mock_data`.
"""

import json
import os
import sys
import tempfile
import types

import numpy as np
import pytest
from cli_script import run_script
from tfds_local_files import prepare_from_local_files

pytest.importorskip(
    "tensorflow_datasets", reason="tensorflow-datasets (extra [tfds]) is not installed"
)

import tensorflow_datasets as tfds  # noqa: E402

from bert_tf.data_prep import glue  # noqa: E402
from bert_tf.data_prep import squad as squad_data  # noqa: E402
from bert_tf.data_prep import tfds_input  # noqa: E402
from bert_tf.data_prep.tfds_input import builders  # noqa: E402
from bert_tf.text import tokenization  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Rows kept of each split of the larger GLUE tasks (MRPC is used whole).
TRIMMED_ROWS = 300
SQUAD_ARTICLES = 2

CONLL_TRAIN = """-DOCSTART- -X- -X- O

EU NNP B-NP B-ORG
rejects VBZ B-VP O
German JJ B-NP B-MISC
call NN I-NP O
. . O O

Peter NNP B-NP B-PER
Blackburn NNP I-NP I-PER

BRUSSELS NNP B-NP B-LOC
1996-08-22 CD I-NP O
"""


@pytest.fixture(scope="module", autouse=True)
def temp_dirs_of_tfds_kept_here(tmp_path_factory):
    """TFDS's `DatasetInfo.initialize_from_bucket` makes a `tempfile.mkdtemp("tfds")`
    it never removes (10 per run of this module): those go below pytest's
    temporary folder, here and in the processes the tests start."""
    folder = str(tmp_path_factory.mktemp("tempfile"))
    before = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir = os.environ["TMPDIR"] = folder
    yield folder
    tempfile.tempdir = before[0]
    if before[1] is None:
        del os.environ["TMPDIR"]
    else:
        os.environ["TMPDIR"] = before[1]


@pytest.fixture(scope="module")
def tfds_dirs(shared_data, tmp_path_factory):
    """(TFDS data dir, folder of the trimmed GLUE copies, SQuAD files)."""
    tfds.disable_progress_bar()
    root = tmp_path_factory.mktemp("tfds")
    data_dir = str(root / "tfds_data")
    trimmed = root / "glue"
    for folder in ("SST-2", "CoLA", "STS-B"):
        (trimmed / folder).mkdir(parents=True)
        for split in ("train", "dev", "test"):
            with open(
                os.path.join(shared_data, "glue", folder, split + ".tsv"), "rb"
            ) as f:
                lines = f.read().splitlines(keepends=True)
            (trimmed / folder / (split + ".tsv")).write_bytes(
                b"".join(lines[:TRIMMED_ROWS])
            )
    mrpc = os.path.join(shared_data, "glue", "MRPC")
    prepare_from_local_files(
        "glue/mrpc",
        data_dir,
        {
            "mrpc_dev_ids.tsv": os.path.join(mrpc, "dev_ids.tsv"),
            "msr_paraphrase_train.txt": os.path.join(mrpc, "msr_paraphrase_train.txt"),
            "msr_paraphrase_test.txt": os.path.join(mrpc, "msr_paraphrase_test.txt"),
        },
    )
    for name, archive in (
        ("glue/sst2", "SST-2.zip"),
        ("glue/cola", "CoLA.zip"),
        ("glue/stsb", "STS-B.zip"),
    ):
        prepare_from_local_files(name, data_dir, {archive: trimmed})

    squad_files = _write_squad_files(shared_data, root / "squad")
    prepare_from_local_files(
        "squad/v1.1",
        data_dir,
        {"train-v1.1.json": squad_files["train"], "dev-v1.1.json": squad_files["dev"]},
    )
    prepare_from_local_files(
        "squad/v2.0",
        data_dir,
        {
            "train-v2.0.json": squad_files["train2"],
            "dev-v2.0.json": squad_files["train2"],
        },
    )
    conll = root / "conll"
    conll.mkdir()
    for name in ("train.txt", "valid.txt", "test.txt"):
        (conll / name).write_text(CONLL_TRAIN)
    prepare_from_local_files("conll2003", data_dir, {"conll2003.zip": conll})
    return types.SimpleNamespace(
        data_dir=data_dir, glue=trimmed, mrpc=mrpc, squad=squad_files
    )


def _write_squad_files(shared_data, folder):
    """A few dev articles as a dev file, a training file (first answer only)
    and a SQuAD 2.0 training file where every third question is impossible."""
    folder.mkdir()
    with open(
        os.path.join(shared_data, "squad", "dev-v1.1.json"), encoding="utf-8"
    ) as f:
        dev = json.load(f)
    dev["data"] = dev["data"][:SQUAD_ARTICLES]
    train = json.loads(json.dumps(dev))
    train2 = json.loads(json.dumps(dev))
    for article in train["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["answers"] = qa["answers"][:1]
    count = 0
    for article in train2["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["is_impossible"] = count % 3 == 0
                if qa["is_impossible"]:
                    qa["plausible_answers"], qa["answers"] = qa["answers"][:1], []
                else:
                    qa["answers"] = qa["answers"][:1]
                count += 1
    files = {}
    for name, data in (("dev", dev), ("train", train), ("train2", train2)):
        files[name] = str(folder / f"{name}.json")
        with open(files[name], "w", encoding="utf-8") as f:
            json.dump(data, f)
    return files


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    return tokenization.FullTokenizer(vocab, do_lower_case=True)


def _features(examples, label_list, tokenizer):
    return [
        (f.input_ids, f.input_mask, f.segment_ids, f.label_id)
        for f in glue.convert_examples_to_features(examples, label_list, 64, tokenizer)
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    "tfds_name, task, folder",
    [
        ("glue/mrpc", "mrpc", None),
        ("glue/sst2", "sst-2", "SST-2"),
        ("glue/cola", "cola", "CoLA"),
        ("glue/stsb", "sts-b", "STS-B"),
    ],
)
def test_glue_examples_and_features_equal_the_files(
    tfds_dirs, tokenizer, tfds_name, task, folder
):
    data_dir = tfds_dirs.mrpc if folder is None else str(tfds_dirs.glue / folder)
    processor = tfds_input.TfdsGlueProcessor(
        tfds_name, data_dir=tfds_dirs.data_dir, download=False
    )
    files = glue.get_processor(task)
    assert processor.get_labels() == files.get_labels()
    assert processor.text_pair == files.text_pair
    assert processor.is_regression == files.is_regression
    for method in ("get_train_examples", "get_dev_examples", "get_test_examples"):
        got = getattr(processor, method)()
        want = getattr(files, method)(data_dir)
        assert len(got) == len(want) > 0, method
        # Same rows in the same (file) order, same labels (test: first label).
        assert [(e.text_a, e.text_b, e.label) for e in got] == [
            (e.text_a, e.text_b, e.label) for e in want
        ], method
        label_list = files.get_labels()
        assert _features(got, label_list, tokenizer) == _features(
            want, label_list, tokenizer
        ), method


@pytest.mark.slow
def test_tfds_stores_rows_shuffled_and_examples_come_in_idx_order(tfds_dirs):
    builder = tfds.builder("glue/mrpc", data_dir=tfds_dirs.data_dir)
    stored = [int(row["idx"]) for row in builders.rows(builder, "train")]
    assert stored != sorted(stored)  # TFDS shuffles at write time
    processor = tfds_input.TfdsGlueProcessor("glue/mrpc", data_dir=tfds_dirs.data_dir)
    guids = [e.guid for e in processor.get_train_examples()]
    assert guids == [f"train-{i}" for i in sorted(stored)]


def test_mnli_labels_map_by_name_not_by_tfds_index(tmp_path):
    with tfds.testing.mock_data(num_examples=12, data_dir=str(tmp_path)):
        processor = tfds_input.TfdsGlueProcessor("glue/mnli", data_dir=str(tmp_path))
        builder = processor.builder()
        names = builder.info.features["label"].names
        # TFDS's class order differs from the original's label list.
        assert names == ["entailment", "neutral", "contradiction"]
        assert processor.get_labels() == ["contradiction", "entailment", "neutral"]
        rows = sorted(builders.rows(builder, "train"), key=lambda row: int(row["idx"]))
        examples = processor.get_train_examples()
        assert [e.label for e in examples] == [names[int(r["label"])] for r in rows]
        assert [e.text_a for e in examples] == [r["premise"].decode() for r in rows]
        assert [e.text_b for e in examples] == [r["hypothesis"].decode() for r in rows]
        features = glue.convert_examples_to_features(
            examples,
            processor.get_labels(),
            16,
            types.SimpleNamespace(
                tokenize=lambda text: [], convert_tokens_to_ids=lambda t: [0] * len(t)
            ),
        )
        # contradiction is TFDS class 2 and the original's id 0, etc.
        original_ids = {"entailment": 1, "neutral": 2, "contradiction": 0}
        assert [f.label_id for f in features] == [
            original_ids[names[int(r["label"])]] for r in rows
        ]
        assert processor.matched
        assert len(processor.get_dev_examples(matched=False)) == 12
        assert {e.guid.split("-")[0] for e in processor.get_dev_examples()} == {"dev"}


def test_unlabelled_rows_of_a_labelled_split_are_errors_or_counted_skips(tmp_path):
    folder = tmp_path / "glue" / "SST-2"
    folder.mkdir(parents=True)
    # A train file without the label column: TFDS writes label -1.
    (folder / "train.tsv").write_text("sentence\tscore\ngood film\t1\nbad film\t0\n")
    (folder / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n")
    (folder / "test.tsv").write_text("index\tsentence\n0\tso so\n")
    data_dir = str(tmp_path / "tfds")
    prepare_from_local_files("glue/sst2", data_dir, {"SST-2.zip": tmp_path / "glue"})
    processor = tfds_input.TfdsGlueProcessor("glue/sst2", data_dir=data_dir)
    with pytest.raises(glue.BadRowError, match=r"glue/sst2\[train\]:idx 0: no label"):
        processor.get_train_examples()
    skipping = tfds_input.TfdsGlueProcessor(
        "glue/sst2", data_dir=data_dir, skip_bad_rows=True
    )
    # Skipping every row leaves nothing to train on: an error, with the count.
    with pytest.raises(ValueError, match=r"glue/sst2\[train\]: .*all 2 data rows"):
        skipping.get_train_examples()
    assert len(skipping.skipped) == 2
    assert [e.label for e in processor.get_test_examples()] == ["0"]
    assert [e.label for e in processor.get_dev_examples()] == ["1"]


def _squad_features(examples, tokenizer, is_training):
    """{qas_id: [(input_ids, segment_ids, start, end), ...]} over all windows."""
    by_id = {}

    def collect(feature):
        example = examples[feature.example_index]
        by_id.setdefault(example.qas_id, []).append(
            (
                feature.input_ids,
                feature.segment_ids,
                feature.start_position,
                feature.end_position,
            )
        )

    squad_data.convert_examples_to_features(
        examples, tokenizer, 128, 64, 32, is_training, collect
    )
    return by_id


@pytest.mark.parametrize(
    "tfds_name, split, source, is_training",
    [
        ("squad/v1.1", "train", "train", True),
        ("squad/v1.1", "validation", "dev", False),
        ("squad/v2.0", "train", "train2", True),
    ],
)
def test_squad_features_equal_the_file(
    tfds_dirs, tokenizer, tmp_path, tfds_name, split, source, is_training
):
    version_2 = tfds_name.endswith("v2.0")
    path = tfds_input.write_squad_json(
        tfds_name, split, str(tmp_path / "tfds.json"), data_dir=tfds_dirs.data_dir
    )
    got = squad_data.read_squad_examples(path, is_training, version_2)
    want = squad_data.read_squad_examples(
        tfds_dirs.squad[source], is_training, version_2
    )
    assert len(got) == len(want) > 0
    # TFDS keeps no question order: compare keyed by question id.
    assert sorted(map(str, got)) == sorted(map(str, want))
    assert _squad_features(got, tokenizer, is_training) == _squad_features(
        want, tokenizer, is_training
    )
    if version_2:
        assert sum(e.is_impossible for e in got) == sum(e.is_impossible for e in want)
        assert any(e.is_impossible for e in got)


def test_run_squad_reads_tfds_splits_through_the_file_reader(tfds_dirs, tmp_path):
    from bert_tf.options import RunOptions
    from bert_tf.options import SquadOptions
    from bert_tf.options.tfds_options import TfdsOptions
    from bert_tf.tasks import squad

    options = SquadOptions(
        tfds=TfdsOptions(
            tfds_name="squad/v1.1",
            tfds_data_dir=tfds_dirs.data_dir,
            tfds_download=False,
        )
    )
    run = RunOptions(output_dir=str(tmp_path), do_train=True, do_predict=True)
    train_file, predict_file = squad.input_files(options, run)
    assert train_file == str(tmp_path / "tfds_train.json")
    with open(predict_file, encoding="utf-8") as f:
        written = json.load(f)
    with open(tfds_dirs.squad["dev"], encoding="utf-8") as f:
        dev = json.load(f)

    def questions(dataset):
        return sorted(
            (qa["id"], paragraph["context"], json.dumps(qa["answers"], sort_keys=True))
            for article in dataset["data"]
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
        )

    # --do_eval scores against this file: same questions, contexts, answers.
    assert questions(written) == questions(dev)
    assert [a["title"] for a in written["data"]] != []


def test_conll2003_sentences_and_file(tfds_dirs, tmp_path):
    sentences = sorted(
        tfds_input.conll2003_sentences("train", data_dir=tfds_dirs.data_dir)
    )
    assert sentences == [
        (["BRUSSELS", "1996-08-22"], ["B-LOC", "O"]),
        (["EU", "rejects", "German", "call", "."], ["B-ORG", "O", "B-MISC", "O", "O"]),
        (["Peter", "Blackburn"], ["B-PER", "I-PER"]),
    ]
    path = tmp_path / "train.conll"
    assert tfds_input.write_conll_file(sentences, path) == 3
    blocks = path.read_text(encoding="utf-8").strip("\n").split("\n\n")
    assert [
        (
            [line.split("\t")[0] for line in block.split("\n")],
            [line.split("\t")[1] for line in block.split("\n")],
        )
        for block in blocks
    ] == sentences
    written = tfds_input.write_conll2003_file(
        "train", str(tmp_path / "tfds.conll"), data_dir=tfds_dirs.data_dir
    )
    assert sorted(
        block for block in open(written, encoding="utf-8").read().split("\n\n") if block
    ) == sorted(
        block for block in path.read_text(encoding="utf-8").split("\n\n") if block
    )
    with pytest.raises(ValueError, match="whitespace"):
        tfds_input.write_conll_file([(["New York"], ["B-LOC"])], tmp_path / "bad")


def test_missing_tensorflow_datasets_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "tensorflow_datasets", None)
    with pytest.raises(ImportError, match=r"pip install 'bert_tf\[tfds\]'"):
        tfds_input.TfdsGlueProcessor("glue/mrpc").get_train_examples()


def test_bad_names_splits_and_features_name_the_flag(tfds_dirs):
    with pytest.raises(ValueError, match="supported: glue/ax, glue/cola"):
        tfds_input.TfdsGlueProcessor("glue/foo")
    with pytest.raises(ValueError, match=r"no split \(eval_split='dev'\)"):
        tfds_input.TfdsGlueProcessor(
            "glue/mrpc", data_dir=tfds_dirs.data_dir, eval_split="dev"
        ).get_dev_examples()
    with pytest.raises(ValueError, match=r"'text' \(text_a_feature\)"):
        tfds_input.TfdsGlueProcessor(
            "glue/mrpc", data_dir=tfds_dirs.data_dir, text_a_feature="text"
        ).get_train_examples()
    with pytest.raises(ValueError, match="is not prepared"):
        tfds_input.TfdsGlueProcessor(
            "glue/qnli", data_dir=tfds_dirs.data_dir, download=False
        ).get_train_examples()
    # Slicing syntax is accepted.
    sliced = tfds_input.TfdsGlueProcessor(
        "glue/mrpc", data_dir=tfds_dirs.data_dir, train_split="train[:10]"
    )
    assert len(sliced.get_train_examples()) == 10


def _classifier_options(**overrides):
    from bert_tf.options import ClassifierOptions
    from bert_tf.options.tfds_options import TfdsOptions

    tfds = {"tfds_name": "glue/mrpc"}
    task = {}
    for name, value in overrides.items():
        (tfds if name.startswith("tfds_") else task)[name] = value
    return ClassifierOptions(tfds=TfdsOptions(**tfds), **task)


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"data_dir": "glue/MRPC"}, "drop --data_dir"),
        ({"tfds_name": "imdb_reviews"}, "supported: glue/ax"),
        ({"task_name": "cola"}, "--task_name=cola does not match"),
        ({"tfds_name": None, "tfds_split_train": "train"}, "--tfds_split_train needs"),
    ],
)
def test_classifier_tfds_flag_errors(overrides, message):
    with pytest.raises(ValueError, match=message):
        _classifier_options(**overrides)


def test_classifier_task_name_defaults_to_the_tfds_config():
    assert _classifier_options(tfds_name="glue/mnli").task_name == "mnli"


@pytest.mark.parametrize(
    "overrides, message",
    [
        ({"train_file": "train.json"}, "drop --train_file"),
        ({"tfds_name": "squad/v2.0"}, "--version_2_with_negative=true"),
        ({"tfds_name": "glue/mrpc"}, "supported: squad/v1.1, squad/v2.0"),
    ],
)
def test_squad_tfds_flag_errors(overrides, message):
    from bert_tf.options import SquadOptions
    from bert_tf.options.tfds_options import TfdsOptions

    values = {"tfds_name": "squad/v1.1", **overrides}
    tfds = TfdsOptions(tfds_name=values.pop("tfds_name"))
    with pytest.raises(ValueError, match=message):
        SquadOptions(tfds=tfds, **values)


def _records(path):
    """The records of a TFRecord file as feature dicts, in file order."""
    import tensorflow as tf

    records = []
    for serialized in tf.data.TFRecordDataset(str(path)):
        example = tf.train.Example.FromString(serialized.numpy())
        records.append(
            {
                name: list(feature.int64_list.value or feature.float_list.value)
                for name, feature in example.features.feature.items()
            }
        )
    return records


@pytest.mark.slow
def test_run_classifier_tfds_writes_the_records_of_the_files(
    tfds_dirs, shared_data, tokenizer, tmp_path
):
    """run_classifier.py --tfds_name (one training step, then eval and
    predict) writes the records the file path's examples give."""
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    config = tmp_path / "bert_config.json"
    config.write_text(
        json.dumps(
            {
                "vocab_size": 30522,
                "hidden_size": 8,
                "num_hidden_layers": 1,
                "num_attention_heads": 2,
                "intermediate_size": 16,
                "max_position_embeddings": 64,
                "type_vocab_size": 2,
            }
        )
    )
    output_dir = tmp_path / "out"
    run_script(
        os.path.join(REPO, "run_classifier.py"),
        "--do_train=true",
        "--train_batch_size=8",
        "--num_train_epochs=0.03",
        "--do_eval=true",
        "--do_predict=true",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        "--max_seq_length=64",
        "--tfds_name=glue/sst2",
        f"--tfds_data_dir={tfds_dirs.data_dir}",
        "--tfds_download=false",
        f"--output_dir={output_dir}",
    )
    files = glue.get_processor("sst-2")
    folder = str(tfds_dirs.glue / "SST-2")
    for name, examples in (
        ("eval.tf_record", files.get_dev_examples(folder)),
        ("predict.tf_record", files.get_test_examples(folder)),
    ):
        want = [
            {
                "input_ids": f.input_ids,
                "input_mask": f.input_mask,
                "segment_ids": f.segment_ids,
                "label_ids": [f.label_id],
                "is_real_example": [1],
            }
            for f in glue.convert_examples_to_features(
                examples, files.get_labels(), 64, tokenizer
            )
        ]
        assert _records(output_dir / name) == want, name
    assert "eval_accuracy" in (output_dir / "eval_results.txt").read_text()
    probabilities = np.loadtxt(output_dir / "test_results.tsv")
    assert probabilities.shape == (TRIMMED_ROWS - 1, 2)


def test_run_ner_reads_conll2003_from_tfds(tfds_dirs, tmp_path):
    import dataclasses

    from bert_tf.data_prep import conll
    from bert_tf.options import NerOptions
    from bert_tf.options import RunOptions
    from bert_tf.options.tfds_options import TfdsOptions
    from bert_tf.tasks import ner

    options = NerOptions(
        tfds=TfdsOptions(
            tfds_name="conll2003",
            tfds_data_dir=tfds_dirs.data_dir,
            tfds_download=False,
            tfds_split_eval="dev",
        )
    )
    run = RunOptions(
        output_dir=str(tmp_path),
        vocab_file=None,
        init_checkpoint=str(tmp_path),  # exists; never read here
        do_train=True,
        do_eval=True,
    )
    options.check(run)
    ner.write_tfds_files(options, run)
    assert not os.path.exists(options.data_file(run, "test"))
    for split in ("train", "dev"):
        sentences = conll.read_conll(options.data_file(run, split), "iob2")
        assert sorted((s.words, s.tags) for s in sentences) == sorted(
            tfds_input.conll2003_sentences(split, data_dir=tfds_dirs.data_dir)
        )
    with pytest.raises(ValueError, match="--tag_scheme=iob1: TFDS conll2003"):
        dataclasses.replace(options, tag_scheme="iob1").check(run)
    with pytest.raises(ValueError, match="drop --train_file"):
        dataclasses.replace(options, train_file="x.txt").check(run)
