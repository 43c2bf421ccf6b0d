"""A --do_train rerun in a used output_dir, compared before TensorFlow loads
(`bert_tf.options.run_identity`): the settings the flags and files give are
those the runner records, so a resume passes and any change stops, naming it.

The command-line side (one line, exit 2, TensorFlow never imported) is
tests/test_cli.py's; that the runner's real records pass is asserted by the
resume tests (test_exact_resume.py, test_run_retrieval.py).
"""

import dataclasses
import json

import pytest

from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.options.checks import run_defining
from bert_tf.options.classifier_options import ClassifierOptions
from bert_tf.options.ner_options import NerOptions
from bert_tf.options.run_identity import run_settings
from bert_tf.options.run_identity import stop_if_other_run
from bert_tf.options.run_options import RunOptions
from bert_tf.options.similarity_options import SimilarityOptions
from bert_tf.options.training_options import TrainingOptions


def record(run, options, script, config=None, data=None):
    """Writes run_settings.json as the runner does after the model loads
    (with the model's config, which the early check does not read)."""
    config = config or BertConfig(vocab_size=8, hidden_size=4, num_attention_heads=2)
    settings = run_settings(script, run, run_defining(options), config, data)
    path = f"{run.output_dir}/run_settings.json"
    with open(path, "w") as f:
        json.dump(settings, f, indent=2, sort_keys=True)


@pytest.fixture
def similarity(tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("a cat\ta kitten\na dog\ta puppy\n")
    (tmp_path / "out").mkdir()
    run = RunOptions(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=str(tmp_path),
        max_seq_length=None,
        do_train=True,
        training=TrainingOptions(train_batch_size=16),
    )
    options = SimilarityOptions(train_file=str(pairs), loss="mnr")
    record(run, options, "run_similarity", data=options.training_fingerprints(run))
    return run, options, pairs


def test_the_same_run_passes_and_a_changed_option_stops_naming_it(similarity):
    run, options, _ = similarity
    stop_if_other_run("run_similarity", run, options)  # a resume

    faster = dataclasses.replace(
        run, training=dataclasses.replace(run.training, learning_rate=1e-4)
    )
    with pytest.raises(UserInputError) as error:
        stop_if_other_run("run_similarity", faster, options)
    message = str(error.value)
    assert f"output_dir={run.output_dir} holds a run with other settings" in message
    differences = message.split("(recorded -> now):")[1].split("\n")
    assert [line.strip() for line in differences if line.strip()] == [
        f"learning_rate: {run.training.learning_rate!r} -> 0.0001"
    ]
    # A task option, recorded twice (as a flag and with the data).
    scaled = dataclasses.replace(options, similarity_scale=10.0)
    with pytest.raises(UserInputError, match="similarity_scale: 20.0 -> 10.0"):
        stop_if_other_run("run_similarity", run, scaled)


def test_changed_training_data_stops_and_overwrite_or_no_training_passes(similarity):
    run, options, pairs = similarity
    pairs.write_text("a cat\ta kitten\na dog\ta hound\n")
    with pytest.raises(UserInputError, match=r"data\.0\.sha256: "):
        stop_if_other_run("run_similarity", run, options)
    overwrite = dataclasses.replace(
        run, training=dataclasses.replace(run.training, overwrite_output_dir=True)
    )
    stop_if_other_run("run_similarity", overwrite, options)
    stop_if_other_run(
        "run_similarity", dataclasses.replace(run, do_train=False), options
    )


def test_a_changed_bert_config_file_stops(tmp_path):
    """--bert_config_file is read as the runner reads it; the checkpoint's
    vocabulary (no --vocab_file: run_ner's) is left to the check after the
    model loads."""
    config = BertConfig(vocab_size=8, hidden_size=4, num_attention_heads=2)
    config_file = tmp_path / "bert_config.json"
    config.to_json_file(config_file)
    train = tmp_path / "train.txt"
    train.write_text("EU B-ORG\nrejects O\n\n")
    (tmp_path / "out").mkdir()
    run = RunOptions(
        output_dir=str(tmp_path / "out"),
        bert_config_file=str(config_file),
        init_checkpoint=str(tmp_path),
        do_train=True,
    )
    options = NerOptions(train_file=str(train))
    # The runner's record: the vocabulary found beside the checkpoint.
    recorded_run = dataclasses.replace(run, vocab_file=str(train))
    record(recorded_run, options, "run_ner", config, options.training_fingerprints(run))
    stop_if_other_run("run_ner", run, options)

    BertConfig(vocab_size=8, hidden_size=8, num_attention_heads=2).to_json_file(
        config_file
    )
    with pytest.raises(UserInputError, match=r"bert_config\.hidden_size: 4 -> 8"):
        stop_if_other_run("run_ner", run, options)


def test_a_run_recorded_by_another_tool_stops(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "train.txt").write_text("EU B-ORG\n\n")
    run = RunOptions(output_dir=str(tmp_path / "out"), do_train=True)
    options = ClassifierOptions(task_name="custom", train_file="train.tsv")
    record(run, options, "run_classifier")
    with pytest.raises(UserInputError, match="script: 'run_classifier' -> 'run_ner'"):
        stop_if_other_run(
            "run_ner", run, NerOptions(train_file=str(tmp_path / "train.txt"))
        )


def test_run_reranker_rerun_with_another_loss_stops(tmp_path):
    """Issue 61.12: run_reranker's run-defining flags (--rerank_loss,
    --hard_negatives, --retrieval_checkpoint, --passage_length) are compared
    as the other tools' are."""
    from bert_tf.options.reranker_options import RerankerOptions

    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text('{"_id": "d1", "text": "a cat"}\n')
    (beir / "queries.jsonl").write_text('{"_id": "q1", "text": "cat?"}\n')
    (beir / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    (tmp_path / "out").mkdir()
    run = RunOptions(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=str(tmp_path),
        max_seq_length=None,
        do_train=True,
    )
    options = RerankerOptions(
        data_dir=str(beir), retrieval_checkpoint=str(tmp_path), rerank_loss="listwise"
    )
    record(run, options, "run_reranker", data=options.training_fingerprints(run))
    stop_if_other_run("run_reranker", run, options)  # a resume
    for changed, shown in (
        ({"rerank_loss": "bce"}, "rerank_loss"),
        ({"hard_negatives": 5}, "hard_negatives"),
    ):
        with pytest.raises(UserInputError, match=shown):
            stop_if_other_run(
                "run_reranker", run, dataclasses.replace(options, **changed)
            )
