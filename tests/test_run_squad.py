"""run_squad.py end to end, through its command line, on small real runs."""

import json
import os
import random

import pytest
from cli_script import run_script
from cli_script import script_flag_defaults
from tiny_models import tiny_bert_config

import bert_tf

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "run_squad.py")

# docs/original_bert.md §1: every flag of the original, with its default.
ORIGINAL_FLAGS = {
    "bert_config_file": None,
    "vocab_file": None,
    "output_dir": None,
    "train_file": None,
    "predict_file": None,
    "init_checkpoint": None,
    "do_lower_case": True,
    "max_seq_length": 384,
    "doc_stride": 128,
    "max_query_length": 64,
    "do_train": False,
    "do_predict": False,
    "train_batch_size": 32,
    "predict_batch_size": 8,
    "learning_rate": 5e-5,
    "num_train_epochs": 3.0,
    "warmup_proportion": 0.1,
    "save_checkpoints_steps": 1000,
    "iterations_per_loop": 1000,
    "n_best_size": 20,
    "max_answer_length": 30,
    "use_tpu": False,
    "tpu_name": None,
    "tpu_zone": None,
    "gcp_project": None,
    "master": None,
    "num_tpu_cores": 8,
    "verbose_logging": False,
    "version_2_with_negative": False,
    "null_score_diff_threshold": 0.0,
}

FILLER = "the a of on in near by with house tree river road city park big small old"
FILLER = FILLER.split()
FRUITS = "apple banana cherry grape lemon mango".split()
QUESTION_WORDS = "which fruit animal is named there".split()


def run_cli(*flags, check=True, timeout=300):
    return run_script(SCRIPT, *flags, check=check, timeout=timeout)


def squad_json(num_questions, seed, prefix, version_2=False):
    """SQuAD-format questions "which fruit is named there": the answer is the one
    fruit word in a context of filler words. With version_2, every third
    paragraph also gets an unanswerable "which animal" question."""
    rng = random.Random(seed)
    paragraphs = []
    for i in range(num_questions):
        words = [rng.choice(FILLER) for _ in range(rng.randint(4, 12))]
        fruit = rng.choice(FRUITS)
        position = rng.randint(0, len(words))
        words.insert(position, fruit)
        context = " ".join(words)
        start = len(" ".join(words[:position])) + (1 if position else 0)
        assert context[start : start + len(fruit)] == fruit
        qa = {
            "id": f"{prefix}{i}",
            "question": "which fruit is named there",
            "answers": [{"text": fruit, "answer_start": start}],
        }
        qas = [qa]
        if version_2:
            qa["is_impossible"] = False
            if i % 3 == 0:
                qas.append(
                    {
                        "id": f"{prefix}{i}x",
                        "question": "which animal is named there",
                        "answers": [],
                        "is_impossible": True,
                    }
                )
        paragraphs.append({"context": context, "qas": qas})
    return {
        "version": "v2.0" if version_2 else "1.1",
        "data": [{"title": "fruit", "paragraphs": paragraphs}],
    }


def write_task(path, version_2=False):
    path.mkdir(parents=True, exist_ok=True)
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab += FILLER + FRUITS + QUESTION_WORDS
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tiny_bert_config(len(vocab)).to_json_file(path / "bert_config.json")
    train = squad_json(48, 0, "train", version_2)
    dev = squad_json(12, 1, "dev", version_2)
    (path / "train.json").write_text(json.dumps(train))
    (path / "dev.json").write_text(json.dumps(dev))
    return path


def task_flags(data, output, *extra):
    return [
        f"--vocab_file={data / 'vocab.txt'}",
        f"--bert_config_file={data / 'bert_config.json'}",
        f"--output_dir={output}",
        f"--train_file={data / 'train.json'}",
        f"--predict_file={data / 'dev.json'}",
        "--max_seq_length=32",
        "--max_query_length=8",
        "--doc_stride=16",
        "--train_batch_size=8",
        "--learning_rate=2e-3",
        *extra,
    ]


def question_ids(path):
    dataset = json.loads(path.read_text())
    return [
        qa["id"]
        for article in dataset["data"]
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]


def test_every_original_flag_with_its_default():
    defaults = script_flag_defaults("run_squad")
    for name, default in ORIGINAL_FLAGS.items():
        assert name in defaults, name
        assert defaults[name] == default, (name, defaults[name])
    assert defaults["do_eval"] is False


