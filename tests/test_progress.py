"""Progress display: plain lines when standard output is not a terminal."""

import io

import pytest

from bert_tf.training import progress


def test_plain_lines_without_escape_sequences_when_not_a_terminal(capsys):
    bar = progress.progress_bar(107, unit_name="step", show=True)
    assert isinstance(bar, progress.PlainProgress)
    for step in range(1, 108):
        bar.update(step, [("loss", 0.5 / step), ("examples/s", 40.0)])
    out = capsys.readouterr().out
    lines = out.splitlines()
    # One line per tenth of the work (the last one is the end).
    assert len(lines) == 10, lines
    for code in ("\x1b", "\b", "\r"):
        assert code not in out
    assert lines[-1].startswith("107/107 steps (100%), ")
    # Lines before the end estimate the time left; "query" counts "queries".
    assert " s left" in lines[0] and " s left" not in lines[-1]
    assert progress._plural("query") == "queries"
    assert "loss 0.004673" in lines[-1] and "examples/s 40" in lines[-1]


def test_a_line_at_least_every_interval(capsys, monkeypatch):
    clock = iter(range(0, 1000, 31))
    monkeypatch.setattr(progress.time, "monotonic", lambda: float(next(clock)))
    bar = progress.PlainProgress(None, unit_name="passage")
    for count in (1, 2, 3):
        bar.update(count)
    assert capsys.readouterr().out.splitlines() == [
        "1 passages, 31.0 s",
        "2 passages, 62.0 s",
        "3 passages, 93.0 s",
    ]


def test_keras_bar_on_a_terminal_and_hidden_when_asked(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    monkeypatch.setattr(progress.sys, "stdout", Terminal())
    import keras

    assert isinstance(progress.progress_bar(3, show=True), keras.utils.Progbar)
    hidden = progress.progress_bar(3, show=False)
    assert isinstance(hidden, keras.utils.Progbar) and hidden.verbose == 0


@pytest.mark.parametrize("verbosity, shown", [(-1, False), (0, True)])
def test_absl_verbosity_decides_by_default(capsys, verbosity, shown):
    from absl import logging

    before = logging.get_verbosity()
    logging.set_verbosity(verbosity)
    try:
        bar = progress.progress_bar(2)
        bar.update(2)
    finally:
        logging.set_verbosity(before)
    assert ("2/2" in capsys.readouterr().out) == shown
