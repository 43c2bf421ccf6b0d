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
