"""run_classifier.py end to end, through its command line, on small real runs."""

import os
import re

import numpy as np
import pytest
from cli_script import run_script
from cli_script import script_flag_defaults
from tiny_models import tiny_bert_config

import bert_tf

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "run_classifier.py")

# docs/original_bert.md §1: every flag of the original, with its default.
ORIGINAL_FLAGS = {
    "data_dir": None,
    "bert_config_file": None,
    "task_name": None,
    "vocab_file": None,
    "output_dir": None,
    "init_checkpoint": None,
    "do_lower_case": True,
    "max_seq_length": 128,
    "do_train": False,
    "do_eval": False,
    "do_predict": False,
    "train_batch_size": 32,
    "eval_batch_size": 8,
    "predict_batch_size": 8,
    "learning_rate": 5e-5,
    "num_train_epochs": 3.0,
    "warmup_proportion": 0.1,
    "save_checkpoints_steps": 1000,
    "iterations_per_loop": 1000,
    "use_tpu": False,
    "tpu_name": None,
    "tpu_zone": None,
    "gcp_project": None,
    "master": None,
    "num_tpu_cores": 8,
}

WORDS = (
    "good great fine nice bad awful poor sad the movie was is a very plot film".split()
)


def run_cli(*flags, check=True, timeout=300):
    return run_script(SCRIPT, *flags, check=check, timeout=timeout)


def write_task(tmp_path, train_rows=96, seed=0):
    """A sentiment task a tiny BERT learns in a few dozen steps."""
    rng = np.random.default_rng(seed)
    tmp_path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    config = tiny_bert_config(len(vocab))
    config.to_json_file(tmp_path / "bert_config.json")

    def rows(count):
        out = []
        for _ in range(count):
            label = int(rng.integers(0, 2))
            word = rng.choice(WORDS[:4] if label else WORDS[4:8])
            filler = " ".join(rng.choice(WORDS[8:], size=int(rng.integers(1, 8))))
            out.append(f"{filler} {word} {filler}\t{label}")
        return "sentence\tlabel\n" + "\n".join(out) + "\n"

    (tmp_path / "train.tsv").write_text(rows(train_rows))
    (tmp_path / "dev.tsv").write_text(rows(40))
    (tmp_path / "test.tsv").write_text(rows(10))
    return tmp_path


def custom_flags(data, output, *extra):
    return [
        "--task_name=custom",
        f"--data_dir={data}",
        "--train_file=train.tsv",
        "--dev_file=dev.tsv",
        "--test_file=test.tsv",
        "--text_a_column=sentence",
        "--label_column=label",
        f"--vocab_file={data / 'vocab.txt'}",
        f"--bert_config_file={data / 'bert_config.json'}",
        f"--output_dir={output}",
        "--max_seq_length=32",
        "--train_batch_size=16",
        "--eval_batch_size=16",
        *extra,
    ]


def test_every_original_flag_with_its_default():
    defaults = script_flag_defaults("run_classifier")
    for name, default in ORIGINAL_FLAGS.items():
        assert name in defaults, name
        assert defaults[name] == default, (name, defaults[name])


