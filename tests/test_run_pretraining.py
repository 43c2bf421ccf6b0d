"""run_pretraining.py end to end, through its command line, on real sample text."""

import os

import pytest
from cli_script import run_script
from cli_script import script_flag_defaults
from cli_script import script_in_background
from tiny_models import tiny_bert_config

import bert_tf

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

# 200 steps at lr 3e-3 reach masked_lm_accuracy 0.996 on the 57 records of
# length 64 (≈40 s on 2 CPU cores; 160 steps reach only 0.93).
NUM_STEPS = 200
# The records' lengths (create_pretraining_data and run_pretraining flags).
SEQ_LENGTH, PREDICTIONS = 64, 10

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "run_pretraining.py")

# docs/original_bert.md §1: every flag of the original, with its default.
ORIGINAL_FLAGS = {
    "bert_config_file": None,
    "input_file": None,
    "output_dir": None,
    "init_checkpoint": None,
    "max_seq_length": 128,
    "max_predictions_per_seq": 20,
    "do_train": False,
    "do_eval": False,
    "train_batch_size": 32,
    "eval_batch_size": 8,
    "learning_rate": 5e-5,
    "num_train_steps": 100000,
    "num_warmup_steps": 10000,
    "save_checkpoints_steps": 1000,
    "iterations_per_loop": 1000,
    "max_eval_steps": 100,
    "use_tpu": False,
    "tpu_name": None,
    "tpu_zone": None,
    "gcp_project": None,
    "master": None,
    "num_tpu_cores": 8,
}


def run_cli(*flags, check=True, timeout=900):
    return run_script(SCRIPT, *flags, check=check, timeout=timeout)


def read_results(path):
    results = {}
    for line in path.read_text().splitlines():
        key, value = line.split(" = ")
        results[key] = float(value)
    return results


@pytest.fixture(scope="module")
def sample_records(shared_data, tmp_path_factory):
    """create_pretraining_data on the original's sample_text.txt, plus a tiny config."""
    from bert_tf.data_prep.pretraining import create_pretraining_data

    folder = tmp_path_factory.mktemp("pretraining_data")
    records = folder / "sample.tfrecord"
    count = create_pretraining_data(
        os.path.join(shared_data, "bert_sample_text", "sample_text.txt"),
        str(records),
        os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt"),
        do_lower_case=True,
        max_seq_length=SEQ_LENGTH,
        max_predictions_per_seq=PREDICTIONS,
        random_seed=12345,
        dupe_factor=3,
    )
    assert count > 32
    config = bert_tf.BertConfig(
        vocab_size=30522,
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=512,
        max_position_embeddings=512,
        type_vocab_size=2,
    )
    config.to_json_file(folder / "bert_config.json")
    return records, folder / "bert_config.json"


def test_every_original_flag_with_its_default():
    defaults = script_flag_defaults("run_pretraining")
    for name, default in ORIGINAL_FLAGS.items():
        assert name in defaults, name
        assert defaults[name] == default, (name, defaults[name])
    # As the original: no casing flag; a vocabulary only for --dynamic_masking.
    assert "do_lower_case" not in defaults
    assert defaults["vocab_file"] is None and defaults["dynamic_masking"] is False


