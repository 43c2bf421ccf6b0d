"""Progress of long work: Keras' bar on a terminal, plain periodic lines elsewhere.

Keras' `Progbar` redraws itself with backspaces, carriage returns and ANSI
colour codes whenever ``posix`` is imported, which is always on Linux: written
to a file or a CI log, 107 training steps left 852 escape sequences. Where
standard output is not a terminal, `progress_bar` prints a plain line at
every tenth of the work and at least every `PLAIN_INTERVAL_SECONDS`.
"""

import sys
import time

from absl import logging

# The input every bert_tf batch has; its first dimension is the batch size.
_BATCH_KEY = "input_ids"
# At most this long between two plain progress lines.
PLAIN_INTERVAL_SECONDS = 30.0


def progress_bar(total, unit_name="step", stateful_metrics=None, show=None):
    """A progress display with Keras' `Progbar` interface (`update`).

    Args:
      total: the count at the end, or None when unknown.
      unit_name: what is counted ("step", "example", "passage").
      stateful_metrics: names of values shown as given, not averaged.
      show: False hides it; None shows it when absl's verbosity is INFO or
        more (hidden at ``--verbosity=-1``).

    Example:

    ```python
    bar = progress_bar(len(texts), unit_name="text")
    for start in range(0, len(texts), 64):
        bar.update(min(start + 64, len(texts)))
    ```
    """
    if show is None:
        show = logging.get_verbosity() >= logging.INFO
    if show and not _stdout_is_terminal():
        return PlainProgress(total, unit_name)
    import keras

    return keras.utils.Progbar(
        total,
        unit_name=unit_name,
        stateful_metrics=stateful_metrics,
        verbose=1 if show else 0,
    )


def _stdout_is_terminal():
    isatty = getattr(sys.stdout, "isatty", None)
    return bool(isatty and isatty())


class PlainProgress:
    """Plain `count/total units (percent), seconds, about N s left, name value` lines.

    The time left (while the total is known and the work unfinished) is the
    time so far scaled by the work still to do.

        Args:
          total: the count at the end, or None when unknown.
          unit_name: what is counted.
    """

    def __init__(self, total, unit_name="step"):
        self.total = total
        self.unit_name = unit_name
        self._began = time.monotonic()
        self._last_line = self._began
        self._last_tenth = 0
        self._printed = None

    def update(self, current, values=None, finalize=None):
        """Records `current` and prints a line when one is due (Progbar's signature)."""
        now = time.monotonic()
        if finalize is None:
            finalize = self.total is not None and current >= self.total
        tenth = int(10 * current / self.total) if self.total else 0
        due = (
            finalize
            or tenth > self._last_tenth
            or now - self._last_line >= PLAIN_INTERVAL_SECONDS
        )
        if not due or self._printed == current:
            return
        self._last_line, self._last_tenth, self._printed = now, tenth, current
        count = f"{current}/{self.total}" if self.total else f"{current}"
        line = f"{count} {_plural(self.unit_name)}"
        if self.total:
            line += f" ({100 * current / self.total:.0f}%)"
        elapsed = now - self._began
        line += f", {elapsed:.1f} s"
        if self.total and 0 < current < self.total:
            line += f", about {elapsed * (self.total - current) / current:.0f} s left"
        for name, value in values or ():
            line += (
                f", {name} {value:.4g}"
                if isinstance(value, float)
                else f", {name} {value}"
            )
        print(line, file=sys.stdout, flush=True)


def _plural(unit_name):
    """ "passage" -> "passages", "query" -> "queries"."""
    if unit_name.endswith("y") and unit_name[-2:-1] not in tuple("aeiou"):
        return unit_name[:-1] + "ies"
    return unit_name + "s"


def batches_with_progress(dataset, num_examples=None):
    """Yields the batches of `dataset`, advancing a progress display.

    The display counts examples (each batch's ``input_ids`` rows) against
    `num_examples` when known. It is hidden at ``--verbosity=-1`` (absl below
    INFO).

    Example:

    ```python
    for batch in batches_with_progress(dataset, num_examples=408):
        logits.append(predict_step(batch))
    ```
    """
    bar = progress_bar(num_examples, unit_name="example")
    seen = 0
    for batch in dataset:
        yield batch
        seen += int(batch[_BATCH_KEY].shape[0])
        bar.update(seen)
    if num_examples is None or seen < num_examples:
        bar.update(seen, finalize=True)
