"""Reading and writing sentence-transformers `SparseEncoder` (SPLADE) directories.

What is read: a masked-LM `Transformer` (`MLMTransformer`, or sentence-
transformers 6's `Transformer` with `transformer_task="fill-mask"`) followed
by `SpladePooling` (max or sum, relu or log1p_relu); or a `Router` whose
routes are that stack and a `SparseStaticEmbedding` (inference-free SPLADE:
queries get static per-token weights, documents the network). Anything else
that would change the vectors (a `SparseAutoEncoder`/CSR head, an unknown
module or key) is a `UserInputError` naming the file and the key, never
skipped.
"""

import ast
import dataclasses
import os

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

from bert_tf.checkpoints.sentence_transformers_checkpoint import MODULES_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import SENTENCE_CONFIG_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import SIMILARITY_FUNCTIONS
from bert_tf.checkpoints.sentence_transformers_checkpoint import ST_CONFIG_FILE
from bert_tf.checkpoints.sentence_transformers_checkpoint import _read_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import read_model_config
from bert_tf.checkpoints.sentence_transformers_checkpoint import read_transformer_module
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_modules_json
from bert_tf.checkpoints.sentence_transformers_checkpoint import write_tokenizer_files
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    write_transformer_module,
)
from bert_tf.errors import UserInputError
from bert_tf.layers.splade_pooling import SPLADE_ACTIVATIONS
from bert_tf.layers.splade_pooling import SPLADE_POOLING_STRATEGIES
from bert_tf.text.tokenizer_json import read_tokenizer_files

ROUTER_CONFIG_FILE = "router_config.json"
# The routes a model encodes with: `encode` ("default": no task),
# `encode_query`, `encode_document`; each resolves to "splade" (the network),
# "static" (the SparseStaticEmbedding) or None (sentence-transformers
# raises: no route).
TASKS = ("default", "query", "document")
SPLADE_ROUTE = "splade"
STATIC_ROUTE = "static"
# sentence_bert_config.json keys of a masked-LM Transformer that change no
# vector here (unpad_inputs only packs a batch differently).
_TRANSFORMER_KEYS = {
    "transformer_task",
    "modality_config",
    "module_output_name",
    "unpad_inputs",
    "max_seq_length",
    "do_lower_case",
}
# Loading arguments sentence-transformers keeps there; only empty ones are
# read (a dtype or a tokenizer length in them would change the vectors).
_KWARGS_KEYS = (
    "model_args",
    "tokenizer_args",
    "config_args",
    "model_kwargs",
    "processor_kwargs",
    "config_kwargs",
    "processing_kwargs",
)
# Multi-vector (ColBERT) keys: their defaults are None.
_MULTI_VECTOR_KEYS = ("query_length", "document_length", "query_expansion")
_MLM_OUTPUT = {"text": {"method": "forward", "method_output_name": "logits"}}
# SpladePooling's config keys (`word_embedding_dimension` is the 5.x name;
# `chunk_size` only bounds sentence-transformers' memory, not its result).
_POOLING_KEYS = {
    "pooling_strategy",
    "activation_function",
    "embedding_dimension",
    "word_embedding_dimension",
    "chunk_size",
}
# What `save` writes: sentence-transformers 5.x's class paths, which 6.x
# still reads (its deprecated-import table maps them).
_SAVED_TYPES = {
    "MLMTransformer": "sentence_transformers.sparse_encoder.models.MLMTransformer",
    "SpladePooling": "sentence_transformers.sparse_encoder.models.SpladePooling",
    "SparseStaticEmbedding": (
        "sentence_transformers.sparse_encoder.models.SparseStaticEmbedding"
    ),
    "Router": "sentence_transformers.models.Router",
}


@dataclasses.dataclass
class StaticEmbeddingModule:
    """A `SparseStaticEmbedding`: its weights [vocab], whether they are
    frozen, and its own tokenizer (`TokenizerFiles`)."""

    directory: str
    weight: np.ndarray
    frozen: bool
    tokenizer: object


