"""Reading and writing sentence-transformers model directories.

A sentence-transformers directory lists its modules in `modules.json`: a
`Transformer` (a Hugging Face model directory, often the root itself), a
`Pooling` (`1_Pooling/config.json`), optionally a `Dense` (`2_Dense/`:
config.json + the `linear` weights) and a `Normalize`.
`sentence_bert_config.json` beside the transformer holds `max_seq_length`
and `do_lower_case` (lower-casing before the tokenizer). What is read here
is everything these modules say; a module or setting this project cannot
reproduce is an error naming the file, never skipped.
"""

import dataclasses
import json
import os

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from bert_tf.checkpoints.hf_checkpoint import safetensors_files
from bert_tf.checkpoints.loading import CheckpointFiles
from bert_tf.checkpoints.loading import hf_checkpoint_files
from bert_tf.checkpoints.name_map import hf_names
from bert_tf.errors import UserInputError
from bert_tf.layers.sentence_pooling import POOLING_MODES
from bert_tf.text.tokenizer_json import read_json
from bert_tf.text.tokenizer_json import read_tokenizer_files

MODULES_FILE = "modules.json"
SENTENCE_CONFIG_FILE = "sentence_bert_config.json"
# Where a run's output_dir keeps its trained encoder in this layout.
TRAINED_MODEL_SUBDIR = "sentence_transformers"
# The Dense module's names in our checkpoints (TF1 layout: kernel [in, out]).
DENSE_KERNEL = "sentence_dense/kernel"
DENSE_BIAS = "sentence_dense/bias"
# The legacy Pooling keys (every version reads them), in concatenation order.
_LEGACY_POOLING_KEYS = {
    "pooling_mode_cls_token": "cls",
    "pooling_mode_max_tokens": "max",
    "pooling_mode_mean_tokens": "mean",
    "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
    "pooling_mode_weightedmean_tokens": "weightedmean",
    "pooling_mode_lasttoken": "lasttoken",
}
ST_CONFIG_FILE = "config_sentence_transformers.json"
# sentence-transformers' similarity functions (similarity_fn_name).
SIMILARITY_FUNCTIONS = ("cosine", "dot", "euclidean", "manhattan")
# torch activation class (Dense's activation_function) <-> Keras activation.
_TORCH_ACTIVATIONS = {
    "torch.nn.modules.activation.Tanh": "tanh",
    "torch.nn.modules.linear.Identity": "linear",
    "torch.nn.modules.activation.ReLU": "relu",
    "torch.nn.modules.activation.GELU": "gelu",
    "torch.nn.modules.activation.Sigmoid": "sigmoid",
    "torch.nn.modules.activation.SiLU": "silu",
    "torch.nn.modules.activation.ELU": "elu",
    "torch.nn.modules.activation.Softplus": "softplus",
    "torch.nn.modules.activation.Softsign": "softsign",
    "torch.nn.modules.activation.Mish": "mish",
    "torch.nn.modules.activation.ReLU6": "relu6",
    "torch.nn.modules.activation.Hardsigmoid": "hard_sigmoid",
    "torch.nn.modules.activation.Hardswish": "hard_silu",
}
_KERAS_ACTIVATIONS = {v: k for k, v in _TORCH_ACTIVATIONS.items()}
# HF `hidden_act` of each of our activation names (inverse of the config's map).
_HF_HIDDEN_ACT = {
    "gelu_exact": "gelu",
    "gelu": "gelu_new",
    "relu": "relu",
    "tanh": "tanh",
    "linear": "linear",
}


def is_sentence_transformers_dir(path):
    return os.path.isdir(path) and os.path.exists(os.path.join(path, MODULES_FILE))


def sentence_transformers_dir_of(path):
    """The sentence-transformers directory `path` names, or None.

    `path` itself when it is one; its `TRAINED_MODEL_SUBDIR` when it is the
    output_dir of a run that saved its encoder there (run_similarity), so
    every tool reads the pooling, normalization, length and casing the run
    trained with rather than asking for them again.
    """
    if not isinstance(path, str):
        return None
    for candidate in (path, os.path.join(path, TRAINED_MODEL_SUBDIR)):
        if is_sentence_transformers_dir(candidate):
            return candidate
    return None


