"""embed.py: a text file to .npy + ids (+ TFRecord), as the model embeds it."""

import os
import sys
import types

import numpy as np
import pytest
from cli_script import REPO
from cli_script import run_script

SCRIPT = os.path.join(REPO, "embed.py")


def test_rows_stream_with_ids_and_line_errors(tmp_path):
    from bert_tf.data_prep.table_reader import BadRowError
    from bert_tf.tasks.embed_file import iter_rows

    tsv = tmp_path / "texts.tsv"
    tsv.write_text("id\ttext\na1\tFirst text.\nb2\tSecond text.\n", encoding="utf-8")
    assert list(iter_rows(str(tsv), None, "text", "id")) == [
        ("a1", "First text."),
        ("b2", "Second text."),
    ]
    jsonl = tmp_path / "texts.jsonl"
    jsonl.write_text('{"t": "one"}\n{"t": ""}\n', encoding="utf-8")
    with pytest.raises(BadRowError, match=r"texts.jsonl:2: no text under 't'"):
        list(iter_rows(str(jsonl), None, "t"))
    text = tmp_path / "texts.txt"
    text.write_text("one\n\nthree\n", encoding="utf-8")
    with pytest.raises(BadRowError, match=r"texts.txt:2: empty line"):
        list(iter_rows(str(text), None))


@pytest.mark.slow
def test_embed_cli_writes_what_the_model_encodes(minilm_dir, tmp_path):
    import tensorflow as tf

    import bert_tf

    sentences = [
        "A man is playing a guitar.",
        "The weather is lovely today, with sunshine over the hills.",
        "short",
        "Dogs run.",
        "A woman slices an onion in a small kitchen.",
    ]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    output = tmp_path / "out" / "vectors.npy"
    records = tmp_path / "out" / "vectors.tfrecord"
    result = run_script(
        SCRIPT,
        f"--init_checkpoint={minilm_dir}",
        f"--input_file={source}",
        f"--output_file={output}",
        f"--output_tfrecord={records}",
        "--batch_size=2",
    )
    assert "texts/s" in result.stderr + result.stdout
    vectors = np.load(output)
    expected = bert_tf.BertSentenceEncoder.from_checkpoint(minilm_dir).encode(sentences)
    np.testing.assert_allclose(vectors, expected, atol=1e-6)
    ids = (tmp_path / "out" / "vectors.ids.txt").read_text().split()
    assert ids == ["1", "2", "3", "4", "5"]
    parsed = [
        tf.train.Example.FromString(r.numpy())
        for r in tf.data.TFRecordDataset(str(records))
    ]
    assert [p.features.feature["id"].bytes_list.value[0] for p in parsed] == [
        i.encode() for i in ids
    ]
    np.testing.assert_allclose(
        parsed[2].features.feature["embedding"].float_list.value, vectors[2], atol=1e-7
    )
    source.write_text("fine\n\n", encoding="utf-8")
    bad = run_script(
        SCRIPT,
        f"--init_checkpoint={minilm_dir}",
        f"--input_file={source}",
        f"--output_file={output}",
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].endswith("in.txt:2: empty line")