@dataclasses.dataclass
class SparseEncoderModel:
    """What a SparseEncoder directory holds, in this project's terms.

    `checkpoint` loads the encoder and the masked-LM head; `routes` maps each
    of `TASKS` to "splade", "static" or None; `static` is the
    `StaticEmbeddingModule` when a route uses it.
    """

    path: str
    checkpoint: object
    max_seq_length: int | None
    do_lower_case: bool | None
    pooling_strategy: str
    activation_function: str
    prompts: dict
    default_prompt_name: str | None
    similarity_fn_name: str | None
    max_active_dims: int | None
    routes: dict
    static: StaticEmbeddingModule | None = None


def _class_name(module_type):
    return (module_type or "").rsplit(".", 1)[-1]


def _refuse_unknown(config, known, where):
    unknown = sorted(set(config) - set(known))
    if unknown:
        raise UserInputError(
            f"{where}: key {unknown[0]!r} is not supported (bert_tf reads "
            f"{sorted(known)})"
        )


def _check_transformer(kind, transformer_dir, sentence_config):
    """Refuses a Transformer module whose output is not the masked-LM logits
    SpladePooling reads, or whose settings bert_tf does not reproduce."""
    where = os.path.join(transformer_dir, SENTENCE_CONFIG_FILE)
    config = dict(sentence_config)
    default_task = "fill-mask" if kind == "MLMTransformer" else "feature-extraction"
    task = config.get("transformer_task", default_task)
    if task != "fill-mask":
        raise UserInputError(
            f"{where}: transformer_task {task!r} is not supported before "
            "SpladePooling (it reads the masked-LM logits: 'fill-mask')"
        )
    if config.get("modality_config", _MLM_OUTPUT) != _MLM_OUTPUT:
        raise UserInputError(
            f"{where}: modality_config {config['modality_config']!r} is not "
            f"supported (bert_tf reads {_MLM_OUTPUT!r})"
        )
    if config.get("module_output_name", "token_embeddings") != "token_embeddings":
        raise UserInputError(
            f"{where}: module_output_name {config['module_output_name']!r} is not "
            "supported (SpladePooling reads 'token_embeddings')"
        )
    for key in _KWARGS_KEYS:
        if config.pop(key, None):
            raise UserInputError(
                f"{where}: key {key!r} is not supported when set (bert_tf reads "
                "no loading or processing arguments)"
            )
    for key in _MULTI_VECTOR_KEYS:
        if config.pop(key, None) is not None:
            raise UserInputError(
                f"{where}: key {key!r} is not supported in a SparseEncoder "
                "(a multi-vector setting)"
            )
    _refuse_unknown(config, _TRANSFORMER_KEYS, where)
    hf_config_path = os.path.join(transformer_dir, "config.json")
    hf_config = _read_json(hf_config_path)
    if hf_config.get("tie_word_embeddings", True) is False:
        raise UserInputError(
            f"{hf_config_path}: tie_word_embeddings false is not supported (bert_tf's "
            "masked-LM head decodes with the word embeddings)"
        )


def _read_pooling(directory, where):
    config_path = os.path.join(directory, "config.json")
    config = _read_json(config_path) if os.path.exists(config_path) else {}
    _refuse_unknown(config, _POOLING_KEYS, config_path)
    strategy = config.get("pooling_strategy", "max")
    if strategy not in SPLADE_POOLING_STRATEGIES:
        raise UserInputError(
            f"{config_path}: pooling_strategy {strategy!r} is not supported; "
            f"expected one of {SPLADE_POOLING_STRATEGIES}"
        )
    activation = config.get("activation_function", "relu")
    if activation not in SPLADE_ACTIVATIONS:
        raise UserInputError(
            f"{config_path}: activation_function {activation!r} is not supported; "
            f"expected one of {SPLADE_ACTIVATIONS}"
        )
    width = config.get("embedding_dimension", config.get("word_embedding_dimension"))
    return strategy, activation, width, config_path


def _read_splade_stack(modules, where):
    """`(transformer_dir, kind, pooling)` of [(class name, directory)]: a
    masked-LM Transformer then SpladePooling."""
    kinds = [kind for kind, _ in modules]
    if len(modules) != 2 or kinds[1] != "SpladePooling":
        raise _unsupported_modules(kinds, where)
    kind, transformer_dir = modules[0]
    if kind not in ("MLMTransformer", "Transformer"):
        raise _unsupported_modules(kinds, where)
    return transformer_dir, kind, _read_pooling(modules[1][1], where)


