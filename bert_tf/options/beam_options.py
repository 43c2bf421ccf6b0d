"""Where a batch job runs: in this process, or as an Apache Beam pipeline."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.option import option

# The runners the tools document; any other name Beam knows is passed through.
BEAM_RUNNERS = (
    "DirectRunner",
    "PrismRunner",
    "DataflowRunner",
    "FlinkRunner",
    "SparkRunner",
)


@dataclasses.dataclass(frozen=True)
class BeamOptions:
    """--runner and --beam_options (issue 44).

    Args:
      runner: a Beam runner name; None runs the tool in this process as
        before.
      beam_options: Beam's own command-line options as one string, passed to
        ``PipelineOptions`` as given (e.g. ``--direct_num_workers=2
        --direct_running_mode=multi_processing``, or a Dataflow project,
        region and temp_location).

    Example:

    ```python
    BeamOptions(runner="DirectRunner", beam_options="--direct_num_workers=2")
    ```
    """

    runner: str | None = option(
        None,
        "Run as an Apache Beam pipeline on this runner ("
        + ", ".join(BEAM_RUNNERS)
        + "; needs the [beam] extra). Not given: in this process, as before.",
    )
    beam_options: str = option(
        "",
        "Beam's own pipeline options, one quoted string passed to PipelineOptions "
        "as given, e.g. '--direct_num_workers=2 "
        "--direct_running_mode=multi_processing', or '--project=P --region=R "
        "--temp_location=gs://B/tmp --setup_file=./setup.py' for Dataflow.",
    )

    def __post_init__(self):
        if self.runner is not None and not self.runner.endswith("Runner"):
            raise UserInputError(
                f"--runner={self.runner!r}: not a Beam runner name (e.g. "
                f"{', '.join(BEAM_RUNNERS)})"
            )
        if self.beam_options and self.runner is None:
            raise UserInputError("--beam_options needs --runner")

    @property
    def uses_beam(self):
        return self.runner is not None