def test_pretrains_from_scratch_to_overfit_sample_text(sample_records, tmp_path):
    """The pre-training guide's run overfits sample_text.txt from a pre-trained checkpoint
    (masked_lm_accuracy 0.985); here a 2-layer model learns it from scratch."""
    records, config = sample_records
    output = tmp_path / "out"
    run_cli(
        f"--input_file={records}",
        f"--bert_config_file={config}",
        f"--output_dir={output}",
        "--do_train=true",
        "--do_eval=true",
        "--train_batch_size=16",
        f"--max_seq_length={SEQ_LENGTH}",
        f"--max_predictions_per_seq={PREDICTIONS}",
        f"--num_train_steps={NUM_STEPS}",
        "--num_warmup_steps=20",
        "--learning_rate=3e-3",
        # adamw (bias-corrected) learns this from scratch in ~200 steps; the
        # original's uncorrected update diverges at such a high learning rate.
        "--optimizer=adamw",
        "--save_checkpoints_steps=100",
    )
    results = read_results(output / "eval_results.txt")
    assert sorted(results) == [
        "global_step",
        "loss",
        "masked_lm_accuracy",
        "masked_lm_loss",
        "next_sentence_accuracy",
        "next_sentence_loss",
    ]
    assert results["global_step"] == NUM_STEPS
    assert results["masked_lm_accuracy"] >= 0.9, results
    assert results["next_sentence_accuracy"] >= 0.9, results
    # `loss` is the mean of the batches' total losses (as the Estimator's),
    # the others are weighted over all eval examples: close, not equal.
    assert results["loss"] == pytest.approx(
        results["masked_lm_loss"] + results["next_sentence_loss"], rel=0.05
    )
    # Resumable checkpoints every save_checkpoints_steps, and the final
    # weights-only checkpoint under the original names.
    assert (output / "checkpoints" / "ckpt-100.index").exists()
    prefix = output / f"model.ckpt-{NUM_STEPS}"
    assert (output / "bert_config.json").exists()
    model = bert_tf.BertPretrainer.from_checkpoint(str(prefix))
    report = model.checkpoint_load_report
    assert report.missing == []
    assert report.unused == []
    assert "cls/predictions/output_bias" in report.loaded
    assert "cls/seq_relationship/output_weights" in report.loaded

    # Rerun: already at num_train_steps, nothing to train; eval-only restores
    # the trained weights and gives the same numbers.
    os.remove(output / "eval_results.txt")
    run_cli(
        f"--input_file={records}",
        f"--bert_config_file={config}",
        f"--output_dir={output}",
        "--do_eval=true",
        f"--max_seq_length={SEQ_LENGTH}",
        f"--max_predictions_per_seq={PREDICTIONS}",
    )
    again = read_results(output / "eval_results.txt")
    assert again["global_step"] == NUM_STEPS
    assert again["masked_lm_accuracy"] == pytest.approx(
        results["masked_lm_accuracy"], abs=1e-6
    )


@pytest.fixture(scope="module")
def full_length_records(shared_data, tmp_path_factory):
    """sample_text records of >= 124 real tokens: 19 predictions each, fixed or
    dynamic, so every replica's MLM loss has the same normaliser Σw and the
    per-replica losses average to the one-device loss. Dropout off."""
    import tensorflow as tf

    from bert_tf.data_prep.pretraining import create_pretraining_data
    from bert_tf.data_prep.pretraining import parse_pretraining_record

    folder = tmp_path_factory.mktemp("full_length")
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    create_pretraining_data(
        os.path.join(shared_data, "bert_sample_text", "sample_text.txt"),
        str(folder / "all.tfrecord"),
        vocab,
        do_lower_case=True,
        max_seq_length=128,
        max_predictions_per_seq=20,
        random_seed=12345,
        dupe_factor=10,
    )
    kept = 0
    with tf.io.TFRecordWriter(str(folder / "full.tfrecord")) as writer:
        for record in tf.data.TFRecordDataset(str(folder / "all.tfrecord")):
            features = parse_pretraining_record(record, 128, 20)
            if int(tf.reduce_sum(features["input_mask"])) >= 124:
                assert float(tf.reduce_sum(features["masked_lm_weights"])) == 19.0
                writer.write(record.numpy())
                kept += 1
    assert kept >= 48
    tiny_bert_config(30522, max_position_embeddings=128, dropout=0.0).to_json_file(
        folder / "bert_config.json"
    )
    return folder, vocab


def _pretraining_flags(folder, vocab, output, *extra):
    return [
        f"--input_file={folder / 'full.tfrecord'}",
        f"--bert_config_file={folder / 'bert_config.json'}",
        f"--output_dir={output}",
        f"--vocab_file={vocab}",
        "--dynamic_masking=true",
        "--do_train=true",
        "--train_batch_size=8",
        "--num_train_steps=24",
        "--num_warmup_steps=2",
        "--learning_rate=1e-3",
        "--save_checkpoints_steps=4",
        *extra,
    ]


def _final_weights(output, step=24):
    import tensorflow as tf

    reader = tf.train.load_checkpoint(str(output / f"model.ckpt-{step}"))
    return {
        name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
    }


def _assert_same_weights(a, b, rtol):
    import numpy as np

    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_allclose(a[name], b[name], rtol=rtol, atol=1e-6, err_msg=name)


