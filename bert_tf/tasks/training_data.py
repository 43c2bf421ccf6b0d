"""What a task hands the runner to train on."""

import dataclasses
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class TrainingData:
    """A task's training input, as the Trainer consumes it.

    Args:
      dataset_fn: `dataset_fn(input_context, skip_batches) -> tf.data.Dataset`
        of repeating per-replica micro-batches (`RunOptions.training.
        micro_batch_size` examples, features and labels in one dict) that
        skips its first `skip_batches` batches.
      num_train_steps: optimizer steps of the whole run.
      fingerprints: what the run trains on, recorded in run_settings.json
        (`file_fingerprint` of input files or `examples_fingerprint` of
        parsed examples; never of records the run writes itself).
      learning_rate_multipliers: `{regex: factor}` for the optimizer
        (`bert_tf.training.optimization.create_optimizer`): variables whose original
        name matches train at `factor` times --learning_rate (e.g. run_ner's
        CRF transitions, `{"^cls/crf/": 100.0}`). None: one learning rate.

    Example:

    ```python
    TrainingData(dataset_fn, num_train_steps=344, fingerprints=[file_fingerprint(path)])
    ```
    """

    dataset_fn: Callable
    num_train_steps: int
    fingerprints: list = dataclasses.field(default_factory=list)
    learning_rate_multipliers: dict | None = None


def pipeline_share(dataset, input_context):
    """This input pipeline's share of `dataset` (every n-th element of n
    pipelines; all of it with one pipeline or no `input_context`)."""
    if input_context is not None and input_context.num_input_pipelines > 1:
        return dataset.shard(
            input_context.num_input_pipelines, input_context.input_pipeline_id
        )
    return dataset


def repeated_batches(dataset, batch_size, skip_batches, make_batch):
    """`dataset` repeated, in whole batches of `batch_size`, the first
    `skip_batches` skipped (a resumed run), each mapped by `make_batch`."""
    import tensorflow as tf

    return (
        dataset.repeat()
        .batch(batch_size, drop_remainder=True)
        .skip(skip_batches)
        .map(make_batch, num_parallel_calls=tf.data.AUTOTUNE)
        .prefetch(tf.data.AUTOTUNE)
    )
