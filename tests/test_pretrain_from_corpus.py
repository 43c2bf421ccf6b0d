"""The pretraining guide's whole path, through the command line, on the shared
Wikipedia excerpt: dump -> prepare_corpus -> build_vocab ->
create_pretraining_data -> run_pretraining (from a bert_config.json alone) ->
run_classifier on SST-2 from that model -> its SavedModel, LiteRT and
MediaPipe files, fed raw text.

Tiny on purpose (a 2-layer model, a few hundred steps): what is checked is
that each stage takes the last one's output as a user would and that the new
vocabulary reaches the in-graph tokenizer of the export; whether pretraining
here transfers is benchmarks/pretraining_transfer.py's question."""

import glob
import json
import math
import os
import random

import numpy as np
import pytest
from cli_script import REPO
from cli_script import run_script
from mediapipe_tasks import mediapipe_python
from mediapipe_tasks import run_task

pytestmark = pytest.mark.slow

SEQ, PREDICTIONS, VOCAB_SIZE, STEPS = 64, 10, 2000, 150


def tool(script, *flags):
    return run_script(os.path.join(REPO, script), *flags, timeout=900)


def read_results(path):
    with open(path) as f:
        return {
            k: float(v) for k, v in (line.strip().split(" = ") for line in f if line)
        }


@pytest.fixture(scope="module")
def sst2_subset(shared_data, tmp_path_factory):
    """600 seeded train rows, 200 dev rows, and 40 dev sentences as test.tsv."""
    pytest.importorskip("wikiextractor")
    folder = tmp_path_factory.mktemp("SST-2")
    source = os.path.join(shared_data, "glue", "SST-2")
    with open(os.path.join(source, "train.tsv")) as f:
        header, *rows = f.readlines()
    random.Random(1).shuffle(rows)
    (folder / "train.tsv").write_text(header + "".join(rows[:600]))
    with open(os.path.join(source, "dev.tsv")) as f:
        dev_header, *dev = f.readlines()
    (folder / "dev.tsv").write_text(dev_header + "".join(dev[:200]))
    sentences = [row.split("\t")[0] for row in dev[200:240]]
    (folder / "test.tsv").write_text(
        "index\tsentence\n" + "".join(f"{i}\t{s}\n" for i, s in enumerate(sentences))
    )
    return folder, sentences


def test_dump_to_a_fine_tuned_exported_model(shared_data, sst2_subset, tmp_path):
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the ops TF Serving links in)

    dump = glob.glob(os.path.join(shared_data, "wikipedia", "*.bz2"))[0]
    work = tmp_path
    corpus = work / "corpus"
    tool(
        "data_prep/prepare_corpus.py",
        f"--input_file={dump}",
        f"--output_dir={corpus}",
        "--num_shards=10",
    )
    summary = json.loads((corpus / "corpus_summary.json").read_text())
    assert summary["documents"] > 90
    train_shards = ",".join(
        sorted(glob.glob(str(corpus / "corpus-0000[1-9]-of-00010.txt")))
    )

    vocab = work / "vocab.txt"
    tool(
        "data_prep/build_vocab.py",
        f"--input_file={train_shards}",
        f"--vocab_size={VOCAB_SIZE}",
        f"--output_file={vocab}",
    )
    assert len(vocab.read_text().splitlines()) == VOCAB_SIZE

    records = work / "train.tfrecord"
    tool(
        "create_pretraining_data.py",
        f"--input_file={train_shards}",
        f"--output_file={records}",
        f"--vocab_file={vocab}",
        "--do_lower_case=True",
        f"--max_seq_length={SEQ}",
        f"--max_predictions_per_seq={PREDICTIONS}",
        "--dupe_factor=1",
    )
    # The records hold the new vocabulary's ids, [MASK] at its own id.
    ids = set()
    for record in tf.data.TFRecordDataset(str(records)).take(200):
        example = tf.train.Example.FromString(record.numpy())
        ids.update(example.features.feature["input_ids"].int64_list.value)
    assert max(ids) < VOCAB_SIZE and 103 in ids  # [MASK] is id 103

    config = work / "bert_config.json"
    config.write_text(
        json.dumps(
            {
                "vocab_size": VOCAB_SIZE,
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 2,
                "intermediate_size": 256,
                "max_position_embeddings": SEQ,
            }
        )
    )
    pretrained = work / "pretrained"
    tool(
        "run_pretraining.py",
        f"--input_file={records}",
        f"--bert_config_file={config}",
        f"--vocab_file={vocab}",
        f"--output_dir={pretrained}",
        "--do_train=True",
        "--do_eval=True",
        "--train_batch_size=32",
        f"--max_seq_length={SEQ}",
        f"--max_predictions_per_seq={PREDICTIONS}",
        f"--num_train_steps={STEPS}",
        "--num_warmup_steps=15",
        "--learning_rate=2e-3",
        "--optimizer=adamw",
        "--max_eval_steps=10",
    )
    results = read_results(pretrained / "eval_results.txt")
    # It learned (at least the words' frequencies): more than a nat below a
    # uniform guess over the vocabulary (7.6 nats; a fresh model starts there).
    assert results["masked_lm_loss"] < math.log(VOCAB_SIZE) - 1, results
    assert (pretrained / "vocab.txt").read_bytes() == vocab.read_bytes()

    data, sentences = sst2_subset
    classifier = work / "sst2"
    serving = work / "serving"
    tool(
        "run_classifier.py",
        "--task_name=SST-2",
        f"--data_dir={data}",
        f"--vocab_file={vocab}",
        f"--init_checkpoint={pretrained}",
        f"--output_dir={classifier}",
        "--do_train=true",
        "--do_eval=true",
        "--do_predict=true",
        "--do_lower_case=true",
        "--max_seq_length=32",
        "--train_batch_size=32",
        "--learning_rate=1e-3",
        "--num_train_epochs=1.0",
        f"--export_dir={serving}",
    )
    assert 0 <= read_results(classifier / "eval_results.txt")["eval_accuracy"] <= 1
    # The classifier started from the pretrained encoder, not from scratch.
    log = json.loads((classifier / "run_settings.json").read_text())
    assert str(pretrained) in json.dumps(log)

    # The SavedModel, given raw text, answers as the Keras model did for
    # test_results.tsv (Python tokenizer there, the new vocab in the graph here).
    probabilities = np.loadtxt(classifier / "test_results.tsv", delimiter="\t")
    served = tf.saved_model.load(str(serving / "1"))
    outputs = served.signatures["serving_default"](text_a=tf.constant(sentences))
    np.testing.assert_allclose(outputs["probabilities"], probabilities, atol=1e-5)

    # The LiteRT file and the MediaPipe Tasks file tokenize with it too.
    from bert_tf.serving.litert_model import LiteRTModel

    for target in ("raw_text", "mediapipe"):
        tool(
            "export_litert.py",
            "--model_type=classifier",
            f"--target={target}",
            "--task_name=SST-2",
            f"--init_checkpoint={classifier}",
            "--max_seq_length=32",
            "--quantization=none",
            f"--output_file={work / target}.tflite",
        )
    litert = LiteRTModel(str(work / "raw_text.tflite"))(text_a=sentences)
    np.testing.assert_allclose(litert["probabilities"], probabilities, atol=2e-5)
    python = mediapipe_python()
    if python is not None:  # MediaPipe Tasks' own TextClassifier
        served = run_task(python, str(work / "mediapipe.tflite"), "classify", sentences)
        np.testing.assert_allclose(served["scores"], probabilities, atol=1e-4)
