"""``--runner`` and ``--beam_options`` → a Beam ``Pipeline``, quiet and offline.

Beam's ``DirectRunner`` (2.77) first tries the Prism runner, which downloads
its binary from GitHub, then falls back to the ``FnApiRunner``; so a local
run behaved differently with and without internet. Here ``DirectRunner``
is the ``FnApiRunner`` itself, the runner that honours
``--direct_num_workers`` and ``--direct_running_mode`` (Prism ignores
them); ``--runner=PrismRunner`` still asks for Prism.

Beam's INFO logs (about 100 lines a run, each worker message twice: on the
worker's stderr and forwarded to this process) are held back unless the
absl verbosity is 1 or more (``--verbosity=1``): Beam logs at warnings and
above, once. The local multi-process workers run `bert_tf.beam.worker`,
which leaves their messages to the forwarded copy.
"""

import contextlib
import errno
import io
import logging
import os
import re
import shlex
import sys

from bert_tf.errors import UserInputError

# The exception a failed step logs with its traceback: the pipeline raises
# it anyway, and the tool reports it (one line for bad input).
_TRACEBACK = "Traceback (most recent call last)"
# Beam's messages of every run that say nothing about it: a GCP client
# library Beam reports missing at import (BigQuery only); a worker's lack of
# a staging directory.
_NOISE = ("apitools not found", "No semi_persistent_directory found")
# A worker's warning of the options the runner adds (the driver warns of the
# user's own unknown options itself).
_WORKER_UNKNOWN_OPTIONS = "Discarding unparseable args"
_WORKER_MODULE = "bert_tf.beam.worker"


def _verbose():
    from absl import logging as absl_logging

    return absl_logging.get_verbosity() >= 1


class _QuietBeamFilter(logging.Filter):
    """Drops Beam's noise and the tracebacks of its failed steps."""

    def filter(self, record):
        if _verbose():
            return True
        text = record.getMessage()
        if any(noise in text for noise in _NOISE):
            return False
        if _WORKER_UNKNOWN_OPTIONS in text and text.startswith("Worker:"):
            return False
        beams = record.name.startswith("apache_beam")
        return not (beams and (record.exc_info or _TRACEBACK in text))


_FILTER = _QuietBeamFilter()


def quiet_beam_logs():
    """Beam's loggers at warnings and above (all of them with ``--verbosity=1``),
    without its per-run noise.

    The filter sits on the root logger's handlers: a logger's own filter
    does not see the records of the loggers below it (Beam logs from
    ``apache_beam.runners...``).
    """
    for handler in logging.getLogger().handlers:
        if _FILTER not in handler.filters:
            handler.addFilter(_FILTER)
    _set_beam_level()


def _set_beam_level():
    """Beam's logger at WARNING unless verbose; a verbose run after a quiet
    one in the same process gets Beam's INFO lines back."""
    beam_logger = logging.getLogger("apache_beam")
    if not _verbose():
        beam_logger.setLevel(logging.WARNING)
    elif beam_logger.level == logging.WARNING:
        beam_logger.setLevel(logging.NOTSET)  # what we set: back to the root's


def import_beam():
    """``apache_beam``, or a UserInputError naming the extra to install."""
    root = logging.getLogger()
    # Beam's import warns, on the root logger, of a GCP client it lacks.
    root.addFilter(_FILTER)
    # Beam logs at import too (the BigQuery clients it lacks).
    _set_beam_level()
    try:
        import apache_beam
    except ImportError as error:
        raise UserInputError(
            "runner=: Apache Beam is not installed (pip install 'bert_tf[beam]')"
        ) from error
    finally:
        root.removeFilter(_FILTER)
    quiet_beam_logs()
    return apache_beam


def _parsed(args):
    """``PipelineOptions`` of `args`, parsed now: a bad value is one line
    naming it, not Beam's usage text and exit."""
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(args)
    usage = io.StringIO()
    try:
        with contextlib.redirect_stderr(usage):
            options.get_all_options()
    except SystemExit:
        lines = [line for line in usage.getvalue().splitlines() if line.strip()]
        reason = lines[-1] if lines else "not Beam pipeline options"
        reason = reason.split("error: ", 1)[-1]
        raise UserInputError(
            f"beam_options={shlex.join(args[1:])!r}: {reason}",
            argument="beam_options",
        ) from None
    return options


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
    return _parsed([f"--runner={runner}", *args])


