"""Reading and writing sentence-transformers `MultiVectorEncoder` directories.

sentence-transformers 6 saves a ColBERT-style model as a `Transformer`
(sentence_bert_config.json with `query_length`, `document_length` and
`query_expansion`), an optional per-token `Dense`, a `MultiVectorMask`
(which tokens score: skiplist words, kept ids) and a per-token `Normalize`,
with `model_type: "MultiVectorEncoder"`, its prompts, `similarity_fn_name`
("maxsim" or "meanmaxsim") and `truncate_dim` in
config_sentence_transformers.json. What is read here is everything these
modules say; anything else that changes the vectors is an error naming the
file and the key, never skipped.
"""

import dataclasses
import os

from absl import logging

from bert_tf.checkpoints.loading import CheckpointFiles
from bert_tf.checkpoints.sentence_transformers_checkpoint import MODULES_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import ST_CONFIG_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import _read_dense
from bert_tf.checkpoints.sentence_transformers_checkpoint import _read_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import read_model_config
from bert_tf.checkpoints.sentence_transformers_checkpoint import read_transformer_module
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_dense_module
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_modules_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    write_transformer_module,
)
from bert_tf.errors import UserInputError

MODEL_TYPE = "MultiVectorEncoder"
# sentence-transformers' MultiVectorEncoder similarity functions.
MULTI_VECTOR_SIMILARITIES = ("maxsim", "meanmaxsim")
EXPANSION_STRATEGIES = ("fixed", "min")
TOKEN_EMBEDDINGS = "token_embeddings"
# Module classes as sentence-transformers 6 saves them in modules.json.
_TYPES = {
    "Transformer": "sentence_transformers.base.modules.transformer.Transformer",
    "Dense": "sentence_transformers.base.modules.dense.Dense",
    "MultiVectorMask": (
        "sentence_transformers.multi_vector_encoder.modules.multi_vector_mask."
        "MultiVectorMask"
    ),
    "Normalize": "sentence_transformers.base.modules.normalize.Normalize",
}
# sentence_bert_config.json keys that leave the vectors as bert_tf computes
# them (checked for their values below); any other key is refused.
_TRANSFORMER_KEYS = {
    "transformer_task",
    "modality_config",
    "module_output_name",
    "processing_kwargs",
    "unpad_inputs",
    "query_length",
    "document_length",
    "query_expansion",
    "max_seq_length",
    "do_lower_case",
}
_TEXT_MODALITY = {
    "text": {"method": "forward", "method_output_name": "last_hidden_state"}
}


def is_multi_vector_dir(path):
    """Whether `path` is a directory sentence-transformers saved as a
    `MultiVectorEncoder`."""
    config = os.path.join(path, ST_CONFIG_FILE) if isinstance(path, str) else ""
    if not (config and os.path.exists(os.path.join(path, MODULES_FILE))):
        return False
    return os.path.exists(config) and _read_json(config).get("model_type") == MODEL_TYPE


@dataclasses.dataclass
class MultiVectorModel:
    """What a MultiVectorEncoder directory holds, in this project's terms.

    `checkpoint` loads the transformer's weights and the Dense's; the
    lengths are token budgets ([CLS] and [SEP] included, None: the
    model's longest input); `query_expansion` is sentence-transformers'
    dict (strategy, attend, token, length) or None.
    """

    path: str
    checkpoint: CheckpointFiles
    max_seq_length: int | None
    dense_units: int | None = None
    dense_activation: str | None = None
    dense_use_bias: bool = True
    normalize_before_dense: bool = False
    normalize: bool = False
    mask_module: bool = False
    skiplist_words: tuple = ()
    skiplist_tasks: tuple = ("document",)
    keep_only_token_ids: tuple | None = None
    query_length: int | None = None
    document_length: int | None = None
    query_expansion: dict | None = None
    prompts: dict = dataclasses.field(default_factory=dict)
    default_prompt_name: str | None = None
    similarity_fn_name: str | None = None
    truncate_dim: int | None = None


def _positive_int(value, where, key, allow_none=True):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UserInputError(f"{where}: {key}={value!r} is not a positive integer")
    return value


