"""The local Beam runner without Prism, and Beam's log held at warnings
(issue 59.6): `bert_tf.beam.runner_options` against Beam itself."""

import logging

import pytest

beam = pytest.importorskip(
    "apache_beam", reason="apache-beam ([beam]) is not installed"
)

from absl import logging as absl_logging  # noqa: E402
from apache_beam.testing.util import assert_that  # noqa: E402
from apache_beam.testing.util import equal_to  # noqa: E402

from bert_tf.beam.runner_options import new_pipeline  # noqa: E402


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record):
        self.records.append(record)


def _run_tiny_pipeline(verbosity):
    """(result, Beam's log records) of a three-element pipeline."""
    root = logging.getLogger()
    handler, level = _Records(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    saved = absl_logging.get_verbosity()
    absl_logging.set_verbosity(verbosity)
    try:
        pipeline = new_pipeline("DirectRunner")
        with pipeline:
            squares = (
                pipeline | beam.Create([1, 2, 3]) | beam.Map(lambda x: x * x)
            ) | beam.combiners.ToList()
            assert_that(squares, equal_to([[1, 4, 9]]))
    finally:
        absl_logging.set_verbosity(saved)
        root.removeHandler(handler)
        root.setLevel(level)
    beams = [r for r in handler.records if r.name.startswith("apache_beam")]
    return pipeline, beams


def test_direct_runner_is_the_local_fn_api_runner_and_prism_stays_prism():
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner
    from apache_beam.runners.portability.prism_runner import PrismRunner

    pipeline, records = _run_tiny_pipeline(absl_logging.INFO)
    assert isinstance(pipeline.runner, FnApiRunner)
    # Quiet: no INFO line of Beam's, and no attempt at Prism's download.
    assert [r for r in records if r.levelno < logging.WARNING] == []
    assert not any("prism" in r.getMessage().lower() for r in records)
    assert isinstance(new_pipeline("PrismRunner").runner, PrismRunner)


def test_verbosity_1_shows_beams_info_lines():
    _, records = _run_tiny_pipeline(absl_logging.DEBUG)
    assert any(r.levelno == logging.INFO for r in records)
    # Back to warnings for the next quiet run.
    _, records = _run_tiny_pipeline(absl_logging.INFO)
    assert [r for r in records if r.levelno < logging.WARNING] == []