def _local_runner(options):
    """The FnApiRunner for `options` (what DirectRunner falls back to
    after Prism), its workers given the pipeline's options."""
    from apache_beam.options.pipeline_options import DirectOptions
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle
    from apache_beam.transforms import environments

    direct = options.view_as(DirectOptions)
    environment = None
    if direct.direct_running_mode == "multi_processing":
        # Beam's own worker command, quiet (`bert_tf.beam.worker`); the
        # running mode is then this environment, not Beam's.
        command = f"{sys.executable} -m {_WORKER_MODULE}"
        if not _verbose():
            command += " --quiet"
        environment = environments.SubprocessSDKEnvironment.from_command_string(command)
        direct.direct_running_mode = None
    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
    return fn_runner.FnApiRunner(
        default_environment=environment, provision_info=provision
    )


def new_pipeline(runner, beam_options=""):
    """A Beam ``Pipeline`` on `runner` with `beam_options` (see
    `pipeline_options`); ``DirectRunner`` is the local ``FnApiRunner``,
    without Prism (see the module doc).

    Raises:
      UserInputError: a runner Beam does not know, or bad options.

    Example:

    ```python
    pipeline = new_pipeline(
        "DirectRunner",
        "--direct_num_workers=2 --direct_running_mode=multi_processing",
    )
    ```
    """
    beam = import_beam()
    from apache_beam.runners.runner import create_runner

    options = pipeline_options(runner, beam_options)
    if runner == "DirectRunner":
        return beam.Pipeline(runner=_local_runner(options), options=options)
    try:
        runner_object = create_runner(runner)
    except (ValueError, ImportError) as error:
        raise UserInputError(f"runner={runner}: {error}", argument="runner") from None
    return beam.Pipeline(runner=runner_object, options=options)


# The last line of a worker's traceback, as the runner reports it: our bad
# input error, or an OSError of a path.
_USER_ERROR_LINE = re.compile(r"^bert_tf\.errors\.UserInputError: (.*)$", re.M)
_OS_ERROR_LINE = re.compile(
    r"^(?:\w+\.)*\w*Error: \[Errno (\d+)\] ([^:'\n\[]+?)(?:: '([^'\n]+)')?(?: \[|$)",
    re.M,
)
_STEP = re.compile(r"( \[while running '[^']*'\])+$")
# The OSErrors a user can fix: a read-only or full disk, a missing path ...
_PATH_ERRNOS = {
    errno.EROFS,
    errno.ENOSPC,
    errno.EDQUOT,
    errno.EACCES,
    errno.EPERM,
    errno.ENOENT,
    errno.ENOTDIR,
    errno.EISDIR,
}


def _user_error_of(error, output):
    """The UserInputError or path OSError a failed pipeline's `error`
    reports (the step named by Beam dropped; an OSError without a path, as
    a write's, names `output`), or None."""
    if isinstance(error, UserInputError):
        return UserInputError(_STEP.sub("", str(error)))
    text = str(error)
    found = _USER_ERROR_LINE.findall(text)
    if found:
        return UserInputError(_STEP.sub("", found[-1]))
    if isinstance(error, OSError) and error.errno in _PATH_ERRNOS:
        found = [(error.errno, error.strerror, error.filename)]
    else:
        found = [(int(n), r, p) for n, r, p in _OS_ERROR_LINE.findall(text)]
    for number, reason, path in reversed(found):
        if number in _PATH_ERRNOS:
            return OSError(number, reason, path or output)
    return None


def run_to_end(pipeline, output):
    """Runs `pipeline` and waits for it; returns its result.

    A step's bad input (a `UserInputError`, or an OSError of a path: a
    full or read-only disk) is raised as itself, without Beam's traceback
    of the worker around it; any other failure is raised as Beam gives it.

    Args:
      pipeline: a Beam ``Pipeline`` (see `new_pipeline`).
      output: what the pipeline writes (a path or prefix), named by an
        OSError that names no path (a write to a full disk).
    """
    try:
        result = pipeline.run()
        result.wait_until_finish()
    except Exception as error:
        user_error = _user_error_of(error, output)
        if user_error is None:
            raise
        _remove_beam_temp(output)
        raise user_error from None
    return result


def _remove_beam_temp(output):
    """Removes the ``beam-temp-<name>-*`` directories Beam's file sinks of
    `output` leave beside it when a step stops on bad input: what a run the
    user must repeat wrote nothing of its own. (A failure of another kind
    keeps them, for its diagnosis.)"""
    import glob
    import shutil

    if "://" in output:  # a bucket's: left to its lifecycle rules
        return
    directory, name = os.path.split(os.path.abspath(output))
    for temp in glob.glob(os.path.join(directory, f"beam-temp-{glob.escape(name)}*")):
        shutil.rmtree(temp, ignore_errors=True)
