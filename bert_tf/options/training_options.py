"""How a model is trained: batch, schedule, optimizer, checkpoints."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import positive
from bert_tf.options.option import option

OPTIMIZERS = ("adamw_original", "adamw", "lamb")


def _schedule_option(default, help, **changes):  # noqa: A002  (absl's name for it)
    """An option of one schedule: it defines the run, and is None (no such
    flag) in a tool that trains on the other schedule."""
    return option(default, help, run_defining=True, absent_when_none=True, **changes)


@dataclasses.dataclass(frozen=True)
class TrainingOptions:
    """The training loop's options (flags of the same names).

    The schedule is in epochs (`num_train_epochs`, `warmup_proportion`: the
    fine-tuning tools) or in steps (`num_train_steps`, `num_warmup_steps`:
    run_pretraining); the other pair is None.

    Args:
      train_batch_size: examples per optimizer step, all replicas together.
      learning_rate: peak learning rate.
      num_train_epochs, warmup_proportion: epoch schedule.
      num_train_steps, num_warmup_steps: step schedule.
      optimizer: one of `OPTIMIZERS`.
      gradient_accumulation_steps: micro-batches per step (divides the batch).
      use_xla: compile the training step with XLA.
      save_checkpoints_steps: checkpoint frequency.
      iterations_per_loop: steps per compiled call on a TPU.
      length_bucketing: batch examples of similar length (None: the tool
        pads to max_seq_length and has no such flag).
      overwrite_output_dir: start over instead of resuming.

    Example:

    ```python
    TrainingOptions(train_batch_size=32, learning_rate=2e-5, num_train_epochs=3.0)
    ```
    """

    train_batch_size: int = option(
        32, "Total batch size for training.", run_defining=True
    )
    learning_rate: float = option(
        5e-5, "The initial learning rate for Adam.", run_defining=True
    )
    num_train_epochs: float | None = _schedule_option(
        3.0, "Total number of training epochs to perform."
    )
    warmup_proportion: float | None = _schedule_option(
        0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.",
    )
    num_train_steps: int | None = _schedule_option(
        None, "Number of training steps.", flag_default=100000
    )
    num_warmup_steps: int | None = _schedule_option(
        None, "Number of warmup steps.", flag_default=10000
    )
    optimizer: str = option(
        "adamw_original",
        "adamw_original: the original's update (no bias correction); adamw: with bias "
        "correction; lamb: layer-wise adaptive (weight decay inside the trust ratio).",
        choices=OPTIMIZERS,
        run_defining=True,
    )
    gradient_accumulation_steps: int = option(
        1,
        "Micro-batches summed per optimizer step; the train batch is split into this "
        "many parts (train_batch_size must be divisible by it).",
        run_defining=True,
    )
    use_xla: bool = option(False, "Compile the training step with XLA.")
    save_checkpoints_steps: int = option(
        1000, "How often to save the model checkpoint."
    )
    iterations_per_loop: int = option(
        1000,
        "With --use_tpu: optimizer steps run per call of the compiled training loop "
        "(fewer host round trips); checkpoints still land every "
        "--save_checkpoints_steps. Without a TPU the loop runs one step per call.",
    )
    length_bucketing: bool | None = option(
        None,
        "Training: group examples of similar length into batches (within pools of "
        "16 batches), so short sentences are not padded to long ones.",
        run_defining=True,
        absent_when_none=True,
        flag_default=True,
    )
    overwrite_output_dir: bool = option(
        False,
        "With --do_train: delete the checkpoints of a previous run in output_dir "
        "and start over. Without it, a rerun with the same settings resumes and "
        "one with other settings stops, listing the differences.",
    )

    def __post_init__(self):
        for name in (
            "train_batch_size",
            "save_checkpoints_steps",
            "iterations_per_loop",
            "gradient_accumulation_steps",
        ):
            positive(name, getattr(self, name))
        if self.train_batch_size % self.gradient_accumulation_steps:
            raise UserInputError(
                f"--train_batch_size={self.train_batch_size} is not divisible by "
                f"--gradient_accumulation_steps={self.gradient_accumulation_steps}"
            )
        check_choices(self)
        warmup = self.warmup_proportion
        if warmup is not None and not 0.0 <= warmup <= 1.0:
            raise UserInputError(
                f"--warmup_proportion: must be in [0, 1], got {warmup}"
            )
        if self.num_warmup_steps is not None and self.num_warmup_steps < 0:
            raise UserInputError(
                f"--num_warmup_steps: must be ≥ 0, got {self.num_warmup_steps}"
            )

    def check_trainable(self):
        """The checks that matter only with --do_train (called by `RunOptions`)."""
        if not self.learning_rate > 0:
            raise UserInputError(
                f"--learning_rate: must be positive, got {self.learning_rate}"
            )
        epochs = self.num_train_epochs
        if epochs is not None and not epochs > 0:
            raise UserInputError(f"--num_train_epochs: must be positive, got {epochs}")
        if self.num_train_steps is not None and self.num_train_steps < 1:
            raise UserInputError(
                f"--num_train_steps: must be positive, got {self.num_train_steps}"
            )

    @property
    def micro_batch_size(self):
        """Examples per micro-batch: the batch split for gradient accumulation."""
        return self.train_batch_size // self.gradient_accumulation_steps

    def warmup_steps(self, num_train_steps):
        """The warmup steps of a run of `num_train_steps` (the original's
        `int(num_train_steps * warmup_proportion)`, or `num_warmup_steps`)."""
        if self.num_warmup_steps is not None:
            return self.num_warmup_steps
        return int(num_train_steps * self.warmup_proportion)