def test_fine_tunes_evaluates_and_predicts(tmp_path):
    data = write_task(tmp_path / "data")
    output = tmp_path / "out"
    run_cli(
        *custom_flags(
            data,
            output,
            "--do_train=true",
            "--do_eval=true",
            "--do_predict=true",
            # Learns from every one of 8 seeds tried (2e-3 for 12 epochs
            # stayed at chance for 1 seed in 6: a test of the random stream).
            "--learning_rate=5e-4",
            "--num_train_epochs=24",
            "--save_checkpoints_steps=10",
            f"--export_dir={tmp_path / 'serving'}",
        )
    )
    lines = (output / "eval_results.txt").read_text().splitlines()
    results = dict(line.split(" = ") for line in lines)
    assert [line.split(" = ")[0] for line in lines] == sorted(
        results
    )  # sorted, as the original
    assert {"eval_accuracy", "eval_loss", "global_step", "loss"} <= set(results)
    assert int(results["global_step"]) == int(96 / 16 * 24)
    assert float(results["eval_accuracy"]) >= 0.9  # it learned the task

    probabilities = np.loadtxt(output / "test_results.tsv", delimiter="\t")
    assert probabilities.shape == (10, 2)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, atol=1e-5)

    # Weights-only checkpoint with original names, loadable as any checkpoint.
    model = bert_tf.BertClassifier.from_checkpoint(str(output), num_labels=2)
    assert model.checkpoint_load_report.missing == []
    assert "output_weights" in model.checkpoint_load_report.loaded
    assert os.path.exists(output / "model.ckpt-144.index")
    events = [f for _, _, files in os.walk(output / "tensorboard") for f in files]
    assert any(name.startswith("events.out.tfevents") for name in events)

    # --export_dir: the SavedModel answers the raw test sentences as the
    # Python pipeline did for test_results.tsv.
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the ops TF Serving links in)

    # Version 1, beside the example batching_parameters.txt.
    assert sorted(os.listdir(tmp_path / "serving")) == [
        "1",
        "1.keras",
        "batching_parameters.txt",
    ]
    served = tf.saved_model.load(str(tmp_path / "serving" / "1"))
    sentences = [
        line.split("\t")[0] for line in (data / "test.tsv").read_text().splitlines()[1:]
    ]
    signature = served.signatures["serving_default"]
    assert set(signature.structured_input_signature[1]) == {"text_a"}
    outputs = signature(text_a=tf.constant(sentences))
    np.testing.assert_allclose(outputs["probabilities"], probabilities, atol=1e-5)
    assert [s.decode() for s in outputs["labels"].numpy()] == [
        str(i) for i in probabilities.argmax(axis=1)
    ]