def test_mirrored_run_matches_one_device(full_length_records, tmp_path):
    """MirroredStrategy over 2 logical CPU devices (2 replicas of 4 examples)
    ends with the one-device weights. A killed and resumed run is asserted bit
    for bit in test_exact_resume.py."""
    folder, vocab = full_length_records
    mirrored = tmp_path / "mirrored"
    with script_in_background(
        os.path.join(REPO, "tests", "split_cpu_run.py"),
        "2",
        SCRIPT,
        *_pretraining_flags(
            folder, vocab, mirrored, "--distribution_strategy=mirrored"
        ),
        log_path=tmp_path / "mirrored.log",
    ):
        run_cli(*_pretraining_flags(folder, vocab, tmp_path / "one"))
    reference = _final_weights(tmp_path / "one")
    _assert_same_weights(_final_weights(mirrored), reference, rtol=1e-4)


def test_continues_pretraining_a_sentence_transformers_dir(
    sample_records, minilm_dir, tmp_path
):
    """--init_checkpoint=MiniLM (a sentence-transformers directory: an encoder
    without pre-training heads), no --bert_config_file: the heads start as the
    original initialises them and the log says so; the masked-LM loss falls
    from a fresh head's ln(vocab_size); the output dir is a model dir (its
    config, the vocabulary beside the checkpoint) that embed reads."""
    import json
    import math

    import numpy as np
    import tensorflow as tf

    records, _ = sample_records
    output = tmp_path / "continued"
    # 20 steps bring the masked-LM loss to ~4.9, well under the bound (6.2).
    steps = 20
    result = run_cli(
        f"--input_file={records}",
        f"--init_checkpoint={minilm_dir}",
        f"--output_dir={output}",
        "--do_train=true",
        "--do_eval=true",
        "--train_batch_size=16",
        f"--max_seq_length={SEQ_LENGTH}",
        f"--max_predictions_per_seq={PREDICTIONS}",
        f"--num_train_steps={steps}",
        "--num_warmup_steps=4",
        "--learning_rate=1e-3",
        "--optimizer=adamw",
        "--max_eval_steps=8",
    )
    for head, count in (("masked-LM head", 5), ("next-sentence head", 2)):
        assert (
            f"has no {head} ({count} variables): initialised as the original does"
            in result.stderr
        ), result.stderr[-3000:]
    results = read_results(output / "eval_results.txt")
    assert results["global_step"] == steps
    assert results["masked_lm_loss"] < 0.6 * math.log(30522), results
    # A model dir: MiniLM's config and vocabulary beside the final checkpoint.
    config = json.loads((output / "bert_config.json").read_text())
    assert (config["num_hidden_layers"], config["hidden_size"]) == (6, 384)
    assert (output / "vocab.txt").read_bytes() == (
        open(os.path.join(minilm_dir, "vocab.txt"), "rb").read()
    )
    # The encoder moved from MiniLM's weights, and embed reads the dir.
    reader = tf.train.load_checkpoint(str(output / f"model.ckpt-{steps}"))
    start = bert_tf.BertEncoder.from_checkpoint(minilm_dir)
    word = "bert/embeddings/word_embeddings"
    moved = reader.get_tensor(word) - start.checkpoint_variables()[word].numpy()
    assert 0 < np.abs(moved).max() < 0.1
    embedder = bert_tf.BertEncoder.from_checkpoint(str(output))
    assert embedder.config.hidden_size == 384


def test_heads_missing_from_a_checkpoint_start_as_the_originals(minilm_dir):
    """The original's create_initializer: truncated normal (|x| <= 2 stddev,
    stddev initializer_range before truncation), zero biases, LayerNorm 1/0."""
    import numpy as np

    model = bert_tf.BertPretrainer.from_checkpoint(minilm_dir)
    report = model.checkpoint_load_report
    assert sorted(report.missing) == sorted(
        n for n in model.checkpoint_variables() if n.startswith("cls/")
    )
    values = {n: v.numpy() for n, v in model.checkpoint_variables().items()}
    for name in (
        "cls/predictions/transform/dense/kernel",
        "cls/seq_relationship/output_weights",
    ):
        x = values[name]
        assert np.abs(x).max() <= 2 * 0.02 + 1e-7
        # A normal of stddev 0.02 truncated at 2 stddev has stddev 0.0176.
        assert abs(x.std() - 0.0176) < 0.002, (name, x.std())
    for name in (
        "cls/predictions/transform/dense/bias",
        "cls/predictions/output_bias",
        "cls/seq_relationship/output_bias",
        "cls/predictions/transform/LayerNorm/beta",
    ):
        assert not values[name].any(), name
    assert (values["cls/predictions/transform/LayerNorm/gamma"] == 1).all()