def _unsupported_modules(kinds, where):
    if "SparseAutoEncoder" in kinds:
        return UserInputError(
            f"{where}: module type 'SparseAutoEncoder' (CSR) is not supported "
            "(bert_tf reproduces SPLADE: a masked-LM Transformer + SpladePooling)"
        )
    return UserInputError(
        f"{where}: modules {kinds} are not supported (bert_tf reproduces "
        "MLMTransformer/Transformer(fill-mask) + SpladePooling, optionally in a "
        "Router with a SparseStaticEmbedding route)"
    )


def _read_static(directory):
    config_path = os.path.join(directory, "config.json")
    config = _read_json(config_path) if os.path.exists(config_path) else {}
    if "path" in config:
        raise UserInputError(
            f"{config_path}: key 'path' (weights from an idf JSON file) is not "
            "supported; save the model with sentence-transformers first (it "
            "writes model.safetensors)"
        )
    _refuse_unknown(config, {"frozen"}, config_path)
    weights_file = os.path.join(directory, "model.safetensors")
    if not os.path.exists(weights_file):
        raise FileNotFoundError(
            f"{directory}: no model.safetensors (the SparseStaticEmbedding weights)"
        )
    with safe_open(weights_file, framework="np") as f:
        if "weight" not in f.keys():
            raise UserInputError(f"{weights_file}: no 'weight' tensor")
        weight = np.asarray(f.get_tensor("weight"), np.float32)
    return StaticEmbeddingModule(
        directory=directory,
        weight=weight,
        frozen=bool(config.get("frozen", False)),
        tokenizer=read_tokenizer_files(directory),
    )


def _resolve_route(task, routes, mappings, default_route):
    """sentence-transformers' Router rule for text input: the (task,
    modality) mappings from exact to catch-all, the route named as the task,
    the route named "text", else the default route (None for a task: it
    raises there)."""
    for key in ((task, "text"), (task, None), (None, "text"), (None, None)):
        if key in mappings:
            return mappings[key]
    if task and task in routes:
        return task
    if "text" in routes:
        return "text"
    return None if task is not None else default_route


def _read_router(path, directory, where):
    config_path = os.path.join(directory, ROUTER_CONFIG_FILE)
    if not os.path.exists(config_path):
        config_path = os.path.join(directory, "config.json")
    config = _read_json(config_path)
    _refuse_unknown(config, {"types", "structure", "parameters"}, config_path)
    parameters = dict(config.get("parameters") or {})
    _refuse_unknown(
        parameters, {"default_route", "allow_empty_key", "route_mappings"}, config_path
    )
    types = config.get("types") or {}
    structure = config.get("structure") or {}
    if not structure:
        raise UserInputError(f"{config_path}: key 'structure' lists no routes")
    splade_ids, static_ids = set(), set()
    kinds = {}
    for route, module_ids in structure.items():
        modules = []
        for module_id in module_ids:
            if module_id not in types or ".." in module_id.split("/"):
                raise UserInputError(
                    f"{config_path}: route {route!r} names module {module_id!r}, "
                    "which 'types' does not list"
                )
            modules.append(
                (_class_name(types[module_id]), os.path.join(directory, module_id))
            )
        if [kind for kind, _ in modules] == ["SparseStaticEmbedding"]:
            static_ids.add(module_ids[0])
            kinds[route] = STATIC_ROUTE
        else:
            _read_splade_stack(modules, f"{config_path}: route {route!r}")
            splade_ids.add(tuple(module_ids))
            kinds[route] = SPLADE_ROUTE
    if len(splade_ids) > 1 or len(static_ids) > 1:
        raise UserInputError(
            f"{config_path}: routes with different modules of one kind are not "
            "supported (bert_tf reproduces one SPLADE stack and one "
            "SparseStaticEmbedding)"
        )
    mappings = {}
    for key, route in (parameters.get("route_mappings") or {}).items():
        try:
            task, modality = ast.literal_eval(key) if isinstance(key, str) else key
        except (ValueError, SyntaxError, TypeError) as e:
            raise UserInputError(
                f"{config_path}: route_mappings key {key!r} is not a (task, "
                "modality) pair"
            ) from e
        if route not in structure:
            raise UserInputError(
                f"{config_path}: route_mappings maps {key!r} to {route!r}, not one "
                f"of the routes {sorted(structure)}"
            )
        mappings[(task, modality)] = route
    default_route = parameters.get("default_route")
    if default_route is None and parameters.get("allow_empty_key", True):
        default_route = next(iter(structure))
    routes = {}
    for task in TASKS:
        route = _resolve_route(
            None if task == "default" else task, structure, mappings, default_route
        )
        routes[task] = kinds.get(route)
    splade_route = next((r for r, k in kinds.items() if k == SPLADE_ROUTE), None)
    if splade_route is None:
        raise UserInputError(
            f"{config_path}: no route has the masked-LM Transformer + SpladePooling "
            "(bert_tf needs one)"
        )
    stack = [
        (_class_name(types[i]), os.path.join(directory, i))
        for i in structure[splade_route]
    ]
    static = None
    if static_ids:
        static = _read_static(os.path.join(directory, next(iter(static_ids))))
    return stack, routes, static


