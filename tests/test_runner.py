"""The one runner (`bert_tf.tasks.runner.run_task`) driving a task of 30 lines.

The fake task classifies random token ids by whether the first one is even:
what the runner owns (config, seed, the model, the lock, training and
restoring, prediction, evaluation and its results file) is checked on it,
not through a real task.
"""

import os

import numpy as np
import pytest
import tensorflow as tf
from tiny_models import tiny_bert_config

from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier
from bert_tf.options import RunOptions
from bert_tf.options import TrainingOptions
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.training_data import TrainingData

SEQ = 8


def examples(n, seed):
    ids = np.random.default_rng(seed).integers(5, 99, size=(n, SEQ), dtype=np.int32)
    inputs = {
        "input_ids": ids,
        "input_mask": np.ones_like(ids),
        "segment_ids": np.zeros_like(ids),
    }
    return inputs, (ids[:, 0] % 2).astype(np.int32)


class EvenFirstToken(Task):
    script = "run_even_first_token"
    model_class = BertClassifier
    copies_vocab = False

    def model_kwargs(self):
        return {"num_labels": 2}

    def training_data(self):
        inputs, labels = examples(64, seed=1)
        batch = self.run.training.micro_batch_size

        def dataset_fn(input_context, skip_batches):
            data = tf.data.Dataset.from_tensor_slices({**inputs, "labels": labels})
            return data.repeat().batch(batch, drop_remainder=True).skip(skip_batches)

        return TrainingData(dataset_fn, num_train_steps=4, fingerprints=["64 examples"])

    def loss(self, batch, outputs):
        return tf.reduce_mean(
            tf.keras.losses.sparse_categorical_crossentropy(
                batch["labels"], outputs["logits"], from_logits=True
            )
        )

    def evaluate(self, model, global_step):
        inputs, labels = examples(32, seed=2)
        logits = model(inputs, training=False)["logits"]
        accuracy = float(np.mean(np.argmax(logits, -1) == labels))
        return {"eval_accuracy": accuracy, "global_step": global_step}

    def predict(self, model, global_step):
        inputs, _ = examples(4, seed=3)
        logits = model(inputs, training=False)["logits"].numpy()
        np.save(os.path.join(self.output_dir, "predictions.npy"), logits)


class ZeroShot(EvenFirstToken):
    restores_trained = False  # the model as built: no training, no restore


@pytest.fixture
def config_file(tmp_path):
    path = tmp_path / "bert_config.json"
    tiny_bert_config(99, intermediate_size=37, max_position_embeddings=40).to_json_file(
        str(path)
    )
    return str(path)


def run_options(tmp_path, config_file, **values):
    values.setdefault("training", TrainingOptions(train_batch_size=8))
    return RunOptions(
        output_dir=str(tmp_path / "out"),
        bert_config_file=config_file,
        do_lower_case=None,
        max_seq_length=SEQ,
        **values,
    )


def test_the_runner_predicts_and_evaluates_a_task(tmp_path, config_file):
    run = run_options(tmp_path, config_file, do_eval=True, do_predict=True)
    results = run_task(ZeroShot(run))
    assert results["global_step"] == 0
    assert 0.0 <= results["eval_accuracy"] <= 1.0
    written = (tmp_path / "out" / "eval_results.txt").read_text()
    assert f"eval_accuracy = {results['eval_accuracy']}" in written
    assert np.load(tmp_path / "out" / "predictions.npy").shape == (4, 2)
    # The seed is the run's: the same run, the same (freshly built) model.
    predictions = np.load(tmp_path / "out" / "predictions.npy")
    assert run_task(ZeroShot(run)) == results
    np.testing.assert_array_equal(
        np.load(tmp_path / "out" / "predictions.npy"), predictions
    )


@pytest.mark.slow
def test_the_runner_trains_restores_and_keeps_a_runs_identity(tmp_path, config_file):
    trained = run_task(
        EvenFirstToken(run_options(tmp_path, config_file, do_train=True, do_eval=True))
    )
    assert trained["global_step"] == 4
    assert (tmp_path / "out" / "run_settings.json").exists()
    # Without --do_train: the trained weights, restored.
    restored = run_task(
        EvenFirstToken(run_options(tmp_path, config_file, do_eval=True))
    )
    assert restored == trained
    # Another learning rate is another run: it stops, naming the setting.
    other = TrainingOptions(train_batch_size=8, learning_rate=1e-4)
    with pytest.raises(UserInputError, match="learning_rate"):
        run_task(
            EvenFirstToken(
                run_options(tmp_path, config_file, do_train=True, training=other)
            )
        )
