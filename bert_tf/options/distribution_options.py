"""Where a run computes: strategy, devices, TPU (never part of a run's identity)."""

import dataclasses

from bert_tf.errors import UserInputError

# bert_tf.training.strategy.STRATEGIES, written out: options import no
# TensorFlow; tests/test_cli.py checks that the two lists agree.
STRATEGIES = ("one_device", "mirrored", "multi_worker_mirrored", "tpu")


@dataclasses.dataclass(frozen=True)
class DistributionOptions:
    """The tf.distribute strategy and devices (flags of the same names).

    Args:
      distribution_strategy: one of `STRATEGIES`, or None to choose from the
        devices.
      num_gpus: GPUs to use (None: all visible).
      use_tpu, tpu_name, tpu_zone, gcp_project, master, num_tpu_cores: the
        original's TPU flags.

    Example:

    ```python
    DistributionOptions(distribution_strategy="mirrored", num_gpus=2)
    ```
    """

    distribution_strategy: str | None = None
    num_gpus: int | None = None
    use_tpu: bool = False
    tpu_name: str | None = None
    tpu_zone: str | None = None
    gcp_project: str | None = None
    master: str | None = None
    num_tpu_cores: int = 8

    def __post_init__(self):
        name = self.distribution_strategy
        if name is not None and name not in STRATEGIES:
            raise UserInputError(
                f"--distribution_strategy={name!r} is not one of {', '.join(STRATEGIES)}"
            )
        if self.num_gpus is not None and self.num_gpus < 0:
            raise UserInputError(f"--num_gpus: must be ≥ 0, got {self.num_gpus}")

    def strategy_kwargs(self):
        """Keyword arguments of `bert_tf.training.strategy.create_strategy`."""
        return {
            "name": self.distribution_strategy,
            "num_gpus": self.num_gpus,
            "use_tpu": self.use_tpu,
            "tpu_name": self.tpu_name,
            "tpu_zone": self.tpu_zone,
            "gcp_project": self.gcp_project,
            "master": self.master,
        }
