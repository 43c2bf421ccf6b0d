"""run_ner.py --use_crf --crf_constrained end to end on real WNUT-17 sentences.

One training run (module fixture, as test_run_ner.py's): the first two layers
of the real MiniLM checkpoint, 160 training sentences. The SavedModel's
in-graph Viterbi is checked in a fresh process against pytorch-crf decoding
the Keras model's logits over the same words.
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf
from cli_script import run_script
from ner_run_fixtures import SCRIPT
from ner_run_fixtures import SEQ_LENGTH
from ner_run_fixtures import SERVING_TEXTS
from ner_run_fixtures import packed_inputs
from ner_run_fixtures import read_columns
from ner_run_fixtures import read_results
from ner_run_fixtures import rerun_flags
from ner_run_fixtures import trained_ner_run
from serving_process import call_in_fresh_process

import bert_tf
from bert_tf.layers.crf import FORBIDDEN_SCORE
from bert_tf.layers.crf import iob2_allowed
from bert_tf.metrics.entity import get_entities

torchcrf = pytest.importorskip("torchcrf", reason="pytorch-crf (test extra) missing")
torch = pytest.importorskip("torch")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(shared_data, minilm_dir, tmp_path_factory):
    base = tmp_path_factory.mktemp("ner_crf")
    return trained_ner_run(
        shared_data, minilm_dir, base, "--use_crf", "--crf_constrained"
    )


def _labels(run_dir):
    return json.loads((run_dir / "out" / "label_list.json").read_text())["labels"]


def test_learns_transitions_and_predicts_well_formed_iob2(run_dir):
    results = read_results(run_dir / "out" / "eval_results.txt")
    assert results["f1"] > 0.2 and results["eval_loss"] < 0.8
    labels = _labels(run_dir)
    (final,) = [f for f in os.listdir(run_dir / "out") if f.endswith(".index")]
    reader = tf.train.load_checkpoint(str(run_dir / "out" / final[: -len(".index")]))
    transitions = reader.get_tensor("cls/crf/transitions")
    assert reader.get_tensor("cls/crf/start_transitions").shape == (len(labels),)
    assert reader.get_tensor("cls/crf/end_transitions").shape == (len(labels),)
    # Trained from zeros at 100x --learning_rate (the default
    # --crf_learning_rate_multiplier, recorded in the run's identity): at 2e-4
    # alone, 40 Adam steps would leave them within ~0.02 of 0. The transitions
    # IOB2 forbids fall below the allowed ones.
    settings = json.loads((run_dir / "out" / "run_settings.json").read_text())
    assert settings["crf_learning_rate_multiplier"] == 100.0
    allowed = np.array(iob2_allowed(labels)[0])
    assert np.abs(transitions).max() > 0.2
    assert transitions[~allowed].mean() < transitions[allowed].mean()
    for name in ("eval_predictions.txt", "test_predictions.txt"):
        for block in read_columns(run_dir / "out" / name):
            previous = "O"
            for row in block:
                tag = row[-1]
                if tag.startswith("I-"):
                    assert previous in ("B-" + tag[2:], tag), (name, block)
                previous = tag


def test_eval_needs_the_same_crf_flag(run_dir):
    first = read_results(run_dir / "out" / "eval_results.txt")
    run_script(
        SCRIPT, *rerun_flags(run_dir), "--do_eval", "--use_crf", "--crf_constrained"
    )
    again = read_results(run_dir / "out" / "eval_results.txt")
    assert again == pytest.approx(first, rel=1e-4)
    result = run_script(SCRIPT, *rerun_flags(run_dir), "--do_eval", check=False)
    assert result.returncode == 2
    assert "holds a CRF tagger (cls/crf/transitions): add --use_crf" in result.stderr
    # Training on with other CRF flags is another run, not a resume.
    result = run_script(SCRIPT, *rerun_flags(run_dir), "--do_train", check=False)
    assert result.returncode == 2
    assert "use_crf" in result.stderr and "other settings" in result.stderr


def test_export_decodes_with_viterbi_in_a_fresh_process(run_dir, tmp_path):
    (version,) = [d for d in os.listdir(run_dir / "export") if d.isdigit()]
    directory = str(run_dir / "export" / version)
    vocab_file = str(run_dir / "out" / "vocab.txt")
    inputs, tokens = packed_inputs(vocab_file, SERVING_TEXTS)
    text_out, ids_out = call_in_fresh_process(
        tmp_path,
        [
            {
                "dir": directory,
                "signature": "serving_default",
                "inputs": {"text": SERVING_TEXTS},
            },
            {
                "dir": directory,
                "signature": "serve_tokenized",
                "inputs": {k: v.tolist() for k, v in inputs.items()},
            },
        ],
    )
    labels = _labels(run_dir)
    model = bert_tf.BertTokenClassifier.from_checkpoint(
        str(run_dir / "out"),
        config=str(run_dir / "bert_config.json"),
        num_labels=len(labels),
        crf=True,
    )
    logits = model(inputs, training=False)["logits"].numpy()
    np.testing.assert_allclose(text_out["logits"], logits, atol=1e-4)
    # pytorch-crf with the forbidden transitions scored as in constrained
    # decoding: the constrained Viterbi path.
    allowed, allowed_start = map(np.array, iob2_allowed(labels))
    reference = torchcrf.CRF(len(labels), batch_first=True).double()
    with torch.no_grad():
        reference.transitions.copy_(
            torch.tensor(
                model.crf.transitions.numpy() + np.where(allowed, 0, FORBIDDEN_SCORE)
            )
        )
        reference.start_transitions.copy_(
            torch.tensor(
                model.crf.start_transitions.numpy()
                + np.where(allowed_start, 0, FORBIDDEN_SCORE)
            )
        )
        reference.end_transitions.copy_(torch.tensor(model.crf.end_transitions.numpy()))
    differs_from_argmax = 0
    for row in range(len(SERVING_TEXTS)):
        words = [i + 1 for i, t in enumerate(tokens[row]) if not t.startswith("##")]
        if not words:
            assert (text_out["tags"][row] == b"").all()
            continue
        scores = torch.tensor(logits[row : row + 1, words].astype(np.float64))
        (path,) = reference.decode(scores)
        expected = [labels[i] for i in path]
        for out in (text_out, ids_out):
            assert out["tag_ids"][row][words].tolist() == path
            assert [t.decode() for t in out["tags"][row][words]] == expected
        differs_from_argmax += path != logits[row, words].argmax(-1).tolist()
        count = text_out["num_entities"][row]
        assert count == len(get_entities(expected))
        got = [t.decode() for t in text_out["entity_type"][row][:count]]
        assert got == [entity for entity, _, _ in get_entities(expected)]
    assert differs_from_argmax >= 1


def test_export_reads_the_crf_from_the_run(run_dir, tmp_path):
    from bert_tf.options import ExportOptions
    from bert_tf.options import SavedModelExportOptions
    from bert_tf.tasks import saved_model_export

    def options(**crf):
        return SavedModelExportOptions(
            model_type="tagger",
            init_checkpoint=str(run_dir / "out"),
            export=ExportOptions(export_dir=str(tmp_path / "export")),
            max_seq_length=SEQ_LENGTH,
            **crf,
        )

    # A flag that contradicts the checkpoint: one line.
    with pytest.raises(bert_tf.UserInputError, match="add use_crf"):
        saved_model_export.run(options(use_crf=False))
    # Left out: the run's --use_crf --crf_constrained (run_settings.json).
    path = saved_model_export.run(options())
    with open(os.path.join(path, "assets.extra", "bert_tf_export.json")) as f:
        assert json.load(f)["decoding"] == "viterbi_iob2"