@dataclasses.dataclass
class SentenceTransformersModel:
    """What a sentence-transformers directory holds, in this project's terms.

    `checkpoint` loads the transformer's weights and the Dense's (under
    `DENSE_KERNEL`/`DENSE_BIAS`); `do_lower_case` is the tokenizer's
    lower-casing (or sentence_bert_config's, which lower-cases first).
    """

    path: str
    checkpoint: CheckpointFiles
    pooling: tuple
    dense_units: int | None
    dense_activation: str | None
    dense_use_bias: bool
    normalize: bool
    max_seq_length: int | None
    do_lower_case: bool | None
    include_prompt: bool = True
    prompts: dict = dataclasses.field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str | None = None
    normalize_before_dense: bool = False
    truncate_dim: int | None = None


def _read_json(path):
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} not found (named by a modules.json)")
    return read_json(path)


def _pooling_modes(config, where):
    """`(modes, include_prompt)` of a Pooling config."""
    if "pooling_mode" in config:  # sentence-transformers >= 6
        mode = config["pooling_mode"]
        modes = (mode,) if isinstance(mode, str) else tuple(mode)
    else:
        modes = tuple(m for k, m in _LEGACY_POOLING_KEYS.items() if config.get(k))
        modes = modes or ("mean",)
    unsupported = [m for m in modes if m not in POOLING_MODES]
    if unsupported:
        raise UserInputError(
            f"{where}: pooling mode {unsupported} is not supported (bert_tf pools "
            f"with {POOLING_MODES})"
        )
    return modes, bool(config.get("include_prompt", True))


class _DenseReader:
    """An HF reader plus the Dense module's two tensors, by our names."""

    def __init__(self, hf_reader, dense):
        self._hf = hf_reader
        self._dense = dense  # {our name: array in our layout}
        self.kind = "sentence-transformers directory"
        self.path = hf_reader.path
        self.shapes = {**hf_reader.shapes, **{k: v.shape for k, v in dense.items()}}
        self.load_config = hf_reader.load_config

    def lookup(self, name):
        if name in self._dense:
            return name, None
        return self._hf.lookup(name)

    def is_encoder_entry(self, name):
        return name in self._dense or self._hf.is_encoder_entry(name)

    def read(self, name):
        if name in self._dense:
            return self._dense[name]
        return self._hf.read(name)


def _read_dense(directory):
    config = _read_json(os.path.join(directory, "config.json"))
    where = os.path.join(directory, "config.json")
    if config.get("use_residual"):
        raise UserInputError(f"{where}: use_residual=true is not supported")
    name = config.get("activation_function", "torch.nn.modules.activation.Tanh")
    if name not in _TORCH_ACTIVATIONS:
        raise UserInputError(
            f"{where}: activation_function {name!r} is not supported; expected one "
            f"of {sorted(_TORCH_ACTIVATIONS)}"
        )
    weights_file = os.path.join(directory, "model.safetensors")
    if os.path.exists(weights_file):
        with safe_open(weights_file, framework="np") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
    elif os.path.exists(os.path.join(directory, "pytorch_model.bin")):
        try:
            import torch
        except ImportError as e:
            raise UserInputError(
                f"{directory}/pytorch_model.bin needs torch to read; convert it to "
                "model.safetensors or install torch"
            ) from e
        state = torch.load(
            os.path.join(directory, "pytorch_model.bin"),
            map_location="cpu",
            weights_only=True,
        )
        tensors = {k: v.float().numpy() for k, v in state.items()}
    else:
        raise FileNotFoundError(
            f"{directory}: no model.safetensors or pytorch_model.bin for the Dense module"
        )
    if "linear.weight" not in tensors:
        raise UserInputError(f"{directory}: no linear.weight in the Dense weights")
    kernel = np.asarray(tensors["linear.weight"], np.float32).T
    dense = {DENSE_KERNEL: kernel}
    use_bias = bool(config.get("bias", True))
    if use_bias:
        dense[DENSE_BIAS] = np.asarray(tensors["linear.bias"], np.float32)
    return dense, kernel.shape[1], _TORCH_ACTIVATIONS[name], use_bias


