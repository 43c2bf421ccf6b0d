"""The training tools take --init_checkpoint's own vocabulary when --vocab_file is unset."""

import os
import shutil

import pytest

from bert_tf.errors import UserInputError
from bert_tf.options.classifier_options import ClassifierOptions
from bert_tf.options.ner_options import NerOptions
from bert_tf.options.run_options import RunOptions
from bert_tf.options.squad_options import SquadOptions


def _tasks(data_dir, predict_file):
    from bert_tf.tasks.classification import ClassificationTask
    from bert_tf.tasks.ner import NerTask
    from bert_tf.tasks.squad import SquadTask

    return {
        "run_classifier": (
            ClassificationTask,
            ClassifierOptions(task_name="MRPC", data_dir=str(data_dir)),
        ),
        "run_squad": (SquadTask, SquadOptions(predict_file=str(predict_file))),
        "run_ner": (NerTask, NerOptions(data_dir=str(data_dir))),
    }


@pytest.fixture
def inputs(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name in ("train.txt", "dev.txt", "test.txt"):
        (data / name).write_text("EU B-ORG\nrejects O\n\n")
    predict = tmp_path / "dev-v1.1.json"
    predict.write_text('{"version": "1.1", "data": []}')
    return data, predict


@pytest.mark.parametrize("tool", ["run_classifier", "run_squad", "run_ner"])
def test_vocabulary_comes_from_the_model_directory(tool, minilm_dir, inputs, tmp_path):
    task_class, options = _tasks(*inputs)[tool]
    run = RunOptions(
        output_dir=str(tmp_path / "out"),
        init_checkpoint=minilm_dir,
        do_predict=True,
    )
    task = task_class(run, options)
    assert task.run.vocab_file == os.path.join(minilm_dir, "vocab.txt")
    # A vocabulary given wins over the directory's.
    given = tmp_path / "vocab.txt"
    shutil.copy(os.path.join(minilm_dir, "vocab.txt"), given)
    run = RunOptions(
        output_dir=str(tmp_path / "out2"),
        init_checkpoint=minilm_dir,
        vocab_file=str(given),
        do_predict=True,
    )
    assert task_class(run, options).run.vocab_file == str(given)


@pytest.mark.parametrize("tool", ["run_classifier", "run_squad", "run_ner"])
def test_no_vocabulary_anywhere_names_the_flag(tool, minilm_dir, inputs, tmp_path):
    task_class, options = _tasks(*inputs)[tool]
    # Without --init_checkpoint: the original's message, from the option check.
    run = RunOptions(output_dir=str(tmp_path / "out"), do_predict=True)
    with pytest.raises(UserInputError, match=r"^Flag --vocab_file must be specified"):
        task_class(run, options)
    # A model directory without a vocabulary: the message names the directory.
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(os.path.join(minilm_dir, name), bare / name)
    run = RunOptions(
        output_dir=str(tmp_path / "out"), init_checkpoint=str(bare), do_predict=True
    )
    with pytest.raises(UserInputError, match=f"none beside --init_checkpoint={bare}"):
        task_class(run, options)