def _query_expansion(value, where):
    """sentence-transformers' query_expansion dict, checked, with its
    defaults (attend False, token None: the tokenizer's [MASK])."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UserInputError(f"{where}: query_expansion={value!r} is not a dict")
    unknown = sorted(set(value) - {"strategy", "attend", "token", "length"})
    if unknown:
        raise UserInputError(
            f"{where}: query_expansion key {unknown[0]!r} is not supported"
        )
    if value.get("strategy") not in EXPANSION_STRATEGIES:
        raise UserInputError(
            f"{where}: query_expansion strategy {value.get('strategy')!r} is not "
            f"supported; expected one of {EXPANSION_STRATEGIES}"
        )
    attend = value.get("attend", False)
    if not isinstance(attend, bool):
        raise UserInputError(
            f"{where}: query_expansion attend={attend!r} is not a bool"
        )
    token = value.get("token")
    if token is not None and not isinstance(token, str):
        raise UserInputError(f"{where}: query_expansion token={token!r} is not a str")
    length = _positive_int(value.get("length"), where, "query_expansion length", False)
    return {
        "strategy": value["strategy"],
        "attend": attend,
        "token": token,
        "length": length,
    }


def _read_transformer_config(config, where):
    """`(query_length, document_length, query_expansion)` of a Transformer
    module's sentence_bert_config.json; what bert_tf would compute otherwise
    is refused."""
    unknown = sorted(set(config) - _TRANSFORMER_KEYS)
    if unknown:
        raise UserInputError(f"{where}: key {unknown[0]!r} is not supported")
    if config.get("transformer_task", "feature-extraction") != "feature-extraction":
        raise UserInputError(
            f"{where}: transformer_task={config['transformer_task']!r} is not "
            "supported (bert_tf reads the encoder's last hidden state)"
        )
    if config.get("modality_config", _TEXT_MODALITY) != _TEXT_MODALITY:
        raise UserInputError(
            f"{where}: modality_config {config['modality_config']!r} is not supported "
            "(bert_tf encodes text with the encoder's last hidden state)"
        )
    if config.get("module_output_name", TOKEN_EMBEDDINGS) != TOKEN_EMBEDDINGS:
        raise UserInputError(
            f"{where}: module_output_name={config['module_output_name']!r} is not "
            f"supported (expected {TOKEN_EMBEDDINGS!r})"
        )
    if config.get("processing_kwargs"):
        raise UserInputError(
            f"{where}: processing_kwargs {config['processing_kwargs']!r} is not "
            "supported (bert_tf tokenizes with the model's own settings)"
        )
    query_length = _positive_int(config.get("query_length"), where, "query_length")
    expansion = _query_expansion(config.get("query_expansion"), where)
    if expansion and query_length is not None and query_length < expansion["length"]:
        raise UserInputError(
            f"{where}: query_length={query_length} is below query_expansion length "
            f"{expansion['length']}"
        )
    return (
        query_length,
        _positive_int(config.get("document_length"), where, "document_length"),
        expansion,
    )


def _io_names(config, where, module):
    """A token-level module's input and output names must both be the token
    embeddings (`module_input_name` missing: what MultiVectorEncoder gives
    a Dense that predates the names)."""
    source = config.get("module_input_name", TOKEN_EMBEDDINGS)
    target = config.get("module_output_name") or source
    if source != TOKEN_EMBEDDINGS or target != TOKEN_EMBEDDINGS:
        raise UserInputError(
            f"{where}: {module} from {source!r} to {target!r} is not supported "
            f"(bert_tf's {module} maps {TOKEN_EMBEDDINGS!r} to itself)"
        )


def _read_mask(directory, model):
    where = os.path.join(directory, "config.json")
    config = _read_json(where) if os.path.exists(where) else {}
    unknown = sorted(
        set(config) - {"skiplist_words", "skiplist_tasks", "keep_only_token_ids"}
    )
    if unknown:
        raise UserInputError(f"{where}: key {unknown[0]!r} is not supported")
    words = config.get("skiplist_words") or []
    tasks = config.get("skiplist_tasks")
    tasks = [tasks] if isinstance(tasks, str) else tasks
    keep = config.get("keep_only_token_ids")
    if not all(isinstance(w, str) for w in words):
        raise UserInputError(f"{where}: skiplist_words must be strings")
    if keep is not None and not all(
        isinstance(i, int) and not isinstance(i, bool) for i in keep
    ):
        raise UserInputError(f"{where}: keep_only_token_ids must be token ids")
    model.mask_module = True
    model.skiplist_words = tuple(words)
    model.skiplist_tasks = tuple(tasks) if tasks is not None else ("document",)
    model.keep_only_token_ids = tuple(keep) if keep is not None else None


def _read_token_pooling(directory, model):
    """A saved HierarchicalTokenPooling that merges no tokens (its only effect
    then: normalising, which must agree with the model's); one that
    clusters (Ward linkage) is refused."""
    where = os.path.join(directory, "config.json")
    config = _read_json(where) if os.path.exists(where) else {}
    if (
        config.get("pool_factor", 1.0) > 1
        or config.get("max_tokens") is not None
        or config.get("distance_threshold") is not None
    ):
        raise UserInputError(
            f"{where}: HierarchicalTokenPooling that merges tokens (pool_factor "
            f"{config.get('pool_factor', 1.0)}, max_tokens {config.get('max_tokens')}, "
            f"distance_threshold {config.get('distance_threshold')}) is not supported"
        )
    if config.get("normalize_embeddings") and not model.normalize:
        raise UserInputError(
            f"{where}: normalize_embeddings=true without a token Normalize before it "
            "is not supported"
        )


def _read_modules(path, model):
    """Walks modules.json; returns `(transformer_dir, dense)`."""
    modules_file = os.path.join(path, MODULES_FILE)
    transformer_dir = None
    dense = {}
    for module in sorted(_read_json(modules_file), key=lambda m: m.get("idx", 0)):
        kind = module.get("type", "").rsplit(".", 1)[-1]
        directory = os.path.join(path, module.get("path", ""))
        config_path = os.path.join(directory, "config.json")
        if transformer_dir is None and kind != "Transformer":
            raise UserInputError(
                f"{modules_file}: {kind} before the Transformer is not supported"
            )
        if kind == "Transformer":
            if transformer_dir is not None:
                raise UserInputError(
                    f"{modules_file}: a second Transformer is not supported"
                )
            transformer_dir = directory
        elif kind == "Dense":
            if dense:
                raise UserInputError(f"{modules_file}: a second Dense is not supported")
            _io_names(_read_json(config_path), config_path, "Dense")
            model.normalize_before_dense, model.normalize = model.normalize, False
            dense, model.dense_units, model.dense_activation, model.dense_use_bias = (
                _read_dense(directory)
            )
        elif kind == "Normalize":
            config = _read_json(config_path) if module.get("path") else {}
            if (
                config.get("module_input_name", "sentence_embedding")
                != TOKEN_EMBEDDINGS
            ):
                # A MultiVectorEncoder has no sentence embedding: this one
                # normalizes nothing there either.
                logging.warning(
                    "%s: a Normalize of no token embeddings (no effect)", modules_file
                )
                continue
            _io_names(config, config_path, "Normalize")
            model.normalize = True
        elif kind == "MultiVectorMask":
            if model.mask_module:
                raise UserInputError(
                    f"{modules_file}: a second MultiVectorMask is not supported"
                )
            _read_mask(directory, model)
        elif kind == "HierarchicalTokenPooling":
            _read_token_pooling(directory, model)
        else:
            raise UserInputError(
                f"{modules_file}: module type {module.get('type')!r} is not supported "
                "(bert_tf reproduces Transformer, one Dense, MultiVectorMask, Normalize "
                "and a HierarchicalTokenPooling that merges no tokens)"
            )
    if transformer_dir is None:
        raise UserInputError(f"{modules_file}: needs a Transformer module")
    return transformer_dir, dense


def read_multi_vector_encoder(path):
    """Reads the MultiVectorEncoder directory `path`.

    Raises:
        UserInputError: a module, key or value this project cannot reproduce
            (one line naming the file and the key), or a directory that is not
            a MultiVectorEncoder's.
        FileNotFoundError: a file that modules.json names is missing.
    """
    path = os.fspath(path)
    st_file = os.path.join(path, ST_CONFIG_FILE)
    if not os.path.exists(os.path.join(path, MODULES_FILE)) or not os.path.exists(
        st_file
    ):
        raise UserInputError(
            f"{path}: not a sentence-transformers MultiVectorEncoder directory (no "
            f"{MODULES_FILE} and {ST_CONFIG_FILE})"
        )
    st_config, prompts, default_prompt_name, truncate_dim = read_model_config(path)
    model_type = st_config.get("model_type")
    if model_type != MODEL_TYPE:
        raise UserInputError(
            f"{st_file}: model_type={model_type!r} is not supported (expected "
            f"{MODEL_TYPE!r}: load it with sentence_transformers.MultiVectorEncoder "
            "and save it again)"
        )
    for key in ("query_prefix", "document_prefix", "skiplist_words", "query_length"):
        if key in st_config:  # PyLate's own keys, which it applies as tokens
            raise UserInputError(
                f"{st_file}: key {key!r} (a PyLate save) is not supported: load it "
                "with sentence_transformers.MultiVectorEncoder and save it again"
            )
    similarity = st_config.get("similarity_fn_name")
    if similarity not in (None, *MULTI_VECTOR_SIMILARITIES):
        raise UserInputError(
            f"{st_file}: similarity_fn_name {similarity!r} is not supported; expected "
            f"one of {MULTI_VECTOR_SIMILARITIES}"
        )
    model = MultiVectorModel(path=path, checkpoint=None, max_seq_length=None)
    transformer_dir, dense = _read_modules(path, model)
    model.checkpoint, model.max_seq_length, sentence_config = read_transformer_module(
        path, transformer_dir, dense
    )
    model.query_length, model.document_length, model.query_expansion = (
        _read_transformer_config(
            sentence_config, os.path.join(transformer_dir, "sentence_bert_config.json")
        )
    )
    model.prompts = prompts
    model.default_prompt_name = default_prompt_name
    model.similarity_fn_name = similarity
    model.truncate_dim = truncate_dim
    return model


def save_multi_vector_encoder(model, directory):
    """Writes `model` (a `BertMultiVectorEncoder`) as a directory that
    `sentence_transformers.MultiVectorEncoder(directory)` loads (and
    `BertMultiVectorEncoder.from_checkpoint` reads back).

    Returns:
        `directory`.
    """
    directory = os.fspath(directory)
    write_transformer_module(
        model,
        directory,
        {
            "max_seq_length": model.preprocessor.seq_length,
            "query_length": model.query_length,
            "document_length": model.document_length,
            "query_expansion": model.query_expansion,
        },
    )
    write_json(
        os.path.join(directory, ST_CONFIG_FILE),
        {
            "model_type": MODEL_TYPE,
            "similarity_fn_name": model.similarity_fn_name,
            "prompts": dict(model.prompts),
            "default_prompt_name": model.default_prompt_name,
            **({"truncate_dim": model.truncate_dim} if model.truncate_dim else {}),
        },
    )
    modules = [(_TYPES["Transformer"], "")]

    def add_normalize():
        folder = f"{len(modules)}_Normalize"
        os.makedirs(os.path.join(directory, folder), exist_ok=True)
        write_json(
            os.path.join(directory, folder, "config.json"),
            {
                "module_input_name": TOKEN_EMBEDDINGS,
                "module_output_name": TOKEN_EMBEDDINGS,
            },
        )
        modules.append((_TYPES["Normalize"], folder))

    if model.normalize_before_dense:
        add_normalize()
    if model.dense is not None:
        folder = f"{len(modules)}_Dense"
        write_dense_module(
            os.path.join(directory, folder),
            model.dense,
            model.dense_use_bias,
            model.dense_activation,
            io_name=TOKEN_EMBEDDINGS,
        )
        modules.append((_TYPES["Dense"], folder))
    if model.mask_module:
        folder = f"{len(modules)}_MultiVectorMask"
        os.makedirs(os.path.join(directory, folder), exist_ok=True)
        keep = model.keep_only_token_ids
        write_json(
            os.path.join(directory, folder, "config.json"),
            {
                "skiplist_words": list(model.skiplist_words),
                "skiplist_tasks": list(model.skiplist_tasks),
                "keep_only_token_ids": list(keep) if keep is not None else None,
            },
        )
        modules.append((_TYPES["MultiVectorMask"], folder))
    if model.normalize:
        add_normalize()
    write_modules_json(directory, modules)
    return directory
