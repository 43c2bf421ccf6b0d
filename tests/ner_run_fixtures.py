"""What the run_ner.py end-to-end tests share: the WNUT-17 split, the 2-layer
MiniLM checkpoint, the training run, and readers of its files.

test_run_ner.py (softmax) and test_run_ner_crf.py (--use_crf) each train once
(a module fixture calling `trained_ner_run`) on the same real sentences.
"""

import json
import os
import shutil

import numpy as np
from cli_script import REPO
from cli_script import run_script
from safetensors.numpy import load_file
from safetensors.numpy import save_file

from bert_tf.text import tokenization

SEQ_LENGTH = 32
SCRIPT = os.path.join(REPO, "run_ner.py")
SERVING_TEXTS = [
    "Barack Obama met Vanessa Hudgens in Redondo Beach , California .",
    "",
    "Ünïcödé Steve Smith's café 🙂 &amp; New York Knicks !",
    "word " * 300,
]


def wnut17_sentences(shared_data):
    """The CoNLL blocks (one sentence each) of WNUT-17's emerging.dev.conll."""
    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    with open(path, encoding="utf-8") as f:
        return f.read().strip("\n").split("\n\n")


def first_layers_of(hf_dir, out_dir, layers):
    """A Hugging Face directory holding the first `layers` layers of `hf_dir`'s
    model (loading is strict: a 2-layer config on the 6-layer file fails)."""
    out_dir.mkdir()
    weights = load_file(os.path.join(hf_dir, "model.safetensors"))
    kept = {
        name: value
        for name, value in weights.items()
        if not name.startswith("encoder.layer.") or int(name.split(".")[2]) < layers
    }
    save_file(kept, str(out_dir / "model.safetensors"))
    with open(os.path.join(hf_dir, "config.json")) as f:
        config = json.load(f)
    config["num_hidden_layers"] = layers
    (out_dir / "config.json").write_text(json.dumps(config))
    shutil.copy(os.path.join(hf_dir, "vocab.txt"), out_dir / "vocab.txt")
    return out_dir


def trained_ner_run(shared_data, minilm_dir, base, *flags):
    """Trains, evaluates, predicts and exports in `base` (a fresh folder).

    WNUT-17 sentences 0-159 are train.txt, 160-259 dev.txt, 260-299 test.txt
    (words only); the model is MiniLM's first 2 layers (`base/bert_config.json`
    beside it); 4 epochs at batch 16, lr 2e-4, seq 32, plus `flags`. Outputs go
    to `base/out`, the SavedModel to `base/export`. Returns `base`.
    """
    blocks = wnut17_sentences(shared_data)
    (base / "train.txt").write_text("\n\n".join(blocks[:160]) + "\n", "utf-8")
    (base / "dev.txt").write_text("\n\n".join(blocks[160:260]) + "\n", "utf-8")
    tokens_only = [
        "\n".join(line.split("\t")[0] for line in block.split("\n"))
        for block in blocks[260:300]
    ]
    (base / "test.txt").write_text("\n\n".join(tokens_only) + "\n", "utf-8")
    checkpoint = first_layers_of(minilm_dir, base / "minilm_2_layers", 2)
    shutil.copy(checkpoint / "config.json", base / "bert_config.json")
    run_script(
        SCRIPT,
        f"--data_dir={base}",
        f"--init_checkpoint={checkpoint}",
        f"--output_dir={base / 'out'}",
        f"--export_dir={base / 'export'}",
        f"--max_seq_length={SEQ_LENGTH}",
        *flags,
        "--do_train",
        "--do_eval",
        "--do_predict",
        "--train_batch_size=16",
        "--num_train_epochs=4",
        "--learning_rate=2e-4",
        timeout=600,
    )
    return base


def rerun_flags(base):
    """The flags that point a later run_ner.py call at `trained_ner_run`'s
    output (its vocab and config, no --init_checkpoint)."""
    return [
        f"--data_dir={base}",
        f"--vocab_file={base / 'out' / 'vocab.txt'}",
        f"--bert_config_file={base / 'bert_config.json'}",
        f"--output_dir={base / 'out'}",
        f"--max_seq_length={SEQ_LENGTH}",
    ]


def read_results(path):
    """eval_results.txt's `key = value` lines as floats."""
    with open(path) as f:
        return {
            key: float(value)
            for key, value in (line.strip().split(" = ") for line in f if line.strip())
        }


def read_columns(path):
    """A CoNLL-style file as blocks of rows of space-separated columns."""
    with open(path, encoding="utf-8") as f:
        blocks = f.read().strip("\n").split("\n\n")
    return [[line.split(" ") for line in block.split("\n")] for block in blocks]


def packed_inputs(vocab_file, texts):
    """The original tokenizer's ids and tokens of each text, cut to one window."""
    tokenizer = tokenization.FullTokenizer(vocab_file, True)
    ids, tokens = [], []
    for text in texts:
        pieces = tokenizer.tokenize(text)[: SEQ_LENGTH - 2]
        tokens.append(pieces)
        row = tokenizer.convert_tokens_to_ids(["[CLS]", *pieces, "[SEP]"])
        ids.append(row + [0] * (SEQ_LENGTH - len(row)))
    ids = np.array(ids, np.int32)
    return {
        "input_ids": ids,
        "input_mask": (ids > 0).astype(np.int32),
        "segment_ids": np.zeros_like(ids),
    }, tokens