def read_sentence_transformers(path):
    """Reads the sentence-transformers directory `path`.

    Raises:
        UserInputError: a module type, pooling mode, activation or layout this
            project cannot reproduce (naming the file).
        FileNotFoundError: a file that modules.json names is missing.
    """
    path = os.fspath(path)
    st_file = os.path.join(path, ST_CONFIG_FILE)
    if os.path.exists(st_file) and _read_json(st_file).get("model_type") == (
        "MultiVectorEncoder"
    ):
        raise UserInputError(
            f"{st_file}: model_type 'MultiVectorEncoder' makes one vector per token: "
            "load it with bert_tf.BertMultiVectorEncoder"
        )
    modules_file = os.path.join(path, MODULES_FILE)
    modules = _read_json(modules_file)
    transformer_dir = None
    pooling = None
    include_prompt = True
    dense = {}
    dense_units = dense_activation = None
    dense_use_bias = True
    normalize = False
    # A Normalize before the Dense: the pooled vector's (Pooling, Normalize,
    # Dense, Normalize: a projection added to a normalized model).
    normalize_pending = normalize_before_dense = False
    for module in sorted(modules, key=lambda m: m.get("idx", 0)):
        kind = module.get("type", "").rsplit(".", 1)[-1]
        directory = os.path.join(path, module.get("path", ""))
        order_error = None
        if kind == "Transformer":
            if transformer_dir is not None:
                order_error = "a second Transformer"
            transformer_dir = directory
        elif kind == "Pooling":
            if transformer_dir is None or pooling is not None:
                order_error = "Pooling not right after the Transformer"
            pooling, include_prompt = _pooling_modes(
                _read_json(os.path.join(directory, "config.json")),
                os.path.join(directory, "config.json"),
            )
        elif kind == "Dense":
            if pooling is None or dense:
                order_error = "Dense before Pooling (or a second Dense)"
            normalize_before_dense, normalize_pending = normalize_pending, False
            dense, dense_units, dense_activation, dense_use_bias = _read_dense(
                directory
            )
        elif kind == "Normalize":
            if pooling is None:
                order_error = "Normalize before Pooling"
            config_path = os.path.join(directory, "config.json")
            if module.get("path") and os.path.exists(config_path):
                source = _read_json(config_path).get("module_input_name")
                if source not in (None, "sentence_embedding"):
                    raise UserInputError(
                        f"{config_path}: Normalize of {source!r} is not supported "
                        "(bert_tf normalizes the sentence embedding)"
                    )
            if dense:
                normalize = True
            else:
                normalize_pending = True
        else:
            raise UserInputError(
                f"{modules_file}: module type {module.get('type')!r} is not supported "
                "(bert_tf reproduces Transformer, Pooling, one Dense and Normalize)"
            )
        if order_error:
            raise UserInputError(f"{modules_file}: {order_error} is not supported")
    if normalize_pending:  # no Dense after it: the embedding's own
        normalize = True
    if transformer_dir is None or pooling is None:
        raise UserInputError(
            f"{modules_file}: needs a Transformer and a Pooling module"
        )

    checkpoint, max_seq_length, _ = read_transformer_module(
        path, transformer_dir, dense
    )
    st_config, prompts, default_prompt_name, truncate_dim = read_model_config(path)
    similarity = st_config.get("similarity_fn_name")
    if similarity not in (None, *SIMILARITY_FUNCTIONS):
        raise UserInputError(
            f"{os.path.join(path, ST_CONFIG_FILE)}: similarity_fn_name "
            f"{similarity!r} is not supported; expected one of {SIMILARITY_FUNCTIONS}"
        )
    return SentenceTransformersModel(
        path=path,
        checkpoint=checkpoint,
        pooling=pooling,
        dense_units=dense_units,
        dense_activation=dense_activation,
        dense_use_bias=dense_use_bias,
        normalize=normalize,
        normalize_before_dense=normalize_before_dense,
        truncate_dim=truncate_dim,
        max_seq_length=max_seq_length,
        do_lower_case=checkpoint.do_lower_case,
        include_prompt=include_prompt,
        prompts=prompts,
        default_prompt_name=default_prompt_name,
        similarity_fn_name=similarity,
    )


