"""build_vocab's job: check the paths, train, write vocab.txt, measure it."""

import json
import os
import time

from absl import logging

from bert_tf.data_prep.vocabulary.report import coverage
from bert_tf.data_prep.vocabulary.training import SPECIAL_TOKENS
from bert_tf.data_prep.vocabulary.training import train_wordpiece
from bert_tf.data_prep.vocabulary.training import write_vocab
from bert_tf.errors import UserInputError
from bert_tf.options.input_overwrite_check import check_outputs_are_not_inputs

# At most this long between two progress lines.
PROGRESS_SECONDS = 30.0


def report_path(output_file):
    """Where the report of `output_file` goes: vocab.txt -> vocab_report.json."""
    return os.path.splitext(output_file)[0] + "_report.json"


class _Progress:
    """Logs the bytes read of each pass, at most every PROGRESS_SECONDS."""

    def __init__(self, total_bytes):
        self.total = max(total_bytes, 1)
        self.read = {1: 0, 2: 0}
        self.last = time.monotonic()

    def __call__(self, stage, nbytes):
        self.read[stage] += nbytes
        now = time.monotonic()
        if now - self.last >= PROGRESS_SECONDS:
            self.last = now
            done = self.read[stage] / self.total
            what = "the alphabet" if stage == 1 else "the vocabulary"
            logging.info(
                "build_vocab pass %d/2 (%s): %.0f%% of %.1f MB read",
                stage,
                what,
                100 * done,
                self.total / 1e6,
            )


def check_paths(input_files, output_file, eval_file, compare_vocab_file):
    """Refuses an output that is an input, a missing eval or compare file,
    and an output directory that cannot be written, before any training."""
    outputs = [("output_file", output_file)]
    if eval_file:
        outputs.append(("output_file", report_path(output_file)))
    check_outputs_are_not_inputs(
        outputs,
        [("input_file", input_files), ("eval_file", [eval_file] if eval_file else [])],
    )
    for flag, path in (
        ("eval_file", eval_file),
        ("compare_vocab_file", compare_vocab_file),
    ):
        if path and not os.path.isfile(path):
            raise UserInputError(f"{flag}={path}: no such file", argument=flag)
    if compare_vocab_file and not eval_file:
        raise UserInputError(
            "compare_vocab_file is measured on eval_file: give --eval_file too",
            argument=("compare_vocab_file", "eval_file"),
        )
    directory = os.path.dirname(os.path.abspath(output_file))
    if os.path.isdir(output_file):
        raise UserInputError(
            f"output_file={output_file} is a directory", argument="output_file"
        )
    try:
        os.makedirs(directory, exist_ok=True)
    except OSError as error:
        raise UserInputError(
            f"output_file={output_file}: cannot create {directory} ({error.strerror})",
            argument="output_file",
        ) from None
    if not os.access(directory, os.W_OK):
        raise UserInputError(
            f"output_file={output_file}: {directory} is not writable",
            argument="output_file",
        )


def build_vocab(
    input_files,
    output_file,
    vocab_size,
    do_lower_case=True,
    num_unused=99,
    min_frequency=2,
    limit_alphabet=1000,
    eval_file=None,
    compare_vocab_file=None,
):
    """Trains a vocabulary on `input_files` and writes it to `output_file`;
    with `eval_file`, measures it (and `compare_vocab_file`) there and writes
    the report beside it. Returns the lines to print.

    Example:

    ```python
    for line in build_vocab(shards[1:], "/tmp/vocab.txt", 8192, eval_file=shards[0]):
        print(line)
    ```
    """
    check_paths(input_files, output_file, eval_file, compare_vocab_file)
    started = time.monotonic()
    progress = _Progress(sum(os.path.getsize(p) for p in input_files))
    tokens = train_wordpiece(
        input_files,
        vocab_size,
        do_lower_case=do_lower_case,
        num_unused=num_unused,
        min_frequency=min_frequency,
        limit_alphabet=limit_alphabet,
        progress=progress,
    )
    write_vocab(tokens, output_file)
    pieces = sum(t.startswith("##") for t in tokens)
    lines = [
        f"{output_file}: {len(tokens):,} entries ({num_unused} [unusedN], "
        f"{len(tokens) - pieces - num_unused - len(SPECIAL_TOKENS):,} words, "
        f"{pieces:,} ## pieces), "
        f"{'uncased' if do_lower_case else 'cased'}, in "
        f"{time.monotonic() - started:.1f} s"
    ]
    if len(tokens) < vocab_size:
        lines.append(
            f"vocab_size={vocab_size}: the corpus gives only {len(tokens):,} entries "
            f"at min_frequency={min_frequency}; set the bert_config.json's "
            f"vocab_size to {len(tokens)}"
        )
    if eval_file:
        reports = [coverage(output_file, [eval_file], do_lower_case)]
        if compare_vocab_file:
            reports.append(coverage(compare_vocab_file, [eval_file], do_lower_case))
        lines.append(f"on {eval_file}:")
        lines.extend("  " + report.line() for report in reports)
        path = report_path(output_file)
        with open(path + ".partial", "w") as f:
            json.dump(
                {
                    "eval_file": eval_file,
                    "do_lower_case": do_lower_case,
                    "vocabularies": [r.as_dict() for r in reports],
                },
                f,
                indent=2,
            )
        os.replace(path + ".partial", path)
        lines.append(f"report: {path}")
    return lines
