"""Reading and writing cross-encoder directories (re-rankers).

A cross-encoder is a Hugging Face `BertForSequenceClassification` with one
label: the encoder, the pooler, dropout and `classifier.weight` [1, hidden]
/ `classifier.bias` [1]. sentence-transformers' `CrossEncoder` saves it as
an HF directory plus its own settings, in one of three places by version:

* `config.json` → `"sentence_transformers": {"activation_fn": ...}` (v4, v5);
* `config.json` → `"sbert_ce_default_activation_function"` (before v4);
* `config_sentence_transformers.json` → `"activation_fn"` beside a
  `modules.json` whose one module is the sequence-classification
  Transformer (v6).

The activation (Sigmoid by default for one label, or Identity) is what
`CrossEncoder.predict` applies to the logit; the longest input is
`sentence_bert_config.json`'s `max_seq_length`, else the tokenizer's
`model_max_length`, capped at `max_position_embeddings`, as
`CrossEncoder` reads them. A setting this project cannot reproduce (another
activation, more labels, another module) is an error naming the file.
"""

import dataclasses
import os

import numpy as np
from safetensors.numpy import save_file

from bert_tf.checkpoints.loading import CheckpointFiles
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.name_map import hf_names
from bert_tf.checkpoints.sentence_transformers_checkpoint import MODULES_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import SENTENCE_CONFIG_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import hf_config_dict
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_tokenizer_files
from bert_tf.errors import UserInputError
from bert_tf.text.tokenizer_json import read_json

ST_CONFIG_FILE = "config_sentence_transformers.json"
# torch activation class (CrossEncoder's activation_fn) <-> our name.
TORCH_ACTIVATIONS = {
    "torch.nn.modules.activation.Sigmoid": "sigmoid",
    "torch.nn.modules.linear.Identity": "linear",
}
_TORCH_NAMES = {v: k for k, v in TORCH_ACTIVATIONS.items()}
ACTIVATIONS = tuple(_TORCH_NAMES)


@dataclasses.dataclass
class CrossEncoderFiles:
    """What a cross-encoder directory (or any checkpoint) says, in our terms.

    `activation`, `max_seq_length` and `do_lower_case` are None when the
    files do not say (a TF1 checkpoint, a plain BERT directory).
    """

    checkpoint: CheckpointFiles
    activation: str | None
    max_seq_length: int | None
    do_lower_case: bool | None


def _activation(name, where):
    if name is None:
        return None
    if name not in TORCH_ACTIVATIONS:
        raise UserInputError(
            f"{where}: activation_fn {name!r} is not supported; a re-ranker applies "
            f"one of {sorted(TORCH_ACTIVATIONS)}"
        )
    return TORCH_ACTIVATIONS[name]


def _transformer_dir(path):
    """The directory of the Transformer module a v6 modules.json names."""
    modules_file = os.path.join(path, MODULES_FILE)
    modules = read_json(modules_file)
    kinds = [m.get("type", "").rsplit(".", 1)[-1] for m in modules]
    if kinds != ["Transformer"]:
        raise UserInputError(
            f"{modules_file}: modules {kinds} are not a cross-encoder (bert_tf "
            "re-ranks with one sequence-classification Transformer module)"
        )
    directory = os.path.join(path, modules[0].get("path", ""))
    sentence_config = os.path.join(directory, SENTENCE_CONFIG_FILE)
    if os.path.exists(sentence_config):
        task = read_json(sentence_config).get("transformer_task")
        if task not in (None, "sequence-classification"):
            raise UserInputError(
                f"{sentence_config}: transformer_task {task!r} is not a "
                "cross-encoder's (sequence-classification)"
            )
    return directory


def read_cross_encoder(path, new_head=False):
    """The checkpoint and settings at `path` (a cross-encoder directory, or
    any checkpoint `find_checkpoint` reads).

    With `new_head`, `path` only supplies an encoder (e.g. a
    sentence-transformers embedding model): its modules and labels are not
    checked.

    Raises:
        UserInputError: more than one label, an activation other than Sigmoid
            or Identity, or a modules.json with other modules (naming the file).
    """
    path = os.fspath(path)
    if not os.path.isdir(path):
        return CrossEncoderFiles(find_checkpoint(path), None, None, None)
    activation = None
    if os.path.exists(os.path.join(path, MODULES_FILE)) and not new_head:
        directory = _transformer_dir(path)
        st_config = os.path.join(path, ST_CONFIG_FILE)
        if os.path.exists(st_config):
            activation = _activation(
                read_json(st_config).get("activation_fn"), st_config
            )
    else:
        directory = path
    files = find_checkpoint(directory)
    config_file = files.config_file
    hf_config = (
        read_json(config_file) if os.path.basename(config_file) == "config.json" else {}
    )
    labels = hf_config.get("id2label")
    num_labels = len(labels) if labels else hf_config.get("num_labels", 1)
    if num_labels != 1 and not new_head:
        raise UserInputError(
            f"{config_file}: {num_labels} labels; a re-ranker (cross-encoder) "
            "scores each pair with one label (a cross-encoder with several labels "
            "is a pair classifier: BertTextClassifier reads it)"
        )
    if activation is None:
        saved = hf_config.get("sentence_transformers", {}).get("activation_fn")
        activation = _activation(
            saved or hf_config.get("sbert_ce_default_activation_function"),
            config_file,
        )
    max_seq_length = None
    do_lower_case = files.do_lower_case
    sentence_config = os.path.join(directory, SENTENCE_CONFIG_FILE)
    if os.path.exists(sentence_config):
        settings = read_json(sentence_config)
        max_seq_length = settings.get("max_seq_length")
        if settings.get("do_lower_case"):  # lower-cases before the tokenizer
            do_lower_case = True
    tokenizer_config = os.path.join(directory, "tokenizer_config.json")
    if os.path.exists(tokenizer_config):
        settings = read_json(tokenizer_config)
        if max_seq_length is None:
            max_seq_length = settings.get("model_max_length")
        if do_lower_case is None:  # e.g. our checkpoint with run_reranker's file
            do_lower_case = settings.get("do_lower_case")
    return CrossEncoderFiles(files, activation, max_seq_length, do_lower_case)


def save_cross_encoder(model, directory):
    """Writes `model` (a `BertReranker`) as a Hugging Face
    `BertForSequenceClassification` directory with one label, which
    `sentence_transformers.CrossEncoder(directory)` loads (with the same
    activation and longest input) and `BertReranker.from_checkpoint` reads
    back.

    Returns:
        `directory`.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    tensors = {}
    for name, variable in model.checkpoint_variables().items():
        candidates, transpose = hf_names(name)
        hf_name = candidates[0]
        if not hf_name.startswith(("bert.", "classifier.")):
            hf_name = "bert." + hf_name
        value = np.asarray(variable.numpy(), np.float32)
        tensors[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    save_file(tensors, os.path.join(directory, "model.safetensors"))
    config = hf_config_dict(model.encoder.config)
    config.update(
        architectures=["BertForSequenceClassification"],
        id2label={"0": "LABEL_0"},
        label2id={"LABEL_0": 0},
        sentence_transformers={"activation_fn": _TORCH_NAMES[model.activation]},
    )
    write_json(os.path.join(directory, "config.json"), config)
    preprocessor = model.preprocessor
    write_tokenizer_files(directory, preprocessor, preprocessor.seq_length)
    return directory