def read_transformer_module(path, transformer_dir, dense=None):
    """`(checkpoint, max_seq_length, sentence_config)` of the Transformer
    module in `transformer_dir` of the sentence-transformers directory
    `path`: its weights (with `dense`, {our name: array}, beside them),
    tokenizer and lower-casing, its longest input and its
    sentence_bert_config.json ({} without one)."""
    files = safetensors_files(transformer_dir)
    if not files:
        raise FileNotFoundError(
            f"{transformer_dir}: no model.safetensors (the Transformer module's weights)"
        )
    sentence_config = {}
    for candidate in (transformer_dir, path):
        config_path = os.path.join(candidate, SENTENCE_CONFIG_FILE)
        if os.path.exists(config_path):
            sentence_config = _read_json(config_path)
            break
    checkpoint = hf_checkpoint_files(transformer_dir, files)
    checkpoint.reader = _DenseReader(checkpoint.reader, dense or {})
    tokenizer = read_tokenizer_files(transformer_dir)
    do_lower_case = tokenizer.do_lower_case
    if sentence_config.get("do_lower_case"):
        # Lower-cases before the tokenizer: accents stay as the tokenizer says.
        if not do_lower_case:
            checkpoint.tokenizer_options["strip_accents"] = bool(
                tokenizer.strip_accents
            )
        do_lower_case = True
    checkpoint.do_lower_case = do_lower_case
    # sentence-transformers 6 writes no max_seq_length: the tokenizer's
    # model_max_length is the longest input then.
    max_seq_length = sentence_config.get("max_seq_length") or tokenizer.model_max_length
    return checkpoint, max_seq_length, sentence_config


def read_model_config(path):
    """`(config, prompts, default_prompt_name, truncate_dim)` of `path`'s
    config_sentence_transformers.json ({} and no prompts without one).

    Raises:
        UserInputError: a truncate_dim that is not a positive int, a default
            prompt that is not one of the prompts.
    """
    st_config = {}
    if os.path.exists(os.path.join(path, ST_CONFIG_FILE)):
        st_config = _read_json(os.path.join(path, ST_CONFIG_FILE))
    truncate_dim = st_config.get("truncate_dim")
    if truncate_dim is not None and (
        isinstance(truncate_dim, bool)
        or not isinstance(truncate_dim, int)
        or truncate_dim < 1
    ):
        raise UserInputError(
            f"{os.path.join(path, ST_CONFIG_FILE)}: truncate_dim "
            f"{truncate_dim!r} is not a positive integer"
        )
    prompts = {k: v or "" for k, v in (st_config.get("prompts") or {}).items()}
    default_prompt_name = st_config.get("default_prompt_name")
    if default_prompt_name is not None and default_prompt_name not in prompts:
        raise UserInputError(
            f"{os.path.join(path, ST_CONFIG_FILE)}: default_prompt_name "
            f"{default_prompt_name!r} is not one of its prompts {sorted(prompts)}"
        )
    return st_config, prompts, default_prompt_name, truncate_dim


def hf_config_dict(config):
    """A Hugging Face `BertConfig` dict (config.json) for our `BertConfig`."""
    data = config.to_dict()
    data["hidden_act"] = _HF_HIDDEN_ACT[config.hidden_act]
    data["layer_norm_eps"] = config.layer_norm_eps
    data.update(model_type="bert", architectures=["BertModel"])
    return data


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
        f.write("\n")


def write_tokenizer_files(directory, preprocessor, model_max_length):
    """vocab.txt and the Hugging Face tokenizer_config.json of `preprocessor`
    (a `BertPreprocessor`) in `directory`."""
    with open(os.path.join(directory, "vocab.txt"), "wb") as f:
        f.write(preprocessor._require_vocabulary())
    write_json(
        os.path.join(directory, "tokenizer_config.json"),
        {
            "do_lower_case": bool(preprocessor.do_lower_case),
            "strip_accents": bool(preprocessor.strip_accents),
            "tokenize_chinese_chars": bool(preprocessor.tokenize_chinese_chars),
            "tokenizer_class": "BertTokenizer",
            "unk_token": "[UNK]",
            "sep_token": "[SEP]",
            "pad_token": "[PAD]",
            "cls_token": "[CLS]",
            "mask_token": "[MASK]",
            "model_max_length": model_max_length,
        },
    )


def write_transformer_module(
    model, directory, sentence_config, variables=None, architecture="BertModel"
):
    """The Transformer module of `model` (a model with `encoder` and
    `preprocessor`) in `directory`: model.safetensors, config.json, the
    tokenizer files and sentence_bert_config.json (`sentence_config` plus
    do_lower_case false: the tokenizer files say the casing). `variables`
    ({original name: variable}; default: the encoder's) are written under
    their Hugging Face names, "bert."-prefixed unless `architecture` is
    "BertModel" (a `BertForMaskedLM` keeps it, beside its `cls.` head)."""
    os.makedirs(directory, exist_ok=True)
    encoder = model.encoder
    config = encoder.config
    tensors = {}
    for name, variable in (variables or encoder.checkpoint_variables()).items():
        candidates, transpose = hf_names(name)
        hf_name = candidates[0]
        if architecture == "BertModel":
            hf_name = hf_name.removeprefix("bert.")
        value = np.asarray(variable.numpy(), np.float32)
        tensors[hf_name] = np.ascontiguousarray(value.T if transpose else value)
    save_file(tensors, os.path.join(directory, "model.safetensors"))
    hf_config = hf_config_dict(config)
    hf_config["architectures"] = [architecture]
    write_json(os.path.join(directory, "config.json"), hf_config)
    write_tokenizer_files(directory, model.preprocessor, config.max_position_embeddings)
    write_json(
        os.path.join(directory, SENTENCE_CONFIG_FILE),
        {**sentence_config, "do_lower_case": False},
    )


