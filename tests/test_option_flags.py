"""Flags generated from the options' fields: one declaration per option.

A field declared with `bert_tf.options.option.option` is a flag of every
tool that composes its class (name, type, default, help, choices); the
parsed flags build the options, checked once; the fields that define a run
are those the metadata marks.
"""

import dataclasses
import json
import os
import subprocess
import sys

import pytest
from absl import flags

from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_once
from bert_tf.options.checks import run_defining
from bert_tf.options.option import metadata
from bert_tf.options.option import option
from bert_tf.options.run_options import RunOptions
from bert_tf.options.training_options import TrainingOptions

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class ToyOptions:
    """A task's options as a new tool would declare them."""

    top_k: int = option(10, "Results per query.", run_defining=True)
    metric: str = option("IP", "Similarity.", choices=("IP", "L2"))
    labels: tuple | None = option(None, "Label names.")
    normalize: bool | None = option(None, "L2-normalise.")
    scale: float | None = option(
        None, "A run-defining scale.", run_defining=True, absent_when_none=True
    )
    not_a_flag: int = 3

    def check(self, run):
        if self.top_k > 100:
            raise UserInputError(f"--top_k={self.top_k}: at most 100")
        calls = self.__dict__.get("calls", 0) + 1
        object.__setattr__(self, "calls", calls)


def parsed(option_flags, *argv):
    values = flags.FlagValues()
    option_flags.define("toy_tool", flag_values=values)
    values(["toy_tool", *argv])
    return values


def test_a_new_field_is_a_flag_with_its_type_default_help_and_choices():
    values = parsed(OptionFlags(ToyOptions))
    assert [name for name in values] == [
        "top_k",
        "metric",
        "labels",
        "normalize",
        "scale",
    ]
    assert values["top_k"].help == "Results per query."
    assert values["top_k"].default == 10
    assert values["metric"].parser.enum_values == ["IP", "L2"]
    assert values["labels"].flag_type() == "comma separated list of strings"
    assert values["normalize"].boolean and values["normalize"].default is None
    assert values.find_module_defining_flag("top_k") == "toy_tool"


def test_the_parsed_flags_build_the_options():
    toy_flags = OptionFlags(ToyOptions)
    values = parsed(
        toy_flags, "--top_k=5", "--metric=L2", "--labels=a,b", "--nonormalize"
    )
    (toy,) = toy_flags.build(values)
    assert toy == ToyOptions(top_k=5, metric="L2", labels=["a", "b"], normalize=False)


def test_a_tool_changes_a_flag_leaves_one_out_or_renames_it():
    toy_flags = OptionFlags(
        ToyOptions,
        layout=(Flag("metric", name="similarity"), ToyOptions),
        without=("labels",),
        changed=(Flag("top_k", default=20, help="Documents per query."),),
    )
    values = parsed(toy_flags, "--similarity=L2")
    assert [name for name in values] == ["similarity", "top_k", "normalize", "scale"]
    assert values["top_k"].help == "Documents per query."
    (toy,) = toy_flags.build(values)
    # The tool's default is the flag's; a field without a flag keeps the
    # field's, an absent_when_none one is None.
    assert (toy.top_k, toy.metric, toy.labels, toy.scale) == (20, "L2", None, None)


def test_run_defining_settings_come_from_the_metadata():
    marked = {
        f.name
        for f in dataclasses.fields(ToyOptions)
        if (metadata(f) or {}).get("run_defining")
    }
    assert marked == {"top_k", "scale"}
    assert run_defining(ToyOptions(top_k=7)) == {"top_k": 7}  # scale None: absent
    assert run_defining(ToyOptions(scale=2.0)) == {"top_k": 10, "scale": 2.0}
    training = {
        f.name
        for f in dataclasses.fields(TrainingOptions)
        if metadata(f)["run_defining"]
    }
    # A run's identity: its own fields, the training's (but those None and
    # absent), none of the distribution's or the export's.
    run = RunOptions(output_dir="/tmp/out", training=TrainingOptions(num_train_steps=5))
    absent = {"length_bucketing", "num_warmup_steps", "pad_to_longest"}
    assert set(run_defining(run)) == training - absent | {
        "init_checkpoint",
        "vocab_file",
        "do_lower_case",
        "max_seq_length",
        "dtype",
        "seed",
    }


def test_options_are_checked_once_per_run(tmp_path):
    toy_flags = OptionFlags(RunOptions, ToyOptions, layout=(ToyOptions, "output_dir"))
    values = parsed(toy_flags, f"--output_dir={tmp_path}")
    run, toy = toy_flags.build(values)
    assert toy.calls == 1
    check_once(toy, run)  # the task's check of the same run: not again
    assert toy.calls == 1
    check_once(toy, RunOptions(output_dir=str(tmp_path)))  # another run: again
    assert toy.calls == 2
    with pytest.raises(UserInputError, match="--top_k=200"):
        toy_flags.build(parsed(toy_flags, f"--output_dir={tmp_path}", "--top_k=200"))


_TOOL_FLAGS = r"""
import json, sys
from absl import flags
from bert_tf.cli import {tool} as tool
from bert_tf.options.option import metadata
options = tool.COMMAND.options
changed = {{f.name or f.field for f in options.flags if f != type(f)(f.field)}}
listing = {{}}
for placed in options.flags:
    name = placed.name or placed.field
    listing[name] = [
        flags.FLAGS[name].help,
        metadata(options._fields[placed.field])["help"],
        name in changed,
    ]
print(json.dumps(listing))
"""

GENERATED_TOOLS = (
    "run_classifier",
    "run_squad",
    "run_pretraining",
    "extract_features",
    "export_saved_model",
    "run_ner",
    "run_similarity",
    "run_retrieval",
    "run_reranker",
    "export_litert",
)


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("tool", GENERATED_TOOLS)
def test_each_tools_flags_are_its_options_fields(tool):
    result = subprocess.run(
        [sys.executable, "-c", _TOOL_FLAGS.format(tool=tool)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    listing = json.loads(result.stdout)
    assert listing
    for name, (shown, declared, changed) in listing.items():
        if not changed:
            # absl puts an enum's values before the help.
            assert shown.endswith(declared or "(no help available)"), name
