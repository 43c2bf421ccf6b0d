"""A run SIGKILLed at any point and rerun ends with the uninterrupted run's
weights bit for bit, dropout on (0.1): run_classifier, run_squad, run_ner and
run_pretraining (static and dynamic masking).

Each script is killed at a checkpoint (classifier and dynamic-masking
pretraining twice, at two checkpoints) and each time rerun with the same
command; the final `model.ckpt-<step>` must equal the uninterrupted
run's exactly (max |diff| == 0). Tiny 2-layer models, a dozen steps.
"""

import os
import re

import numpy as np
import pytest
import test_run_classifier
import test_run_squad
from cli_script import kill_when_written
from cli_script import run_script
from cli_script import script_in_background
from tiny_models import sample_text_pretraining
from tiny_models import tiny_bert_config

import bert_tf

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def final_weights(output):
    import tensorflow as tf

    prefixes = [
        name[: -len(".index")]
        for name in os.listdir(output)
        if name.startswith("model.ckpt-") and name.endswith(".index")
    ]
    assert len(prefixes) == 1, prefixes
    reader = tf.train.load_checkpoint(str(output / prefixes[0]))
    return prefixes[0], {
        name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()
    }


def max_difference(a, b):
    assert sorted(a) == sorted(b)
    return max(float(np.max(np.abs(a[name] - b[name]))) for name in a)


SAVE_EVERY = 3  # --save_checkpoints_steps of every run here


def assert_killed_twice_ends_bit_identical(script, flags_for, tmp_path, kill_at):
    """Uninterrupted vs killed at each step of `kill_at` in turn, each time
    rerun: the same final weights, exactly."""
    script = os.path.join(REPO, script)
    reference = tmp_path / "uninterrupted"
    killed = tmp_path / "killed"
    with script_in_background(
        script, *flags_for(reference), log_path=tmp_path / "uninterrupted.log"
    ):
        for step in kill_at:
            kill_when_written(
                script, flags_for(killed), killed / "checkpoints" / f"ckpt-{step}.index"
            )
            assert not any(
                name.startswith("model.ckpt-") for name in os.listdir(killed)
            )
        result = run_script(script, *flags_for(killed))
    # Resumed from the last checkpoint recorded before the last kill, not from
    # the start. A kill that lands after the checkpoint's .index is written
    # but before the checkpoint state names it resumes one checkpoint earlier.
    resumed = re.search(r"Resumed from \S+ at step (\d+)", result.stderr)
    assert resumed, result.stderr[-3000:]
    low = kill_at[0] if len(kill_at) > 1 else kill_at[0] - SAVE_EVERY
    assert low <= int(resumed.group(1)) <= kill_at[-1], resumed.group(0)
    name, weights = final_weights(killed)
    reference_name, expected = final_weights(reference)
    assert name == reference_name
    difference = max_difference(weights, expected)
    print(
        f"{os.path.basename(script)}: max |diff| killed twice vs uninterrupted =",
        difference,
    )
    assert difference == 0.0, difference
    return weights, expected


def test_run_classifier_resumes_bit_for_bit(tmp_path):
    data = test_run_classifier.write_task(tmp_path / "data", train_rows=96)
    config = bert_tf.BertConfig.from_json_file(data / "bert_config.json")
    assert config.hidden_dropout_prob == 0.1  # dropout is on

    def flags_for(output):
        return test_run_classifier.custom_flags(
            data,
            output,
            "--do_train=true",
            "--num_train_epochs=2",  # 96 / 16 * 2 = 12 steps
            "--save_checkpoints_steps=3",
        )

    weights, _ = assert_killed_twice_ends_bit_identical(
        "run_classifier.py", flags_for, tmp_path, kill_at=(3, 9)
    )
    assert "output_weights" in weights


def test_run_squad_resumes_bit_for_bit(tmp_path):
    data = test_run_squad.write_task(tmp_path / "data")

    def flags_for(output):
        return test_run_squad.task_flags(
            data,
            output,
            "--do_train=true",
            "--num_train_epochs=2",  # 48 / 8 * 2 = 12 steps
            "--save_checkpoints_steps=3",
        )

    assert_killed_twice_ends_bit_identical(
        "run_squad.py", flags_for, tmp_path, kill_at=(6,)
    )


def test_run_ner_resumes_bit_for_bit(shared_data, tmp_path):
    """run_ner: real WNUT-17 sentences, a random 2-layer model, dropout 0.1."""
    path = os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    with open(path, encoding="utf-8") as f:
        sentences = f.read().strip("\n").split("\n\n")
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.txt").write_text("\n\n".join(sentences[:48]) + "\n", "utf-8")
    vocab = os.path.join(shared_data, "vocab", "bert-base-cased", "vocab.txt")
    tiny_bert_config(28996).to_json_file(data / "bert_config.json")

    def flags_for(output):
        return [
            f"--data_dir={data}",
            f"--bert_config_file={data / 'bert_config.json'}",
            f"--vocab_file={vocab}",
            "--do_lower_case=false",
            f"--output_dir={output}",
            "--max_seq_length=48",
            "--do_train=true",
            "--train_batch_size=8",
            "--num_train_epochs=2",  # 48 / 8 * 2 = 12 steps
            "--learning_rate=1e-3",
            "--save_checkpoints_steps=3",
        ]

    weights, _ = assert_killed_twice_ends_bit_identical(
        "run_ner.py", flags_for, tmp_path, kill_at=(6,)
    )
    assert "cls/token_classifier/output_weights" in weights


@pytest.fixture(scope="module")
def pretraining_records(shared_data, tmp_path_factory):
    """sample_text.txt records and a 2-layer config with dropout 0.1."""
    folder = tmp_path_factory.mktemp("pretraining")
    return sample_text_pretraining(shared_data, folder, dropout=0.1)


@pytest.mark.parametrize("dynamic_masking", [False, True])
def test_run_pretraining_resumes_bit_for_bit(
    pretraining_records, tmp_path, dynamic_masking
):
    folder, vocab = pretraining_records

    def flags_for(output):
        return [
            f"--input_file={folder / 'sample.tfrecord'}",
            f"--bert_config_file={folder / 'bert_config.json'}",
            f"--output_dir={output}",
            f"--vocab_file={vocab}",
            f"--dynamic_masking={str(dynamic_masking).lower()}",
            "--max_seq_length=64",
            "--max_predictions_per_seq=10",
            "--do_train=true",
            "--train_batch_size=8",
            "--num_train_steps=12",
            "--num_warmup_steps=2",
            "--learning_rate=1e-3",
            "--save_checkpoints_steps=3",
        ]

    assert_killed_twice_ends_bit_identical(
        "run_pretraining.py",
        flags_for,
        tmp_path,
        # Two kills where the masks are drawn per step (the stream's state
        # must survive both); static masks once.
        kill_at=(3, 9) if dynamic_masking else (6,),
    )