def is_sparse_encoder_dir(path):
    """Whether `path` is a sentence-transformers directory of a SparseEncoder
    (its config_sentence_transformers.json says so)."""
    config = os.path.join(os.fspath(path), ST_CONFIG_FILE)
    if not os.path.exists(os.path.join(os.fspath(path), MODULES_FILE)):
        return False
    return os.path.exists(config) and (
        _read_json(config).get("model_type") == "SparseEncoder"
    )


def read_sparse_encoder(path):
    """Reads the SparseEncoder directory `path`.

    Raises:
        UserInputError: a module, route or key this project cannot reproduce
            (one line naming the file and the key).
        FileNotFoundError: a file that the configs name is missing.
    """
    path = os.fspath(path)
    modules_file = os.path.join(path, MODULES_FILE)
    modules = sorted(_read_json(modules_file), key=lambda m: m.get("idx", 0))
    listed = [
        (_class_name(m.get("type")), os.path.join(path, m.get("path", "")))
        for m in modules
    ]
    static = None
    if [kind for kind, _ in listed] == ["Router"]:
        stack, routes, static = _read_router(path, listed[0][1], modules_file)
    else:
        stack = listed
        routes = dict.fromkeys(TASKS, SPLADE_ROUTE)
    transformer_dir, kind, pooling = _read_splade_stack(stack, modules_file)
    strategy, activation, width, pooling_file = pooling
    checkpoint, max_seq_length, sentence_config = read_transformer_module(
        path, transformer_dir
    )
    _check_transformer(kind, transformer_dir, sentence_config)
    config, prompts, default_prompt_name, truncate_dim = read_model_config(path)
    config_file = os.path.join(path, ST_CONFIG_FILE)
    similarity = config.get("similarity_fn_name")
    if similarity not in (None, *SIMILARITY_FUNCTIONS):
        raise UserInputError(
            f"{config_file}: similarity_fn_name {similarity!r} is not supported; "
            f"expected one of {SIMILARITY_FUNCTIONS}"
        )
    if truncate_dim is not None:
        raise UserInputError(
            f"{config_file}: truncate_dim is not supported in a SparseEncoder "
            "(sentence-transformers' sparse models keep the whole vocabulary)"
        )
    max_active_dims = config.get("max_active_dims")
    if max_active_dims is not None and (
        isinstance(max_active_dims, bool)
        or not isinstance(max_active_dims, int)
        or max_active_dims < 1
    ):
        raise UserInputError(
            f"{config_file}: max_active_dims {max_active_dims!r} is not a positive "
            "integer"
        )
    model = SparseEncoderModel(
        path=path,
        checkpoint=checkpoint,
        max_seq_length=max_seq_length,
        do_lower_case=checkpoint.do_lower_case,
        pooling_strategy=strategy,
        activation_function=activation,
        prompts=prompts,
        default_prompt_name=default_prompt_name,
        similarity_fn_name=similarity,
        max_active_dims=max_active_dims,
        routes=routes,
        static=static,
    )
    vocab_size = checkpoint.load_config().vocab_size
    if width is not None and width != vocab_size:
        raise UserInputError(
            f"{pooling_file}: embedding_dimension {width} differs from the "
            f"model's vocab_size {vocab_size}"
        )
    if static is not None and static.weight.shape != (vocab_size,):
        raise UserInputError(
            f"{static.directory}/model.safetensors: weight has shape "
            f"{static.weight.shape}, not the model's vocabulary ({vocab_size},)"
        )
    return model


