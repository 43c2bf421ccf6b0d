"""`RecordedRun`: what a trained run recorded, which wins over the flags.

A training run leaves in its output_dir `run_settings.json` (the vocabulary's
fingerprint, `do_lower_case`, ...), `label_list.json` (the labels in label-id
order) and `vocab.txt`. A later `--do_eval` / `--do_predict` without
`--do_train`, or an export of the run, must read text and name labels as the
run was trained: another vocabulary feeds the model foreign ids, another
casing other word pieces, reordered labels swap the names of its outputs. A
flag that disagrees with the record is one clear error naming the flag and
the recorded value; nothing is silently re-interpreted.
"""

import json
import os

import tensorflow as tf

from bert_tf.data_prep import glue
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.data_prep.label_list_file import read_label_list
from bert_tf.errors import UserInputError
from bert_tf.training.output_dir import SETTINGS_FILE

VOCAB_FILE = "vocab.txt"


class RecordedRun:
    """The recorded settings of the run in `directory` (none if it holds none).

    Read when made, so that a tool that rewrites `label_list.json` later
    still compares against what the training run wrote.

    Args:
        directory: a run's output_dir (or the directory of a checkpoint in it).

    Example:
    >>> recorded = RecordedRun("/tmp/mrpc_output")
    >>> recorded.check(vocab_file="vocab.txt", do_lower_case=True)
    """

    def __init__(self, directory):
        self.directory = directory
        self.settings = {}
        path = os.path.join(directory, SETTINGS_FILE)
        if tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(path) as reader:
                try:
                    self.settings = json.load(reader)
                except json.JSONDecodeError as e:
                    raise UserInputError(f"{path}: not JSON ({e})") from None
            if not isinstance(self.settings, dict):
                raise UserInputError(f"{path}: expected a JSON object")
        saved = read_label_list(directory)
        self.label_list = None if saved is None else list(saved.label_list)
        vocab = os.path.join(directory, VOCAB_FILE)
        self.vocab_copy = vocab if tf.io.gfile.exists(vocab) else None

    @classmethod
    def beside(cls, checkpoint):
        """The run whose output_dir is `checkpoint` (a directory) or holds it."""
        directory = checkpoint if tf.io.gfile.isdir(checkpoint) else None
        return cls(directory or os.path.dirname(checkpoint) or ".")

    @property
    def exists(self):
        return bool(self.settings) or self.label_list is not None

    @property
    def do_lower_case(self):
        """The recorded `do_lower_case`, or None."""
        return self.settings.get("do_lower_case")

    @property
    def text_pair(self):
        """Whether the run classified text pairs (a GLUE task's own; a
        custom task's text_b_column), or None when the record does not say
        (no record, a TFDS run, another tool's run)."""
        if self.settings.get("script") != "run_classifier":
            return None
        task = str(self.settings.get("task_name") or "").lower()
        if task == "custom":
            return bool(self.settings.get("text_b_column"))
        if task not in glue.PROCESSORS:
            return None
        return bool(glue.get_processor(task).text_pair)

    def _vocab_fingerprint(self):
        recorded = self.settings.get("vocab")
        if isinstance(recorded, dict) and "sha256" in recorded:
            return recorded
        if self.vocab_copy:
            return file_fingerprint(self.vocab_copy)
        return None

    def check(
        self,
        vocab_file=None,
        do_lower_case=None,
        label_list=None,
        labels_flag="labels",
    ):
        """Raises `UserInputError` for the first given value that differs from
        the record (None: not checked).

        Args:
            vocab_file: the vocabulary the flags name (compared by content).
            do_lower_case: the casing the flags ask for.
            label_list: the labels the flags imply, in label-id order.
            labels_flag: the parameter `label_list` came from, as
                ``name`` or ``name=value``, for the message.
        """
        where = f"the run in {self.directory}"
        if vocab_file is not None:
            recorded = self._vocab_fingerprint()
            if recorded is not None:
                given = file_fingerprint(vocab_file)
                if (given["size"], given["sha256"]) != (
                    recorded["size"],
                    recorded["sha256"],
                ):
                    trained = self.vocab_copy or recorded.get("path")
                    raise UserInputError(
                        f"vocab_file={vocab_file}: {where} was trained with "
                        f"another vocabulary ({trained}); give that one (or leave "
                        "vocab_file out where the tool allows it)",
                        argument="vocab_file",
                    )
        recorded_case = self.do_lower_case
        if (
            do_lower_case is not None
            and recorded_case is not None
            and bool(do_lower_case) != bool(recorded_case)
        ):
            raise UserInputError(
                f"do_lower_case={str(bool(do_lower_case)).lower()}: {where} was "
                f"trained with do_lower_case={str(bool(recorded_case)).lower()}",
                argument="do_lower_case",
            )
        if label_list is not None and self.label_list is not None:
            if [str(x) for x in label_list] != [str(x) for x in self.label_list]:
                raise UserInputError(
                    f"{labels_flag}: the label list {_shown(label_list)} differs "
                    f"from the one {where} was trained with, {_shown(self.label_list)} "
                    f"(its label_list.json, in label-id order)",
                    argument=labels_flag.partition("=")[0],
                )


def _shown(labels):
    if labels == [None]:
        return "(regression)"
    return ",".join(str(label) for label in labels)
