"""``--runner`` and ``--beam_options`` → Beam's ``PipelineOptions``."""

import shlex

from bert_tf.errors import UserInputError


def import_beam():
    """``apache_beam``, or a UserInputError naming the extra to install."""
    try:
        import apache_beam
    except ImportError as error:
        raise UserInputError(
            "runner=: Apache Beam is not installed (pip install 'bert_tf[beam]')"
        ) from error
    return apache_beam


def pipeline_options(runner, beam_options=""):
    """Beam ``PipelineOptions`` of a runner and its options string.

    Args:
      runner: a Beam runner name (e.g. ``"DirectRunner"``).
      beam_options: command-line options of Beam, as one shell-quoted string
        (e.g. ``"--direct_num_workers=2 --direct_running_mode=multi_processing"``
        or a Dataflow project, region and temp_location).

    Example:

    ```python
    options = pipeline_options("DirectRunner", "--direct_num_workers=2")
    ```
    """
    import_beam()
    from apache_beam.options.pipeline_options import PipelineOptions

    if not runner:
        raise UserInputError("runner= is empty", argument="runner")
    try:
        args = shlex.split(beam_options or "")
    except ValueError as error:
        raise UserInputError(
            f"beam_options={beam_options!r}: {error}", argument="beam_options"
        ) from error
    if any(arg == "--runner" or arg.startswith("--runner=") for arg in args):
        raise UserInputError(
            "beam_options= names a runner: give it as runner= instead",
            argument=("beam_options", "runner"),
        )
    return PipelineOptions([f"--runner={runner}", *args])
