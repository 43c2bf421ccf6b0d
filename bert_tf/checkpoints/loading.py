"""Finding a checkpoint on disk and loading it into a model by name."""

import dataclasses
import glob
import os

import numpy as np
from absl import logging

from bert_tf.checkpoints.hf_checkpoint import HfCheckpointReader
from bert_tf.checkpoints.hf_checkpoint import safetensors_files
from bert_tf.checkpoints.tf1_checkpoint import Tf1CheckpointReader
from bert_tf.config import BertConfig

_EXPECTED = (
    "expected a Google checkpoint prefix (…/bert_model.ckpt, with bert_config.json "
    "beside it), a directory holding bert_config.json + bert_model.ckpt.*, or a "
    "Hugging Face directory holding config.json + model.safetensors"
)


@dataclasses.dataclass
class CheckpointFiles:
    """Where a checkpoint's weights, config and vocab are."""

    reader: object
    config_file: str
    vocab_file: str | None


def _require(path, what, checkpoint):
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{what} not found: {path} (needed for checkpoint {checkpoint})"
        )
    return path


def _vocab_beside(directory):
    vocab = os.path.join(directory, "vocab.txt")
    return vocab if os.path.exists(vocab) else None


def _tf1_prefix_in(directory):
    prefix = os.path.join(directory, "bert_model.ckpt")
    if os.path.exists(prefix + ".index"):
        return prefix
    indexes = sorted(glob.glob(os.path.join(directory, "*.index")))
    if len(indexes) == 1:
        return indexes[0][: -len(".index")]
    return None


def find_checkpoint(path):
    """Resolves `path` to a reader plus its config and vocab files.

    Raises:
        FileNotFoundError: naming `path` (or the missing config) when nothing
            loadable is there.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        hf_files = safetensors_files(path)
        if hf_files and os.path.exists(os.path.join(path, "config.json")):
            return CheckpointFiles(
                HfCheckpointReader(hf_files),
                os.path.join(path, "config.json"),
                _vocab_beside(path),
            )
        prefix = _tf1_prefix_in(path)
        if prefix and os.path.exists(os.path.join(path, "bert_config.json")):
            return CheckpointFiles(
                Tf1CheckpointReader(prefix),
                os.path.join(path, "bert_config.json"),
                _vocab_beside(path),
            )
        raise FileNotFoundError(f"No BERT checkpoint in directory {path}: {_EXPECTED}")
    directory = os.path.dirname(os.path.abspath(path))
    if path.endswith(".safetensors") and os.path.exists(path):
        config = _require(
            os.path.join(directory, "config.json"), "HF config.json", path
        )
        return CheckpointFiles(
            HfCheckpointReader([path]), config, _vocab_beside(directory)
        )
    if os.path.exists(path + ".index"):
        config = _require(
            os.path.join(directory, "bert_config.json"), "bert_config.json", path
        )
        return CheckpointFiles(
            Tf1CheckpointReader(path), config, _vocab_beside(directory)
        )
    raise FileNotFoundError(f"BERT checkpoint not found: {path}: {_EXPECTED}")


def count_vocab_lines(vocab_file):
    # The original's load_vocab stops at EOF and keeps every line, blank or not.
    with open(vocab_file, encoding="utf-8") as f:
        return sum(1 for _ in f)


def check_vocab_matches_config(vocab_file, config):
    """Raises ValueError when vocab.txt has more entries than `vocab_size`.

    More entries than rows would index past the embedding table (the README's
    "NaNs" warning); fewer only leaves rows unused, which is legal.
    """
    lines = count_vocab_lines(vocab_file)
    if lines > config.vocab_size:
        raise ValueError(
            f"{vocab_file} has {lines} entries but vocab_size in {config.source or 'the config'}"
            f" is {config.vocab_size}: token ids would run past the embedding table"
        )
    return lines


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` did, by original variable name."""

    path: str
    loaded: list
    missing: list
    unused: list

    def log(self):
        logging.info(
            "Loaded %d variables from %s; %d in the model not in the checkpoint "
            "(freshly initialised); %d in the checkpoint not used.",
            len(self.loaded),
            self.path,
            len(self.missing),
            len(self.unused),
        )
        for name in self.missing:
            logging.info("  not in checkpoint (initialised): %s", name)
        for name in self.unused:
            logging.info("  in checkpoint, not used: %s", name)


def load_checkpoint(model, path):
    """Assigns the checkpoint at `path` to `model`'s variables by name.

    As the original's `get_assignment_map_from_checkpoint`: variables the
    checkpoint lacks keep their initial values, checkpoint entries the model
    does not use are ignored, and optimizer slots are never read. Both lists
    are logged and returned.

    Raises:
        ValueError: a variable's shape differs between model and checkpoint.
    """
    files = path if isinstance(path, CheckpointFiles) else find_checkpoint(path)
    reader = files.reader
    variables = model.checkpoint_variables()
    loaded, missing, used = [], [], set()
    for name, variable in variables.items():
        found = reader.lookup(name)
        if found is None:
            missing.append(name)
            continue
        stored_name, transpose = found
        value = reader.read(stored_name)
        if transpose:
            value = value.T
        if tuple(value.shape) != tuple(variable.shape):
            raise ValueError(
                f"{reader.path}: variable {stored_name!r} has shape {tuple(value.shape)} in the "
                f"checkpoint, but the model's {name} has shape {tuple(variable.shape)}"
            )
        variable.assign(value.astype(np.dtype(variable.dtype)))
        loaded.append(name)
        used.add(stored_name)
    unused = sorted(set(reader.shapes) - used)
    report = LoadReport(reader.path, loaded, missing, unused)
    report.log()
    return report


class CheckpointMixin:
    """Adds `from_checkpoint` to a model that has `checkpoint_variables()`."""

    @classmethod
    def from_checkpoint(cls, path, config=None, **kwargs):
        """Builds the model from the checkpoint's config and loads its weights.

        Args:
            path: a Google checkpoint prefix, a Google model directory, or a
                Hugging Face model directory (see `find_checkpoint`).
            config: optional `BertConfig` (or path to one) to use instead of
                the config file found beside the checkpoint.
            **kwargs: passed to the model's constructor (e.g. `num_labels`).
        """
        files = find_checkpoint(path)
        if config is None:
            config = BertConfig.from_json_file(files.config_file)
        elif not isinstance(config, BertConfig):
            config = BertConfig.from_json_file(config)
        if files.vocab_file is not None:
            lines = count_vocab_lines(files.vocab_file)
            if lines != config.vocab_size:
                logging.warning(
                    "%s has %d entries but vocab_size is %d in %s",
                    files.vocab_file,
                    lines,
                    config.vocab_size,
                    config.source,
                )
        model = cls(config, **kwargs)
        model.checkpoint_load_report = load_checkpoint(model, files)
        return model
