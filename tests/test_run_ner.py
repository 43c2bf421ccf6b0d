"""run_ner.py end to end on real WNUT-17 sentences, and its TF Serving export.

One training run (module fixture): the first two layers of the real MiniLM
checkpoint, 160 training sentences, 4 epochs; dev and test are later
sentences of the same file (the test split without tags). The export is
called in a fresh process that imports only TensorFlow and tensorflow-text,
against the Keras model fed by the original tokenizer.
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
from bert_tf.metrics.entity import get_entities
from bert_tf.serving import TaggerSignatures
from bert_tf.text import tokenization
from bert_tf.text.preprocessing import BertPreprocessor

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def run_dir(shared_data, minilm_dir, tmp_path_factory):
    return trained_ner_run(shared_data, minilm_dir, tmp_path_factory.mktemp("ner"))


def test_learns_entities_on_held_out_sentences(run_dir):
    results = read_results(run_dir / "out" / "eval_results.txt")
    for key in ("precision", "recall", "f1", "accuracy", "eval_loss", "global_step"):
        assert key in results
    assert {k for k in results if k.startswith("f1_")} >= {"f1_person", "f1_location"}
    # Untrained, the head tags at chance (loss ln 13 = 2.56, F1 near 0).
    assert results["eval_loss"] < 0.6
    assert results["f1"] > 0.2
    assert results["global_step"] > 30
    saved = json.loads((run_dir / "out" / "label_list.json").read_text())
    assert saved["labels"][0] == "O" and len(saved["labels"]) == 13


def test_prediction_files_have_every_input_word(run_dir):
    labels = set(
        json.loads((run_dir / "out" / "label_list.json").read_text())["labels"]
    )
    dev = read_columns(run_dir / "dev.txt")
    dev = [[row[0].split("\t") for row in block] for block in dev]
    predicted = read_columns(run_dir / "out" / "eval_predictions.txt")
    assert [[r[:2] for r in block] for block in predicted] == dev
    assert all(r[2] in labels for block in predicted for r in block)
    test_words = read_columns(run_dir / "test.txt")
    test_predicted = read_columns(run_dir / "out" / "test_predictions.txt")
    assert [[r[:1] for r in block] for block in test_predicted] == test_words
    assert all(len(r) == 2 and r[1] in labels for b in test_predicted for r in b)


def test_eval_results_are_conlleval_scores_of_the_predictions_file(run_dir):
    seqeval = pytest.importorskip("seqeval.metrics", reason="seqeval not installed")
    results = read_results(run_dir / "out" / "eval_results.txt")
    blocks = read_columns(run_dir / "out" / "eval_predictions.txt")
    gold = [[r[1] for r in block] for block in blocks]
    predicted = [[r[2] for r in block] for block in blocks]
    assert results["f1"] == pytest.approx(seqeval.f1_score(gold, predicted))
    assert results["precision"] == pytest.approx(
        seqeval.precision_score(gold, predicted)
    )
    assert results["recall"] == pytest.approx(seqeval.recall_score(gold, predicted))
    assert results["accuracy"] == pytest.approx(seqeval.accuracy_score(gold, predicted))


def test_eval_only_rerun_restores_the_trained_model(run_dir):
    first = read_results(run_dir / "out" / "eval_results.txt")
    run_script(
        SCRIPT,
        *rerun_flags(run_dir),
        "--do_eval",
        "--eval_batch_size=5",
    )
    again = read_results(run_dir / "out" / "eval_results.txt")
    assert again.pop("eval_loss") == pytest.approx(first.pop("eval_loss"), rel=1e-4)
    assert again == pytest.approx(first, rel=1e-6)


def test_bad_file_stops_with_file_and_line(run_dir, tmp_path):
    (tmp_path / "train.txt").write_text("Paris\tB-location\nis\tE-location\n")
    result = run_script(
        SCRIPT,
        f"--train_file={tmp_path / 'train.txt'}",
        f"--vocab_file={run_dir / 'out' / 'vocab.txt'}",
        f"--bert_config_file={run_dir / 'bert_config.json'}",
        f"--output_dir={tmp_path / 'out'}",
        "--do_train",
        check=False,
    )
    assert result.returncode != 0
    assert "train.txt:2: tag 'E-location' is not in the iob2 scheme" in result.stderr


def test_untagged_dev_file_stops_before_training(run_dir, tmp_path):
    """--do_eval on a dev file without tags can't be scored: said at once,
    before any training or prediction is written."""
    (tmp_path / "train.txt").write_text("Paris\tB-location\nis\tO\n\n")
    (tmp_path / "dev.txt").write_text("Paris\nis\n\n")
    output = tmp_path / "out"
    result = run_script(
        SCRIPT,
        f"--data_dir={tmp_path}",
        f"--vocab_file={run_dir / 'out' / 'vocab.txt'}",
        f"--bert_config_file={run_dir / 'bert_config.json'}",
        f"--output_dir={output}",
        "--do_train",
        "--do_eval",
        check=False,
    )
    assert result.returncode == 2
    assert f"{tmp_path / 'dev.txt'}: --do_eval needs tags" in result.stderr
    assert not (output / "checkpoints").exists()


def test_exported_tagger_answers_raw_text_in_a_fresh_process(run_dir, tmp_path):
    (version,) = [d for d in os.listdir(run_dir / "export") if d.isdigit()]
    vocab_file = str(run_dir / "out" / "vocab.txt")
    inputs, tokens = packed_inputs(vocab_file, SERVING_TEXTS)
    directory = str(run_dir / "export" / version)
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
    out = {"text/" + k: v for k, v in text_out.items()}
    out.update({"ids/" + k: v for k, v in ids_out.items()})
    labels = json.loads((run_dir / "out" / "label_list.json").read_text())["labels"]
    model = bert_tf.BertTokenClassifier.from_checkpoint(
        str(run_dir / "out"),
        config=str(run_dir / "bert_config.json"),
        num_labels=len(labels),
    )
    logits = model(inputs, training=False)["logits"].numpy()
    for prefix in ("text/", "ids/"):
        np.testing.assert_allclose(out[prefix + "logits"], logits, atol=1e-4)
        np.testing.assert_array_equal(out[prefix + "tag_ids"], logits.argmax(-1))
    np.testing.assert_array_equal(out["text/tags"], out["ids/tags"])

    found_entities = 0
    for row, text in enumerate(SERVING_TEXTS):
        data = text.encode("utf-8")
        starts, ends = out["text/token_start"][row], out["text/token_end"][row]
        n = len(tokens[row])
        assert (starts[1 : n + 1] >= 0).all() and (starts[n + 1 :] == -1).all()
        # Words: the first piece of each, as run_ner.py scores them.
        words = [i + 1 for i, t in enumerate(tokens[row]) if not t.startswith("##")]
        tags = [labels[logits[row, i].argmax()] for i in words]
        expected_tags = np.full(SEQ_LENGTH, b"", object)
        expected_tags[words] = [t.encode() for t in tags]
        assert out["text/tags"][row].tolist() == expected_tags.tolist()
        expected = []
        for entity_type, first, last in get_entities(tags):
            word_end = words[last + 1] if last + 1 < len(words) else n + 1
            begin = starts[words[first]]
            end = ends[words[last] : word_end].max()
            expected.append((entity_type, data[begin:end], begin, end))
        count = out["text/num_entities"][row]
        assert count == len(expected)
        found_entities += count
        got = list(
            zip(
                [t.decode() for t in out["text/entity_type"][row][:count]],
                out["text/entity_text"][row][:count].tolist(),
                out["text/entity_start"][row][:count].tolist(),
                out["text/entity_end"][row][:count].tolist(),
                strict=True,
            )
        )
        assert got == expected
        assert (out["text/entity_start"][row][count:] == -1).all()
        scores = out["text/entity_score"][row][:count]
        assert ((scores > 1 / len(labels)) & (scores <= 1)).all()
    assert found_entities >= 3
    first = out["text/entity_text"][0][: out["text/num_entities"][0]].tolist()
    assert b"Obama" in b" ".join(first)


def test_in_graph_entities_read_ill_formed_tags_as_conlleval(minilm_dir):
    labels = ["O", "B-A", "I-A", "B-B", "I-B"]
    config = bert_tf.BertConfig(
        vocab_size=30522,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=8,
        max_position_embeddings=16,
    )
    signatures = TaggerSignatures(
        bert_tf.BertTokenClassifier(config, num_labels=len(labels)),
        BertPreprocessor(os.path.join(minilm_dir, "vocab.txt"), True, 12),
        labels,
    )
    rng = np.random.default_rng(0)
    text = tf.constant(["abcdefghijklmnopqrstuvwxyz0123456789"] * 2)
    length = 12
    # Positions 1..10 hold one-piece words in row 0; row 1 has three words and
    # a continuation piece at position 2.
    in_text = np.zeros([2, length], bool)
    in_text[0, 1:11] = True
    in_text[1, 1:5] = True
    word_start = in_text.copy()
    word_start[1, 2] = False
    starts = np.where(in_text, np.arange(length) * 3 - 3, -1)
    ends = np.where(in_text, np.arange(length) * 3 - 1, -1)
    for _ in range(30):
        tag_ids = rng.integers(0, len(labels), size=[2, length]).astype(np.int32)
        got = signatures._entities(
            text,
            tf.constant(in_text),
            tf.constant(word_start),
            tf.constant(tag_ids),
            tf.fill([2, length], 0.5),
            tf.constant(starts, tf.int64),
            tf.constant(ends, tf.int64),
        )
        for row in range(2):
            positions = np.flatnonzero(word_start[row])
            word_tags = [labels[tag_ids[row, p]] for p in positions]
            expected = []
            for entity_type, first, last in get_entities(word_tags):
                stop = positions[last + 1] if last + 1 < len(positions) else 99
                last_pieces = [
                    p
                    for p in np.flatnonzero(in_text[row])
                    if positions[last] <= p < stop
                ]
                expected.append(
                    (
                        entity_type,
                        starts[row, positions[first]],
                        ends[row, last_pieces].max(),
                    )
                )
            count = int(got["num_entities"][row])
            assert [
                (t.decode(), s, e)
                for t, s, e in zip(
                    got["entity_type"][row][:count].numpy(),
                    got["entity_start"][row][:count].numpy(),
                    got["entity_end"][row][:count].numpy(),
                    strict=True,
                )
            ] == expected


def test_export_saved_model_script_exports_the_tagger(run_dir, tmp_path):
    """export_saved_model.py --model_type=tagger on run_ner's output_dir: the
    labels come from its label_list.json; the model answers as --export_dir's."""
    import dataclasses

    from bert_tf.options import ExportOptions
    from bert_tf.options.saved_model_export_options import SavedModelExportOptions
    from bert_tf.tasks import saved_model_export

    options = SavedModelExportOptions(
        model_type="tagger",
        init_checkpoint=str(run_dir / "out"),
        export=ExportOptions(str(tmp_path / "export"), export_version=7),
        max_seq_length=SEQ_LENGTH,
    )
    with pytest.raises(bert_tf.UserInputError, match="--model_type=taggr"):
        dataclasses.replace(options, model_type="taggr")
    path = saved_model_export.run(options)
    labels = json.loads((run_dir / "out" / "label_list.json").read_text())["labels"]
    with open(os.path.join(path, "assets.extra", "bert_tf_export.json")) as f:
        metadata = json.load(f)
    assert metadata["model"] == "tagger" and metadata["labels"] == labels
    assert metadata["signatures"]["serving_default"] == ["text"]
    (version,) = [d for d in os.listdir(run_dir / "export") if d.isdigit()]
    texts = tf.constant(SERVING_TEXTS[:1])
    ours = tf.saved_model.load(path).signatures["serving_default"](text=texts)
    trained = tf.saved_model.load(str(run_dir / "export" / version))
    theirs = trained.signatures["serving_default"](text=texts)
    np.testing.assert_allclose(ours["logits"], theirs["logits"], atol=1e-5)
    np.testing.assert_array_equal(ours["entity_text"], theirs["entity_text"])


def test_training_batches_resume_where_they_stopped(shared_data, minilm_dir):
    """What a resumed run reads: the batches after the ones already consumed,
    each word's label still on its first piece."""
    from bert_tf.data_prep import conll
    from bert_tf.tasks import ner

    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    sentences = conll.read_conll(path)[:60]
    tokenizer = tokenization.FullTokenizer(os.path.join(minilm_dir, "vocab.txt"))
    labels = conll.label_list_from(sentences)
    features = conll.convert_sentences_to_features(
        sentences, labels, SEQ_LENGTH, tokenizer, 15
    )
    dataset_fn = ner.training_dataset_fn(features, 4, 3, True, 4)
    context = tf.distribute.InputContext()
    full = list(dataset_fn(context, 0).take(40))
    resumed = list(dataset_fn(context, 25).take(15))
    for a, b in zip(full[25:], resumed, strict=True):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])
    # The first 30 batches hold a whole epoch: every window is there.
    assert len(features.input_ids) <= 30 * 4
    rows = {
        tuple(ids[ids > 0]) for batch in full[:30] for ids in batch["input_ids"].numpy()
    }
    assert len(rows) == len({tuple(r[r > 0]) for r in features.input_ids})
