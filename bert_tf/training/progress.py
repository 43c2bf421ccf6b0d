"""A progress bar over the batches of an evaluation or prediction pass."""

import keras
from absl import logging

# The input every bert_tf batch has; its first dimension is the batch size.
_BATCH_KEY = "input_ids"


def batches_with_progress(dataset, num_examples=None):
    """Yields the batches of `dataset`, advancing a Keras progress bar.

    The bar counts examples (each batch's ``input_ids`` rows) against
    `num_examples` when known. It is hidden at ``--verbosity=-1`` (absl below
    INFO).

    Example:

    ```python
    for batch in batches_with_progress(dataset, num_examples=408):
        logits.append(predict_step(batch))
    ```
    """
    show = logging.get_verbosity() >= logging.INFO
    bar = keras.utils.Progbar(
        num_examples, unit_name="example", verbose=1 if show else 0
    )
    seen = 0
    for batch in dataset:
        yield batch
        seen += int(batch[_BATCH_KEY].shape[0])
        bar.update(seen)
    if num_examples is None or seen < num_examples:
        bar.update(seen, finalize=True)
