"""`bert_tf.serving.load_saved_model`: an export loads in plain Python with one call.

The reference is TensorFlow itself: in a fresh process that has not imported
tensorflow_text, `tf.saved_model.load` of an export fails on the tokenizer's
ops; `load_saved_model` in the same kind of process answers as the model.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf
from tiny_models import tiny_bert_config

from bert_tf import serving
from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier

pytestmark = pytest.mark.slow  # exports, and loads in fresh processes

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "dog"]

_FRESH = """
import json, sys
import tensorflow as tf

path, how = sys.argv[1], sys.argv[2]
if how == "tf":
    try:
        tf.saved_model.load(path)
    except Exception as error:
        from bert_tf.serving.saved_model_loader import unregistered_op_message
        print(json.dumps({"failed": type(error).__name__,
                          "line": unregistered_op_message(error),
                          "text_loaded": "tensorflow_text" in sys.modules}))
        raise SystemExit(0)
    print(json.dumps({"failed": None}))
else:
    from bert_tf.serving import load_saved_model
    model = load_saved_model(path)
    out = model.signatures["serving_default"](text_a=tf.constant(["the cat sat"]))
    print(json.dumps({"probabilities": out["probabilities"].numpy().tolist()}))
"""


@pytest.fixture(scope="module")
def export(tmp_path_factory):
    base = tmp_path_factory.mktemp("loader")
    vocab = base / "vocab.txt"
    vocab.write_text("\n".join(VOCAB) + "\n")
    tf.keras.utils.set_random_seed(3)
    model = BertClassifier(tiny_bert_config(len(VOCAB), dropout=0.0), num_labels=2)
    version = serving.export_saved_model(
        model, str(base / "model"), str(vocab), True, 16, save_keras=False
    )
    expected = serving.load_saved_model(version).signatures["serving_default"](
        text_a=tf.constant(["the cat sat"])
    )["probabilities"]
    return str(base / "model"), version, expected.numpy()


def _fresh(path, how):
    result = subprocess.run(
        [sys.executable, "-c", _FRESH, path, how],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_plain_load_fails_on_the_text_ops_and_the_line_names_the_import(export):
    _, version, _ = export
    seen = _fresh(version, "tf")
    assert seen["failed"] is not None and not seen["text_loaded"]
    assert "the graph needs op " in seen["line"]
    assert "import tensorflow_text" in seen["line"]


def test_one_call_loads_the_newest_version_and_answers_as_the_model(export):
    model_dir, version, expected = export
    assert os.path.basename(version) == "1"
    # <model>/<version> and <model> (its newest version) alike.
    for path in (model_dir, version):
        got = np.array(_fresh(path, "bert_tf")["probabilities"])
        np.testing.assert_allclose(got, expected, atol=1e-6)


def test_no_saved_model_is_one_line(tmp_path):
    (tmp_path / "7").mkdir()
    with pytest.raises(UserInputError, match="no saved_model.pb"):
        serving.load_saved_model(str(tmp_path))