def save_sparse_encoder(model, directory):
    """Writes `model` (a `BertSparseEncoder`) as a SparseEncoder directory that
    sentence-transformers' `SparseEncoder(directory)` loads (and
    `BertSparseEncoder.from_checkpoint` reads back).

    Returns:
        `directory`.
    """
    directory = os.fspath(directory)
    os.makedirs(directory, exist_ok=True)
    splade = [("MLMTransformer", ""), ("SpladePooling", "1_SpladePooling")]
    static_dir = None
    if model.static_embedding is not None:
        # Router folders are named <route>_<index>_<class> as
        # sentence-transformers names them.
        splade = [
            ("MLMTransformer", "document_0_MLMTransformer"),
            ("SpladePooling", "document_1_SpladePooling"),
        ]
        static_dir = "query_0_SparseStaticEmbedding"
    # BertForMaskedLM has no pooler (transformers would call its weights
    # unexpected).
    variables = {
        name: variable
        for name, variable in model.checkpoint_variables().items()
        if not name.startswith("bert/pooler/")
    }
    write_transformer_module(
        model,
        os.path.join(directory, splade[0][1]),
        {"max_seq_length": model.preprocessor.seq_length},
        variables,
        architecture="BertForMaskedLM",
    )
    pooling_dir = os.path.join(directory, splade[1][1])
    os.makedirs(pooling_dir, exist_ok=True)
    write_json(
        os.path.join(pooling_dir, "config.json"),
        {
            "pooling_strategy": model.pooling_strategy,
            "activation_function": model.activation_function,
            "word_embedding_dimension": model.vocab_size,
        },
    )
    write_json(
        os.path.join(directory, ST_CONFIG_FILE),
        {
            "model_type": "SparseEncoder",
            "similarity_fn_name": model.similarity_fn_name or "dot",
            "prompts": dict(model.prompts),
            "default_prompt_name": model.default_prompt_name,
            **(
                {"max_active_dims": model.max_active_dims}
                if model.max_active_dims
                else {}
            ),
        },
    )
    if static_dir is None:
        write_modules_json(directory, [(_SAVED_TYPES[k], p) for k, p in splade])
        return directory
    _write_static(model, os.path.join(directory, static_dir))
    route_of = {SPLADE_ROUTE: "document", STATIC_ROUTE: "query"}
    structure = {
        "query": [static_dir],
        "document": [path for _, path in splade],
    }
    mappings = {
        str((task, None)): route_of[route]
        for task, route in model.routes.items()
        if task != "default" and route is not None and route_of[route] != task
    }
    write_json(
        os.path.join(directory, ROUTER_CONFIG_FILE),
        {
            "types": {
                static_dir: _SAVED_TYPES["SparseStaticEmbedding"],
                **{path: _SAVED_TYPES[kind] for kind, path in splade},
            },
            "structure": structure,
            "parameters": {
                "default_route": route_of[model.routes["default"] or SPLADE_ROUTE],
                "allow_empty_key": True,
                "route_mappings": mappings,
            },
        },
    )
    write_modules_json(directory, [(_SAVED_TYPES["Router"], "")])
    return directory


def _write_static(model, directory):
    layer = model.static_embedding
    os.makedirs(directory, exist_ok=True)
    weight = np.asarray(layer.weight.numpy(), np.float32)
    save_file({"weight": weight}, os.path.join(directory, "model.safetensors"))
    write_json(os.path.join(directory, "config.json"), {"frozen": not layer.trainable})
    # No max_length: no truncation, as a tokenizer without model_max_length
    # (transformers' "very large" 1e30) does.
    write_tokenizer_files(
        directory,
        model.query_preprocessor or model.preprocessor,
        layer.max_length or int(1e30),
    )
