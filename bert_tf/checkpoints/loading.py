"""Finding a checkpoint on disk and loading it into a model by name."""

import dataclasses
import glob
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints import keras_hub_checkpoint
from bert_tf.checkpoints.hf_checkpoint import HfCheckpointReader
from bert_tf.checkpoints.hf_checkpoint import safetensors_files
from bert_tf.checkpoints.keras_hub_checkpoint import KerasHubCheckpointReader
from bert_tf.checkpoints.model_garden_checkpoint import ModelGardenCheckpointReader
from bert_tf.checkpoints.model_garden_checkpoint import is_object_checkpoint
from bert_tf.checkpoints.tf1_checkpoint import Tf1CheckpointReader
from bert_tf.config import BertConfig
from bert_tf.errors import UserInputError
from bert_tf.text.tokenization import load_vocab
from bert_tf.text.tokenizer_json import is_tokenizer_json
from bert_tf.text.tokenizer_json import read_tokenizer_files

_EXPECTED = (
    "expected a Google checkpoint prefix (…/bert_model.ckpt, with bert_config.json "
    "beside it) or a directory holding bert_config.json + bert_model.ckpt.* (TF1 "
    "names, or a TF Model Garden BertEncoder's TF2 object checkpoint), a Hugging "
    "Face directory holding config.json + model.safetensors, or a KerasHub "
    "BertBackbone preset directory holding config.json + model.weights.h5"
)
# How many names an error message lists before "... (N in all)".
_NAMES_SHOWN = 5


@dataclasses.dataclass
class CheckpointFiles:
    """Where a checkpoint's weights, config and vocab are.

    `vocab_file` is a vocab.txt or a Hugging Face tokenizer.json;
    `tokenizer_options` the other tokenizer switches the files give
    (`strip_accents`, `tokenize_chinese_chars`), for `BertPreprocessor`.
    """

    reader: object
    config_file: str
    vocab_file: str | None
    # How the vocabulary was used, when the files say (HF and KerasHub do).
    do_lower_case: bool | None = None
    tokenizer_options: dict = dataclasses.field(default_factory=dict)

    def load_config(self, config=None):
        """The checkpoint's `BertConfig`, or `config` instead (a `BertConfig`
        or the path of its JSON file)."""
        if config is None:
            return self.reader.load_config(self.config_file)
        if isinstance(config, BertConfig):
            return config
        return BertConfig.from_json_file(config)


def hf_checkpoint_files(directory, weight_files):
    """`CheckpointFiles` of an HF directory: its tokenizer from vocab.txt or
    tokenizer.json plus tokenizer_config.json (`read_tokenizer_files`)."""
    tokenizer = read_tokenizer_files(directory)
    return CheckpointFiles(
        HfCheckpointReader(weight_files),
        os.path.join(directory, "config.json"),
        tokenizer.vocab_file,
        tokenizer.do_lower_case,
        tokenizer.options(),
    )


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


def open_tf_checkpoint(prefix):
    """The reader for a TensorFlow checkpoint prefix: TF1 names or TF2 objects."""
    shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map()
    if is_object_checkpoint(shapes):
        return ModelGardenCheckpointReader(prefix)
    return Tf1CheckpointReader(prefix)


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
            return hf_checkpoint_files(path, hf_files)
        if keras_hub_checkpoint.is_keras_hub_preset(path):
            vocab = os.path.join(path, keras_hub_checkpoint.VOCAB_FILE)
            return CheckpointFiles(
                KerasHubCheckpointReader(path),
                os.path.join(path, "config.json"),
                vocab if os.path.exists(vocab) else None,
                keras_hub_checkpoint.preset_lowercase(path),
            )
        prefix = _tf1_prefix_in(path)
        if prefix and os.path.exists(os.path.join(path, "bert_config.json")):
            return CheckpointFiles(
                open_tf_checkpoint(prefix),
                os.path.join(path, "bert_config.json"),
                _vocab_beside(path),
            )
        raise FileNotFoundError(f"No BERT checkpoint in directory {path}: {_EXPECTED}")
    directory = os.path.dirname(os.path.abspath(path))
    if path.endswith(".safetensors") and os.path.exists(path):
        _require(os.path.join(directory, "config.json"), "HF config.json", path)
        return hf_checkpoint_files(directory, [path])
    if os.path.exists(path + ".index"):
        config = _require(
            os.path.join(directory, "bert_config.json"), "bert_config.json", path
        )
        return CheckpointFiles(
            open_tf_checkpoint(path), config, _vocab_beside(directory)
        )
    raise FileNotFoundError(f"BERT checkpoint not found: {path}: {_EXPECTED}")


