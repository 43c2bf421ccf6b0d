"""How a model is trained: batch, schedule, optimizer, checkpoints."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import positive

OPTIMIZERS = ("adamw_original", "adamw", "lamb")


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

    RUN_DEFINING = (
        "train_batch_size",
        "gradient_accumulation_steps",
        "learning_rate",
        "num_train_epochs",
        "warmup_proportion",
        "num_train_steps",
        "num_warmup_steps",
        "optimizer",
        "length_bucketing",
    )
    ABSENT_WHEN_NONE = (
        "num_train_epochs",
        "warmup_proportion",
        "num_train_steps",
        "num_warmup_steps",
        "length_bucketing",
    )

    train_batch_size: int = 32
    learning_rate: float = 5e-5
    num_train_epochs: float | None = 3.0
    warmup_proportion: float | None = 0.1
    num_train_steps: int | None = None
    num_warmup_steps: int | None = None
    optimizer: str = "adamw_original"
    gradient_accumulation_steps: int = 1
    use_xla: bool = False
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    length_bucketing: bool | None = None
    overwrite_output_dir: bool = False

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
        if self.optimizer not in OPTIMIZERS:
            raise UserInputError(
                f"--optimizer={self.optimizer!r} is not one of {', '.join(OPTIMIZERS)}"
            )
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
