"""The task protocol: the few methods the runner (`bert_tf.tasks.runner`) drives.

A task turns its data into batches and its model's outputs into a loss,
results and files; the runner owns everything else (config, seed and
precision, strategy, the model under the strategy's scope, the lock and
identity of output_dir, training or restoring, chief-only evaluation and
prediction, the export). Adding a task is one module with a `Task` subclass
(plus its options dataclass in `bert_tf.options` and a CLI in `bert_tf.cli`).

Order of the calls, for one `run_task(task)`:

1. `load_config()` — the model's `BertConfig` (None: the checkpoint's own,
   e.g. a sentence-transformers directory); the runner checks it.
2. `prepare(config)` — after the config is loaded and checked, before the
   strategy: read labels and check inputs that need the config.
3. `build_model(config)` — under the strategy's scope; the runner loads
   `init_checkpoint` into the result when `from_checkpoint` is there.
4. `training_data()` — with --do_train: the `TrainingData`; `loss(batch,
   outputs)` is the loss the Trainer minimises. Chief only, after training:
   `after_training(model)` (extra copies of the trained model).
5. Chief only: `predict(model, global_step)` with --do_predict, then
   `evaluate(model, global_step)` with --do_eval (its dict is written to
   `eval_results_file` and returned).
6. Chief only, with --export_dir: `export(model)` (by default the serving
   registry's SavedModel, with `tokenization(model)` and `serving_kwargs()`).
"""

import abc
import dataclasses


def with_checkpoint_vocab(run):
    """`run` with --vocab_file defaulting to --init_checkpoint's own vocabulary.

    A Google, Hugging Face, sentence-transformers or KerasHub model directory
    carries its vocab.txt (or tokenizer.json), as export and embed already
    find it; the training tools do the same.

    Raises:
        UserInputError: neither --vocab_file nor a vocabulary beside
            --init_checkpoint.
    """
    from bert_tf.errors import UserInputError

    if run.vocab_file is not None:
        return run
    vocab = None
    if run.init_checkpoint:
        from bert_tf.checkpoints.loading import find_checkpoint

        vocab = find_checkpoint(run.init_checkpoint).vocab_file
    if vocab is None:
        where = (
            f" (none beside --init_checkpoint={run.init_checkpoint})"
            if run.init_checkpoint
            else ""
        )
        raise UserInputError(f"Flag --vocab_file must be specified{where}.")
    return dataclasses.replace(run, vocab_file=vocab)


class Task(abc.ABC):
    """One task the runner drives (see the module docstring for the order).

    Subclasses set `script` (the name recorded in run_settings.json, e.g.
    "run_classifier") and `model_class` (a bert_tf model with
    `from_checkpoint`), and implement the abstract methods.

    Args:
      run: the `bert_tf.options.RunOptions`.
      options: the task's own options dataclass.

    Example:

    ```python
    from bert_tf.tasks.runner import run_task
    from bert_tf.tasks.task import Task
    from bert_tf.tasks.training_data import TrainingData


    class MyTask(Task):
        script = "run_my_task"
        model_class = BertClassifier

        def model_kwargs(self):
            return {"num_labels": 2}

        def training_data(self):
            return TrainingData(dataset_fn, num_train_steps=100, fingerprints=[])

        def loss(self, batch, outputs):
            return tf.reduce_mean(...)

        def evaluate(self, model, global_step):
            return {"eval_accuracy": ..., "global_step": global_step}


    results = run_task(MyTask(run_options, my_options))
    ```
    """

    script = None
    model_class = None
    # Results of `evaluate`, written by the runner to output_dir/<this>
    # (None: `evaluate` writes its own results file).
    eval_results_file = "eval_results.txt"
    # Copy the vocabulary beside the final checkpoint (a loadable model dir).
    copies_vocab = True
    # Without --do_train, restore the weights a run trained (False: the
    # model `build_model` returns is complete, e.g. a zero-shot encoder).
    restores_trained = True
    # After --do_train, save the weights-only `model.ckpt-<step>` (False:
    # `after_training` saves the model its own way).
    saves_final_checkpoint = True

    def __init__(self, run, options=None):
        self.run = run
        self.options = options

    @property
    def output_dir(self):
        return self.run.output_dir

    @property
    def records_dir(self):
        """Where this process writes its training records (the other
        workers of a multi-worker run: a folder of their own)."""
        from bert_tf.training.strategy import worker_scratch_dir

        return worker_scratch_dir(self.output_dir)

    def run_settings(self):
        """The task's options that define a training run (`{flag: value}`),
        beyond those of `RunOptions`; a rerun that changes one starts over."""
        from bert_tf.options.checks import run_defining

        return run_defining(self.options) if self.options is not None else {}

    def load_config(self):
        """The model's `BertConfig`: --bert_config_file, or the one beside
        --init_checkpoint. None: `build_model` reads the checkpoint's own."""
        from bert_tf.tasks.runner import load_config

        return load_config(self.run)

    def tokenization(self, model):
        """(vocab_file, do_lower_case, max_seq_length) the model reads: copied
        beside the final checkpoint and given to the SavedModel's tokenizer."""
        run = self.run
        return run.vocab_file, run.do_lower_case, run.max_seq_length

    def prepare(self, config):  # noqa: B027 (optional step)
        """Reads what the model depends on (labels, ...); checks inputs."""

    def reads_sentence_pairs(self):
        """Whether the task packs two segments (segment ids 0 and 1); the
        runner checks the config has two token types (after `prepare`)."""
        return False

    def flag_labels(self):
        """`(label_list, flag)`: the labels the flags give, in label-id order,
        and the flag(s) they come from; None when the flags give none. A run
        without --do_train checks them against the trained run's (after
        `prepare`)."""
        return None

    def model_kwargs(self):
        """Keyword arguments of `model_class` beyond the config."""
        return {}

    def build_model(self, config):
        """The model, fresh (the runner calls it under the strategy's scope)."""
        init = self.run.init_checkpoint
        if init:
            return self.model_class.from_checkpoint(
                init, config=config, **self.model_kwargs()
            )
        return self.model_class(config, **self.model_kwargs())

    @abc.abstractmethod
    def training_data(self):
        """The `TrainingData` of a --do_train run."""

    @abc.abstractmethod
    def loss(self, batch, outputs):
        """The loss of one micro-batch (a scalar), as the original defines it."""

    def after_training(self, model):  # noqa: B027 (optional step)
        """After --do_train, on the chief: further copies of the trained model."""

    def evaluate(self, model, global_step):
        """--do_eval: scores the dev data; returns the results dict."""
        raise NotImplementedError(f"{type(self).__name__} does not evaluate")

    def predict(self, model, global_step):
        """--do_predict: writes the predictions to output_dir."""
        raise NotImplementedError(f"{type(self).__name__} does not predict")

    def export(self, model):
        """--export_dir: the SavedModel of the task's serving family (from
        `tokenization` and `serving_kwargs`); returns its version directory."""
        from bert_tf.tasks.runner import export_model

        vocab_file, do_lower_case, max_seq_length = self.tokenization(model)
        return export_model(
            self.run.export,
            model,
            vocab_file,
            do_lower_case,
            max_seq_length,
            **self.serving_kwargs(),
        )

    def serving_kwargs(self):
        """Keyword arguments of the export for this task's serving family
        (label list, span options, ...)."""
        return {}