def write_dense_module(dense_dir, dense, use_bias, activation, io_name=None):
    """A Dense module (config.json + model.safetensors) of the Keras Dense
    `dense` in `dense_dir`; `io_name` its module input and output name
    ("token_embeddings" for a per-token projection; default: the pooled
    embedding's)."""
    os.makedirs(dense_dir, exist_ok=True)
    kernel = np.asarray(dense.kernel.numpy(), np.float32)
    weights = {"linear.weight": np.ascontiguousarray(kernel.T)}
    if use_bias:
        weights["linear.bias"] = np.asarray(dense.bias.numpy(), np.float32)
    save_file(weights, os.path.join(dense_dir, "model.safetensors"))
    config = {
        "in_features": kernel.shape[0],
        "out_features": kernel.shape[1],
        "bias": bool(use_bias),
        "activation_function": _KERAS_ACTIVATIONS[activation or "linear"],
    }
    if io_name is not None:
        config.update(module_input_name=io_name, module_output_name=io_name)
    write_json(os.path.join(dense_dir, "config.json"), config)


def write_modules_json(directory, modules):
    """modules.json of `modules`, (kind, path) pairs in order; a kind is a
    `sentence_transformers.models` name or a full class path."""
    write_json(
        os.path.join(directory, MODULES_FILE),
        [
            {
                "idx": i,
                "name": str(i),
                "path": path,
                "type": kind if "." in kind else f"sentence_transformers.models.{kind}",
            }
            for i, (kind, path) in enumerate(modules)
        ],
    )


def save_sentence_transformers(model, directory):
    """Writes `model` (a `BertSentenceEncoder`) as a sentence-transformers
    directory that `SentenceTransformer(directory)` loads in PyTorch (and
    `BertSentenceEncoder.from_checkpoint` reads back).

    Returns:
        `directory`.
    """
    directory = os.fspath(directory)
    config = model.encoder.config
    write_transformer_module(
        model, directory, {"max_seq_length": model.preprocessor.seq_length}
    )
    write_json(
        os.path.join(directory, ST_CONFIG_FILE),
        {
            "similarity_fn_name": model.similarity_fn_name or "cosine",
            "prompts": dict(model.prompts),
            "default_prompt_name": model.default_prompt_name,
            "truncate_dim": model.truncate_dim,
        },
    )
    modules = [("Transformer", "")]
    pooling_dir = os.path.join(directory, "1_Pooling")
    os.makedirs(pooling_dir, exist_ok=True)
    pooling = {
        "word_embedding_dimension": config.hidden_size,
        "include_prompt": bool(model.include_prompt),
    }
    legacy_order = tuple(m for m in POOLING_MODES if m in model.pooling)
    if legacy_order == tuple(model.pooling):
        # Keys every sentence-transformers version reads.
        pooling.update({k: m in model.pooling for k, m in _LEGACY_POOLING_KEYS.items()})
    else:  # an order only sentence-transformers >= 6 can say
        pooling["pooling_mode"] = list(model.pooling)
    write_json(os.path.join(pooling_dir, "config.json"), pooling)
    modules.append(("Pooling", "1_Pooling"))
    if getattr(model, "normalize_before_dense", False):
        modules.append(("Normalize", f"{len(modules)}_Normalize"))
    if model.dense is not None:
        path = f"{len(modules)}_Dense"
        write_dense_module(
            os.path.join(directory, path),
            model.dense,
            model.dense_use_bias,
            model.dense_activation,
        )
        modules.append(("Dense", path))
    if model.normalize:
        modules.append(("Normalize", f"{len(modules)}_Normalize"))
    write_modules_json(directory, modules)
    return directory