@pytest.mark.slow
def test_embed_cli_runs_an_embedding_litert_file(shared_data, tmp_path):
    """--init_checkpoint=<.tflite>: LiteRT embeds the file (the encoder's
    vectors); flags the file fixes are refused, naming the flag."""
    pytest.importorskip("ai_edge_litert", reason="ai-edge-litert (litert extra)")
    import keras
    from tiny_models import tiny_bert_config

    import bert_tf
    from bert_tf.serving import export_litert
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(5)
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    encoder = bert_tf.BertSentenceEncoder(
        tiny_bert_config(30522, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 32, padding="longest"),
        pooling="mean",
        normalize=True,
    )
    model_file = str(tmp_path / "embedding.tflite")
    export_litert(encoder, model_file, vocab, True, 32, quantization="none")
    with open(os.path.join(shared_data, "glue/STS-B/dev.tsv"), encoding="utf-8") as f:
        sentences = [line.split("\t")[7] for line in f.readlines()[1:41]]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(sentences) + "\n", encoding="utf-8")
    output = tmp_path / "vectors.npy"
    flags = [f"--input_file={source}", f"--output_file={output}", "--batch_size=16"]
    run_script(SCRIPT, f"--init_checkpoint={model_file}", *flags)
    np.testing.assert_allclose(np.load(output), encoder.encode(sentences), atol=5e-5)
    assert (tmp_path / "vectors.ids.txt").read_text().split() == [
        str(i) for i in range(1, 41)
    ]
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(bytes(range(256)) * 8)
    bad = run_script(SCRIPT, f"--init_checkpoint={junk}", *flags, check=False)
    assert bad.returncode == 2
    assert (
        bad.stderr.strip()
        .splitlines()[-1]
        .startswith(
            f"embed: error: --init_checkpoint: {junk} is not a LiteRT (.tflite) file ("
        )
    )
    bad = run_script(
        SCRIPT, f"--init_checkpoint={model_file}", "--pooling=cls", *flags, check=False
    )
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1] == (
        f"embed: error: --pooling: {model_file} is a LiteRT export, whose "
        "tokenization and pooling are fixed in the file; leave the flag out"
    )


def test_a_tflite_without_the_litert_extra_is_one_line(monkeypatch, tmp_path):
    from bert_tf.cli.embed import _litert_model
    from bert_tf.errors import UserInputError

    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    path = tmp_path / "model.tflite"
    path.write_bytes(b"")
    flags = types.SimpleNamespace(
        init_checkpoint=str(path),
        pooling=None,
        normalize=None,
        max_seq_length=None,
        vocab_file=None,
        do_lower_case=None,
        prompt_name=None,
        truncate_dim=None,
    )
    with pytest.raises(UserInputError) as error:
        _litert_model(flags)
    message = str(error.value)
    assert message.startswith(
        f"--init_checkpoint={path}: bert_tf.serving.litert_model needs"
    )
    assert 'pip install ".[litert]"' in message and "\n" not in message


def test_a_full_disk_is_one_line_not_a_sigbus(shared_data, full_disk, tmp_path):
    """Issue 61.9: the output is a memory map, and a write through it to a
    full disk killed embed.py with SIGBUS (exit -7, nothing written, no
    word). Its blocks are taken first: a disk without room is an OSError
    naming the output, which the command prints as one line. A 4 KiB tmpfs
    is the full disk (mounting needs root; skipped otherwise)."""
    import errno

    import keras
    from tiny_models import tiny_bert_config

    import bert_tf
    from bert_tf.cli.command import one_line
    from bert_tf.tasks.embed_file import embed_file
    from bert_tf.text.preprocessing import BertPreprocessor

    disk = full_disk
    keras.utils.set_random_seed(5)
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    encoder = bert_tf.BertSentenceEncoder(
        tiny_bert_config(30522, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 16, padding="longest"),
        pooling="mean",
    )
    source = tmp_path / "in.txt"
    source.write_text("a short text\n" * 100, encoding="utf-8")
    assert 100 * 4 * encoder.embedding_dim > 4096
    output = str(disk / "vectors.npy")
    with pytest.raises(OSError) as error:
        embed_file(encoder, str(source), output)
    assert error.value.errno == errno.ENOSPC
    assert one_line(error.value) == f"{output}: No space left on device"
    assert os.listdir(disk) == []  # nothing half-written left behind
    # Where there is room, the same call writes every row.
    assert embed_file(encoder, str(source), str(tmp_path / "v.npy")) == 100
    np.testing.assert_allclose(
        np.load(tmp_path / "v.npy"),
        encoder.encode(["a short text"] * 100),
        atol=1e-5,
    )