def test_other_settings_stop_with_the_differences_unless_overwritten(tmp_path):
    """A finished 6-step run: an unreadable newest checkpoint falls back to the
    one before it, other settings stop with the differences, and
    --overwrite_output_dir starts over. Resuming after a kill is asserted bit
    for bit in test_exact_resume.py."""
    data = write_task(tmp_path / "data")
    output = tmp_path / "out"
    flags = custom_flags(
        data,
        output,
        "--do_train=true",
        "--num_train_epochs=1",
        "--save_checkpoints_steps=3",
    )
    run_cli(*flags)
    assert os.path.exists(output / "model.ckpt-6.index")  # int(96/16*1) = 6

    # An unreadable newest checkpoint (truncated data file): reported by path
    # and reason, the one before it is used.
    newest = output / "checkpoints" / "ckpt-6.data-00000-of-00001"
    with open(newest, "r+b") as f:
        f.truncate(os.path.getsize(newest) // 2)
    eval_only = [f for f in flags if f != "--do_train=true"] + ["--do_eval=true"]
    result = run_cli(*eval_only)
    # absl writes a WARNING as "W<date> ... file:line] message".
    assert re.search(r"\nW\d{4} [^\n]*ckpt-6 cannot be read \(.+\)", result.stderr)
    assert re.search(r"Using the weights of \S*ckpt-3 \(step 3\)", result.stderr)
    assert "global_step = 3" in (output / "eval_results.txt").read_text()

    # Other settings in the same output_dir: stopped, with the differences.
    changed = [f for f in flags if not f.startswith("--num_train_epochs")]
    changed.append("--num_train_epochs=2")
    result = run_cli(*changed, check=False)
    assert result.returncode != 0
    assert "holds a run with other settings" in result.stderr
    assert "num_train_epochs: 1.0 -> 2.0" in result.stderr
    # Named before TensorFlow and the model load (issue 49): the one line.
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("run_classifier: error: --output_dir=")

    # --overwrite_output_dir starts the changed run over (no resume).
    result = run_cli(*changed, "--overwrite_output_dir=true")
    assert "Resumed from" not in result.stderr
    assert os.path.exists(output / "model.ckpt-12.index")  # int(96/16*2)
    assert not os.path.exists(output / "model.ckpt-6.index")


def test_eval_without_training_needs_trained_weights(tmp_path):
    data = write_task(tmp_path / "data")
    result = run_cli(
        *custom_flags(data, tmp_path / "out", "--do_eval=true"), check=False
    )
    assert result.returncode != 0
    assert "--do_eval/--do_predict without --do_train need trained weights" in (
        result.stderr
    )
    assert not (tmp_path / "out" / "eval_results.txt").exists()


def test_bad_rows_stop_with_file_and_line_or_are_counted(tmp_path):
    data = write_task(tmp_path / "data")
    with open(data / "train.tsv", "a") as f:
        f.write("a sentence without a label\n")
    bad_line = len((data / "train.tsv").read_text().splitlines())
    output = tmp_path / "out"
    result = run_cli(*custom_flags(data, output, "--do_train=true"), check=False)
    assert result.returncode != 0
    assert f"train.tsv:{bad_line}:" in result.stderr

    result = run_cli(
        *custom_flags(
            data, output, "--do_train=true", "--skip_bad_rows", "--num_train_epochs=0.2"
        )
    )
    assert "Skipped 1" in result.stderr or "skipped 1" in result.stderr


def test_regression_task_writes_single_scores(tmp_path):
    data = write_task(tmp_path / "data")
    for split in ("train", "dev", "test"):
        rows = (data / f"{split}.tsv").read_text().splitlines()
        rows = [rows[0]] + [
            r.rsplit("\t", 1)[0] + f"\t{int(r[-1]) * 1.0:.1f}" for r in rows[1:]
        ]
        (data / f"{split}.tsv").write_text("\n".join(rows) + "\n")
    output = tmp_path / "out"
    run_cli(
        *custom_flags(
            data,
            output,
            "--is_regression",
            "--do_train=true",
            "--do_eval=true",
            "--do_predict=true",
            "--learning_rate=2e-3",
            "--num_train_epochs=12",
        )
    )
    results = dict(
        line.split(" = ")
        for line in (output / "eval_results.txt").read_text().splitlines()
    )
    assert {"pearson", "spearman", "eval_loss"} <= set(results)
    assert float(results["pearson"]) > 0.8
    scores = np.loadtxt(output / "test_results.tsv")
    assert scores.shape == (10,)


def test_mnli_reports_matched_and_mismatched(tmp_path):
    data = write_task(tmp_path / "data")
    header = (
        "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\t"
        "sentence1_parse\tsentence2_parse\tsentence1\tsentence2\tlabel1\tgold_label"
    )
    labels = ["contradiction", "entailment", "neutral"]
    rng = np.random.default_rng(1)
    for name, count in (("train", 48), ("dev_matched", 12), ("dev_mismatched", 9)):
        rows = [header]
        for i in range(count):
            label = labels[i % 3]
            a = " ".join(rng.choice(WORDS, size=4))
            rows.append(
                f"{i}\t0\t0\tfiction\t-\t-\t-\t-\t{a}\tthe movie\t{label}\t{label}"
            )
        (data / f"{name}.tsv").write_text("\n".join(rows) + "\n")
    output = tmp_path / "out"
    run_cli(
        "--task_name=MNLI",
        f"--data_dir={data}",
        f"--vocab_file={data / 'vocab.txt'}",
        f"--bert_config_file={data / 'bert_config.json'}",
        f"--output_dir={output}",
        "--max_seq_length=32",
        "--do_train=true",
        "--do_eval=true",
        "--num_train_epochs=1",
        "--train_batch_size=16",
    )
    results = dict(
        line.split(" = ")
        for line in (output / "eval_results.txt").read_text().splitlines()
    )
    assert {"eval_accuracy", "eval_accuracy_mismatched", "eval_loss_mismatched"} <= set(
        results
    )
    assert int(results["global_step"]) == 3