def checkpoint_vocabulary(files, vocab_file, path):
    """`(vocab_file, tokenizer_options)` for a model loaded from `files`.

    Without `vocab_file`, the checkpoint's own vocab.txt or tokenizer.json
    and its settings. A `vocab_file` given beside a checkpoint that has its
    own must hold the same tokens with the same ids: another model's
    vocabulary embeds wrong without a sign.

    Raises:
        FileNotFoundError: no vocabulary beside `path` and none given.
        UserInputError: `vocab_file` is not the checkpoint's own vocabulary.
    """
    own = files.vocab_file
    if vocab_file is None:
        if own is None:
            raise FileNotFoundError(
                f"No vocabulary beside {path} (vocab.txt or tokenizer.json): pass "
                "vocab_file="
            )
        return own, dict(files.tokenizer_options)
    if own is not None and os.path.abspath(vocab_file) != os.path.abspath(own):
        given, theirs = load_vocab(vocab_file), load_vocab(own)
        differ = sum(1 for t, i in given.items() if theirs.get(t) != i)
        differ += sum(1 for t in theirs if t not in given)
        if differ:
            raise UserInputError(
                f"vocab_file={vocab_file} is not the vocabulary of {path} ({own}): "
                f"{differ} tokens differ in presence or id; leave vocab_file unset "
                "to use the model's own"
            )
        return vocab_file, dict(files.tokenizer_options)
    return vocab_file, {}


def count_vocab_lines(vocab_file):
    if is_tokenizer_json(vocab_file):
        return len(load_vocab(vocab_file))
    # The original's load_vocab stops at EOF and keeps every line, blank or not.
    with open(vocab_file, encoding="utf-8") as f:
        return sum(1 for _ in f)


# The tokens every fine-tuning tool writes or falls back to.
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[UNK]")


def check_special_tokens(vocab_file, tokens=SPECIAL_TOKENS):
    """Raises UserInputError naming `vocab_file` when it lacks one of
    `tokens` (as a whole stripped line, as `load_vocab` reads it)."""
    if is_tokenizer_json(vocab_file):
        present = set(load_vocab(vocab_file))
    else:
        with open(vocab_file, encoding="utf-8", errors="replace") as f:
            present = {line.strip() for line in f}
    missing = [token for token in tokens if token not in present]
    if missing:
        raise UserInputError(
            f"{vocab_file}: the vocabulary has no {', '.join(missing)} (BERT "
            f"inputs need {', '.join(tokens)}): is it a BERT WordPiece vocab.txt?"
        )


def check_vocab_matches_config(vocab_file, config):
    """Raises UserInputError when vocab.txt lacks a special token
    (`SPECIAL_TOKENS`) or has more entries than `vocab_size`.

    More entries than rows would index past the embedding table (the README's
    "NaNs" warning); fewer only leaves rows unused, which is legal.
    """
    check_special_tokens(vocab_file)
    lines = count_vocab_lines(vocab_file)
    if lines > config.vocab_size:
        raise UserInputError(
            f"{vocab_file} has {lines} entries but vocab_size in {config.source or 'the config'}"
            f" is {config.vocab_size}: token ids would run past the embedding table"
        )
    return lines


def _some(names):
    shown = ", ".join(names[:_NAMES_SHOWN])
    more = f", ... ({len(names)} in all)" if len(names) > _NAMES_SHOWN else ""
    return shown + more


class CheckpointMismatchError(UserInputError):
    """A checkpoint's encoder does not match the model's, name for name."""


@dataclasses.dataclass
class LoadReport:
    """What `load_checkpoint` did, by original variable name.

    `missing` are the model's variables the checkpoint lacks (freshly
    initialised: task heads only, or a pooler the model does not read);
    `unused` the checkpoint's entries no variable took (e.g. pre-training
    heads when fine-tuning).
    """

    path: str
    loaded: list
    missing: list
    unused: list

    def missing_read(self, model):
        """`missing` less a pooler `model` does not read: what a trained
        model of its kind must have found in the checkpoint."""
        reads_pooler = getattr(model, "reads_pooled_output", True)
        return [
            name
            for name in self.missing
            if reads_pooler or not name.startswith("bert/pooler/")
        ]

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
            logging.warning("  not in checkpoint (initialised): %s", name)
        for name in self.unused:
            logging.info("  in checkpoint, not used: %s", name)


