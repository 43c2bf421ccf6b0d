"""The demo's shipped sample: exactly the STS Benchmark's image-caption pairs,
labelled by their gold score, small, and held out from training."""

import csv
import os

import pytest

from bert_tf.cli import demo

THRESHOLD = 3.0  # "roughly equivalent" and above on STS's 0-5 scale


def sts_image_pairs(path):
    """(sentence1, sentence2, score) of the `images` rows of an STS-B file."""
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    header = rows[0]
    column = {name: header.index(name) for name in header}
    return [
        (row[column["sentence1"]], row[column["sentence2"]], row[column["score"]])
        for row in rows[1:]
        if row[column["genre"]] == "main-captions"
        and row[column["filename"]] == "images"
    ]


def read_sample(name):
    with open(os.path.join(demo.DATA_DIR, name), encoding="utf-8") as f:
        return list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


@pytest.mark.parametrize("split", ["train", "dev"])
def test_the_sample_is_the_sts_benchmark_image_pairs(shared_data, split):
    source = sts_image_pairs(os.path.join(shared_data, "glue", "STS-B", f"{split}.tsv"))
    rows = read_sample(f"{split}.tsv")
    assert rows[0] == ["sentence1", "sentence2", "score", "label"]
    expected = [
        [a, b, score, "similar" if float(score) >= THRESHOLD else "different"]
        for a, b, score in source
    ]
    assert rows[1:] == expected


def test_the_sample_is_small_and_dev_is_held_out():
    train, dev = read_sample("train.tsv")[1:], read_sample("dev.tsv")[1:]
    assert (len(train), len(dev)) == (1000, 250)
    size = sum(
        os.path.getsize(os.path.join(demo.DATA_DIR, name))
        for name in ("train.tsv", "dev.tsv")
    )
    assert size < 300_000
    assert not {(r[0], r[1]) for r in train} & {(r[0], r[1]) for r in dev}
    # Neither class is rare: the majority guess is no strong baseline.
    for rows in (train, dev):
        share = sum(r[3] == "similar" for r in rows) / len(rows)
        assert 0.4 < share < 0.6


def test_baselines_are_computed_from_the_files():
    train, dev = demo.read_pairs("train.tsv"), demo.read_pairs("dev.tsv")
    labels = [label for *_, label in dev]
    majority_label, majority = demo.majority_baseline(dev)
    assert majority_label == max(set(labels), key=labels.count)
    assert majority == labels.count(majority_label) / len(labels)
    threshold, overlap = demo.word_overlap_baseline(train, dev)

    # The rule, written out: similar when the Jaccard overlap of the lower-cased
    # word sets reaches the threshold.
    def words(text):
        return set("".join(c if c.isalnum() else " " for c in text.lower()).split())

    hits = [
        (len(words(a) & words(b)) / max(len(words(a) | words(b)), 1) >= threshold)
        == (label == "similar")
        for a, b, label in dev
    ]
    assert overlap == pytest.approx(sum(hits) / len(hits))
    assert majority < overlap < 1