def test_fine_tunes_predicts_and_scores_squad_v1(tmp_path):
    data = write_task(tmp_path / "data")
    output = tmp_path / "out"
    run_cli(
        *task_flags(
            data,
            output,
            "--do_train=true",
            "--do_predict=true",
            "--do_eval=true",
            "--num_train_epochs=15",
        )
    )
    for name in ("train.tf_record", "eval.tf_record", "bert_config.json", "vocab.txt"):
        assert (output / name).exists(), name
    # int(48 examples / 8 * 15) steps, weights only under the original names.
    assert (output / "model.ckpt-90.index").exists()
    assert not (output / "null_odds.json").exists()

    ids = question_ids(data / "dev.json")
    text = (output / "predictions.json").read_text()
    assert text.startswith('{\n    "') and text.endswith("}\n")  # indent=4
    predictions = json.loads(text)
    assert list(predictions) == ids
    nbest = json.loads((output / "nbest_predictions.json").read_text())
    assert list(nbest) == ids
    for entries in nbest.values():
        assert 1 <= len(entries) <= 20
        for entry in entries:
            assert set(entry) == {"text", "probability", "start_logit", "end_logit"}
        assert abs(sum(e["probability"] for e in entries) - 1.0) < 1e-5
        assert predictions[ids[0]] in {e["text"] for e in nbest[ids[0]]}

    results = json.loads((output / "eval_results.json").read_text())
    assert set(results) == {"exact_match", "f1"}
    assert results["exact_match"] >= 75.0, results  # it learned the task
    assert results["f1"] >= results["exact_match"]

    # Predict-only restores the latest resumable checkpoint: same answers.
    (output / "predictions.json").unlink()
    serving = tmp_path / "serving"
    result = run_cli(
        *task_flags(data, output, "--do_predict=true", f"--export_dir={serving}")
    )
    assert "ckpt-90" in result.stderr
    assert json.loads((output / "predictions.json").read_text()) == predictions

    # --export_dir: raw question + context in, the same answers out (every
    # dev context fits one window, so the original's post-processing and the
    # signature's best-span search see the same logits).
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the ops TF Serving links in)

    # Version 1, beside its Keras file and the example batching_parameters.txt.
    assert sorted(os.listdir(serving)) == ["1", "1.keras", "batching_parameters.txt"]
    signature = tf.saved_model.load(str(serving / "1")).signatures["serving_default"]
    dev = json.loads((data / "dev.json").read_text())
    paragraphs = dev["data"][0]["paragraphs"]
    outputs = signature(
        question=tf.constant([p["qas"][0]["question"] for p in paragraphs]),
        context=tf.constant([p["context"] for p in paragraphs]),
    )
    served = [text.decode() for text in outputs["answer_text"].numpy()]
    assert served == [predictions[p["qas"][0]["id"]] for p in paragraphs]

    model = bert_tf.BertSpanLabeler.from_checkpoint(str(output))
    assert model.checkpoint_load_report.missing == []


def test_squad_v2_writes_null_odds_and_scores_them(tmp_path):
    data = write_task(tmp_path / "data", version_2=True)
    output = tmp_path / "out"
    run_cli(
        *task_flags(
            data,
            output,
            "--version_2_with_negative=true",
            "--do_train=true",
            "--do_predict=true",
            "--do_eval=true",
            "--num_train_epochs=3",
            "--null_score_diff_threshold=-1.0",
        )
    )
    ids = question_ids(data / "dev.json")
    assert any(i.endswith("x") for i in ids)
    null_odds = json.loads((output / "null_odds.json").read_text())
    assert list(null_odds) == ids
    assert all(isinstance(v, float) for v in null_odds.values())
    predictions = json.loads((output / "predictions.json").read_text())
    assert list(predictions) == ids
    nbest = json.loads((output / "nbest_predictions.json").read_text())
    assert all("" in {e["text"] for e in entries} for entries in nbest.values())
    results = json.loads((output / "eval_results.json").read_text())
    for key in ("exact", "f1", "total", "HasAns_exact", "NoAns_exact"):
        assert key in results, key
    assert "best_f1_thresh" in results and "best_exact" in results
    assert results["total"] == len(ids)


@pytest.mark.parametrize(
    "overrides, expected",
    [
        ({}, "`do_train` or `do_predict`"),
        ({"do_train": True, "train_file": None}, "`train_file`"),
        ({"do_predict": True, "predict_file": None}, "`predict_file`"),
        ({"do_train": True, "do_eval": True}, "--do_predict"),
        ({"do_predict": True, "max_seq_length": 11}, "max_query_length"),
        ({"do_predict": True, "max_seq_length": 65}, "max_position_embeddings"),
        (
            {"do_train": True, "gradient_accumulation_steps": 3},
            "--gradient_accumulation_steps=3",
        ),
        (
            {
                "do_train": True,
                "init_checkpoint": "cased_L-12_H-768_A-12/bert_model.ckpt",
            },
            "do_lower_case",
        ),
    ],
)
def test_validate_flags_or_throw(overrides, expected):
    from bert_tf.options import RunOptions
    from bert_tf.options import SquadOptions
    from bert_tf.options import TrainingOptions

    values = {
        "do_lower_case": True,
        "init_checkpoint": None,
        "do_train": False,
        "do_predict": False,
        "do_eval": False,
        "train_file": "train.json",
        "predict_file": "dev.json",
        "vocab_file": "vocab.txt",
        "output_dir": "out",
        "max_seq_length": 32,
        "max_query_length": 8,
        "train_batch_size": 8,
        "gradient_accumulation_steps": 1,
    }
    values.update(overrides)
    config = bert_tf.BertConfig(vocab_size=10, max_position_embeddings=64)

    def check():
        training = {
            k: values.pop(k)
            for k in ("train_batch_size", "gradient_accumulation_steps")
        }
        squad = {
            k: values.pop(k) for k in ("train_file", "predict_file", "max_query_length")
        }
        run = RunOptions(training=TrainingOptions(**training), **values)
        options = SquadOptions(**squad)
        run.check_config(config)
        options.check(run)

    with pytest.raises(ValueError) as error:
        check()
    assert expected in str(error.value)