def _initialisable(model, variables):
    """The model's variables a checkpoint may lack: its task heads (outside the
    `bert/` encoder scope), and the pooler when the model does not read it."""
    names = {n for n in variables if not n.startswith("bert/")}
    if not getattr(model, "reads_pooled_output", True):
        names |= {n for n in variables if n.startswith("bert/pooler/")}
    return names


def _check_encoder_matches(reader, model, variables, missing, unused):
    encoder_missing = [n for n in missing if n not in _initialisable(model, variables)]
    encoder_unused = [n for n in unused if reader.is_encoder_entry(n)]
    if not encoder_missing and not encoder_unused:
        return
    problems = []
    if encoder_missing:
        problems.append(
            f"{len(encoder_missing)} of the model's {len(variables)} variables are "
            f"not in it: {_some(encoder_missing)}"
        )
    if encoder_unused:
        problems.append(
            f"{len(encoder_unused)} of its encoder entries match no variable of "
            f"the model: {_some(encoder_unused)}"
        )
    config = getattr(getattr(model, "encoder", model), "config", None)
    hint = ""
    if config is not None:
        hint = (
            f" Is the config ({config.source or 'given in code'}: "
            f"{config.num_hidden_layers} layers, hidden {config.hidden_size}) the "
            "checkpoint's own?"
        )
    raise CheckpointMismatchError(
        f"{reader.path} ({reader.kind}) does not match the model's encoder; "
        + "; ".join(problems)
        + "."
        + hint
    )


def load_checkpoint(model, path):
    """Assigns the checkpoint at `path` to `model`'s variables by name.

    Every encoder variable must come from the checkpoint and every encoder
    entry of the checkpoint must be used: a wrong config or a checkpoint of
    another model fails here instead of training on random weights. Task
    heads the checkpoint lacks keep their initial values (logged at WARNING),
    checkpoint entries outside the encoder that the model does not use (e.g.
    pre-training heads) are ignored, and optimizer slots are never read.

    Raises:
        CheckpointMismatchError (a ValueError): encoder variables missing from
            the checkpoint, or encoder entries of the checkpoint unused; the
            message names the file and the variables.
        ValueError: a variable's shape differs between model and checkpoint.
    """
    files = path if isinstance(path, CheckpointFiles) else find_checkpoint(path)
    reader = files.reader
    variables = model.checkpoint_variables()
    loaded, missing, used = [], [], set()
    found = {}
    for name in variables:
        stored = reader.lookup(name)
        if stored is None:
            missing.append(name)
        else:
            found[name] = stored
            used.add(stored[0])
    unused = sorted(set(reader.shapes) - used)
    _check_encoder_matches(reader, model, variables, missing, unused)
    for name, (stored_name, conversion) in found.items():
        variable = variables[name]
        value = reader.read(stored_name)
        if conversion == "transpose":
            value = value.T
        elif conversion == "reshape" and value.size == np.prod(variable.shape):
            value = value.reshape(variable.shape)
        if tuple(value.shape) != tuple(variable.shape):
            raise UserInputError(
                f"{reader.path}: variable {stored_name!r} has shape {tuple(value.shape)} in the "
                f"checkpoint, but the model's {name} has shape {tuple(variable.shape)}"
            )
        variable.assign(value.astype(np.dtype(variable.dtype)))
        loaded.append(name)
    report = LoadReport(reader.path, loaded, missing, unused)
    report.log()
    return report


class CheckpointMixin:
    """Adds `from_checkpoint` to a model that has `checkpoint_variables()`."""

    @classmethod
    def from_checkpoint(cls, path, config=None, **kwargs):
        """Builds the model from the checkpoint's config and loads its weights.

        Args:
            path: a Google checkpoint prefix or model directory (TF1 names,
                or a TF Model Garden BertEncoder's TF2 object checkpoint), a
                Hugging Face model directory, or a KerasHub BERT preset
                directory (see `find_checkpoint`).
            config: optional `BertConfig` (or path to one) to use instead of
                the config file found beside the checkpoint.
            **kwargs: passed to the model's constructor (e.g. `num_labels`).
        """
        files = path if isinstance(path, CheckpointFiles) else find_checkpoint(path)
        config = files.load_config(config)
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
