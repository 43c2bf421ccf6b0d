"""Where a run computes: strategy, devices, TPU (never part of a run's identity)."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.option import option

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

    distribution_strategy: str | None = option(
        None,
        "tf.distribute strategy. Default: tpu with --use_tpu, multi_worker_mirrored "
        "when TF_CONFIG names several workers, mirrored with several GPUs, else "
        "one_device.",
        choices=STRATEGIES,
    )
    num_gpus: int | None = option(None, "GPUs to use (default: all visible).")
    use_tpu: bool = option(False, "Whether to use TPU or GPU/CPU.")
    tpu_name: str | None = option(
        None,
        "The Cloud TPU to use for training. This should be either the name used when "
        "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.",
    )
    tpu_zone: str | None = option(
        None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we "
        "will attempt to automatically detect the GCE project from metadata.",
    )
    gcp_project: str | None = option(
        None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not specified, "
        "we will attempt to automatically detect the GCE project from metadata.",
    )
    master: str | None = option(None, "[Optional] TensorFlow master URL.")
    num_tpu_cores: int = option(
        8,
        "Accepted for compatibility with the original and ignored: TPUStrategy "
        "uses every core of the TPU that --tpu_name/--master names.",
    )

    def __post_init__(self):
        check_choices(self)
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
