"""extract_features.py: the original's flags and JSONL, values = the encoder's layers."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from cli_script import child_pythonpath

import bert_tf

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORDS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "##s",
]


@pytest.mark.slow
def test_writes_the_original_jsonl_with_the_encoder_values(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    config = bert_tf.BertConfig(
        vocab_size=len(WORDS),
        hidden_size=16,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=16,
        type_vocab_size=2,
    )
    encoder = bert_tf.BertEncoder(config)
    prefix = bert_tf.save_tf1_checkpoint(encoder, tmp_path / "bert_model.ckpt")
    (tmp_path / "input.txt").write_text("the cat sat\nthe cats ||| on the mat\nmat\n")
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "extract_features.py"),
            f"--input_file={tmp_path / 'input.txt'}",
            f"--output_file={tmp_path / 'out.jsonl'}",
            f"--vocab_file={tmp_path / 'vocab.txt'}",
            f"--bert_config_file={tmp_path / 'bert_config.json'}",
            f"--init_checkpoint={prefix}",
            "--layers=-1,-3",
            "--max_seq_length=16",
            "--batch_size=2",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": child_pythonpath(REPO)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = [
        json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()
    ]
    assert [line["linex_index"] for line in lines] == [0, 1, 2]
    assert list(lines[0]) == ["linex_index", "features"]
    tokens = [f["token"] for f in lines[1]["features"]]
    assert tokens == [
        "[CLS]",
        "the",
        "cat",
        "##s",
        "[SEP]",
        "on",
        "the",
        "mat",
        "[SEP]",
    ]
    assert [layer["index"] for layer in lines[1]["features"][0]["layers"]] == [-1, -3]

    ids = np.array([[2, 5, 6, 10, 3, 8, 5, 9, 3]], "int32")
    segments = np.array([[0, 0, 0, 0, 0, 1, 1, 1, 1]], "int32")
    layers = encoder(
        {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": segments}
    )["encoder_outputs"]
    for position, feature in enumerate(lines[1]["features"]):
        for entry, layer in zip(
            feature["layers"], (layers[-1], layers[-3]), strict=True
        ):
            np.testing.assert_allclose(entry["values"], layer[0, position], atol=2e-6)
            assert all(round(v, 6) == v for v in entry["values"])  # rounded to 6 places


@pytest.mark.slow
def test_a_hugging_face_directory_needs_no_config_flag(minilm_dir, tmp_path):
    """The embeddings guide's command on the real MiniLM: no --bert_config_file; the last
    layer equals Hugging Face's BertModel on the same ids."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    (tmp_path / "input.txt").write_text("The cat sat on the mat.\n")
    result = subprocess.run(
        [
            sys.executable,
            os.path.join(REPO, "extract_features.py"),
            f"--input_file={tmp_path / 'input.txt'}",
            f"--output_file={tmp_path / 'out.jsonl'}",
            f"--vocab_file={os.path.join(minilm_dir, 'vocab.txt')}",
            f"--init_checkpoint={minilm_dir}",
            "--layers=-1",
            "--max_seq_length=16",
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": child_pythonpath(REPO)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    (line,) = (tmp_path / "out.jsonl").read_text().splitlines()
    features = json.loads(line)["features"]
    vocab = (
        open(os.path.join(minilm_dir, "vocab.txt"), encoding="utf-8")
        .read()
        .splitlines()
    )
    ids = [vocab.index(f["token"]) for f in features]
    assert [f["token"] for f in features][:3] == ["[CLS]", "the", "cat"]
    model = transformers.BertModel.from_pretrained(minilm_dir).eval()
    with torch.no_grad():
        reference = model(torch.tensor([ids])).last_hidden_state[0].numpy()
    ours = np.array([f["layers"][0]["values"] for f in features])
    np.testing.assert_allclose(ours, reference, atol=1e-4)
