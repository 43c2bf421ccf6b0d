"""The one map between model variables and checkpoint names.

Every model lists its variables under the original TF1 names
(`bert/encoder/layer_3/attention/self/query/kernel`, `cls/squad/output_weights`,
...). The layers store each tensor in the original layout, so a TF1 checkpoint
maps one to one. Hugging Face names and layouts are derived from the TF1 name
by `hf_names`, so the TF1 reader, the TF1 writer and the HF reader share this
single table.
"""

import re

# The original has no tagging model; this scope holds our token classifier.
TOKEN_CLASSIFIER_SCOPE = "cls/token_classifier"
# The tagger's CRF transitions (`BertTokenClassifier(crf=True)`).
CRF_SCOPE = "cls/crf"

# Checkpoint entries that are not model weights and are skipped without a
# word: optimizer slots and step counters (original and Keras), and HF's
# position-id buffer.
_IGNORED_PATTERNS = (
    re.compile(r"(^|/)adam_[mv]$"),
    re.compile(r"(^|/)global_step$"),
    re.compile(r"(^|\.)position_ids$"),
)


def is_ignored(name):
    return any(p.search(name) for p in _IGNORED_PATTERNS)


def _dense(prefix, dense):
    return {f"{prefix}/kernel": dense.kernel, f"{prefix}/bias": dense.bias}


def _layer_norm(prefix, layer_norm):
    return {f"{prefix}/gamma": layer_norm.gamma, f"{prefix}/beta": layer_norm.beta}


def encoder_variables(encoder, scope="bert"):
    """{original name: variable} for a `BertEncoder`."""
    embeddings = encoder.embeddings
    names = {
        f"{scope}/embeddings/word_embeddings": embeddings.word_embeddings,
        f"{scope}/embeddings/token_type_embeddings": embeddings.token_type_embeddings,
        f"{scope}/embeddings/position_embeddings": embeddings.position_embeddings,
        **_layer_norm(f"{scope}/embeddings/LayerNorm", embeddings.layer_norm),
    }
    for i, block in enumerate(encoder.encoder_layers):
        prefix = f"{scope}/encoder/layer_{i}"
        names.update(_dense(f"{prefix}/attention/self/query", block.query))
        names.update(_dense(f"{prefix}/attention/self/key", block.key))
        names.update(_dense(f"{prefix}/attention/self/value", block.value))
        names.update(_dense(f"{prefix}/attention/output/dense", block.attention_output))
        names.update(
            _layer_norm(
                f"{prefix}/attention/output/LayerNorm", block.attention_layer_norm
            )
        )
        names.update(_dense(f"{prefix}/intermediate/dense", block.intermediate))
        names.update(_dense(f"{prefix}/output/dense", block.output_dense))
        names.update(_layer_norm(f"{prefix}/output/LayerNorm", block.output_layer_norm))
    names.update(_dense(f"{scope}/pooler/dense", encoder.pooler))
    return names


def masked_lm_variables(head):
    """{original name: variable} for a `MaskedLMHead` (decoder is tied)."""
    return {
        **_dense("cls/predictions/transform/dense", head.transform),
        **_layer_norm("cls/predictions/transform/LayerNorm", head.layer_norm),
        "cls/predictions/output_bias": head.output_bias,
    }


def logits_head_variables(head, scope):
    """{original name: variable} for a `LogitsHead` under `scope` ("" = root)."""
    prefix = f"{scope}/" if scope else ""
    return {
        f"{prefix}output_weights": head.output_weights,
        f"{prefix}output_bias": head.output_bias,
    }


def crf_variables(crf, scope=CRF_SCOPE):
    """{original name: variable} for a `CRF`: `<scope>/transitions` [from, to],
    `<scope>/start_transitions`, `<scope>/end_transitions`."""
    return {
        f"{scope}/transitions": crf.transitions,
        f"{scope}/start_transitions": crf.start_transitions,
        f"{scope}/end_transitions": crf.end_transitions,
    }


# Heads whose HF names do not follow from the TF1 names by the generic rule.
_HF_HEADS = {
    "cls/predictions/output_bias": "cls.predictions.bias",
    "cls/seq_relationship/output_weights": "cls.seq_relationship.weight",
    "cls/seq_relationship/output_bias": "cls.seq_relationship.bias",
    "output_weights": "classifier.weight",
    "output_bias": "classifier.bias",
    "cls/squad/output_weights": "qa_outputs.weight",
    "cls/squad/output_bias": "qa_outputs.bias",
    f"{TOKEN_CLASSIFIER_SCOPE}/output_weights": "classifier.weight",
    f"{TOKEN_CLASSIFIER_SCOPE}/output_bias": "classifier.bias",
    # A `BertForTokenClassification` with a pytorch-crf `CRF` as `self.crf`.
    f"{CRF_SCOPE}/transitions": "crf.transitions",
    f"{CRF_SCOPE}/start_transitions": "crf.start_transitions",
    f"{CRF_SCOPE}/end_transitions": "crf.end_transitions",
}

# HF entries that repeat a tensor mapped elsewhere (the tied MLM decoder).
HF_TIED_DUPLICATES = ("cls.predictions.decoder.weight", "cls.predictions.decoder.bias")


def hf_names(tf1_name):
    """HF names a TF1 variable may be stored under, and whether to transpose.

    Returns `(candidates, transpose)`. Candidates cover checkpoints saved from
    `BertModel` (no "bert." prefix) and from the task models ("bert." prefix),
    and the old `LayerNorm.gamma/beta` spelling. HF stores dense kernels as
    [out, in], hence the transpose; the [num_outputs, hidden] heads already
    match the original layout.
    """
    if tf1_name in _HF_HEADS:
        return [_HF_HEADS[tf1_name]], False
    name = tf1_name
    transpose = False
    if name.endswith("/kernel"):
        name = name[: -len("kernel")] + "weight"
        transpose = True
    elif name.endswith("_embeddings"):
        name += "/weight"
    name = re.sub(r"/layer_(\d+)/", r"/layer/\1/", name)
    name = name.replace("/", ".")
    candidates = [name]
    if name.endswith("LayerNorm.gamma"):
        candidates = [name[: -len("gamma")] + "weight", name]
    elif name.endswith("LayerNorm.beta"):
        candidates = [name[: -len("beta")] + "bias", name]
    if name.startswith("bert."):
        candidates += [c[len("bert.") :] for c in candidates]
    return candidates, transpose


# --- Encoder names in other libraries' layouts -------------------------------
#
# One row per encoder sublayer: the original (TF1) scope, the object path in a
# TF Model Garden `BertEncoder` (TF2 object checkpoint; both the legacy
# functional `networks.BertEncoder`, whose objects are numbered
# `layer_with_weights-N`, and `networks.BertEncoderV2`), and the weights path
# in a KerasHub `BertBackbone`'s `model.weights.h5` (Keras 3 names layers by
# class, numbered `_1`, `_2`, ... in graph order). Model Garden keeps the
# original's leaf names (kernel, bias, gamma, beta); Keras 3 files number
# them (`vars/0` kernel/gamma/table, `vars/1` bias/beta). Attention kernels are
# [hidden, heads, head_size] (output: [heads, head_size, hidden]) in both:
# the same numbers as the original's [hidden, hidden], reshaped.

# (original, Model Garden V2, Model Garden legacy index, KerasHub layer)
_EMBEDDING_COLUMNS = (
    ("embeddings/word_embeddings", "_embedding_layer", 0, "reversible_embedding"),
    (
        "embeddings/position_embeddings",
        "_position_embedding_layer",
        1,
        "position_embedding",
    ),
    ("embeddings/token_type_embeddings", "_type_embedding_layer", 2, "embedding"),
    ("embeddings/LayerNorm", "_embedding_norm_layer", 3, "layer_normalization"),
    ("pooler/dense", "_pooler_layer", None, "dense"),
)
# (original, Model Garden, KerasHub) inside one transformer block.
_BLOCK_COLUMNS = (
    (
        "attention/self/query",
        "_attention_layer/_query_dense",
        "_self_attention_layer/query_dense",
    ),
    (
        "attention/self/key",
        "_attention_layer/_key_dense",
        "_self_attention_layer/key_dense",
    ),
    (
        "attention/self/value",
        "_attention_layer/_value_dense",
        "_self_attention_layer/value_dense",
    ),
    (
        "attention/output/dense",
        "_attention_layer/_output_dense",
        "_self_attention_layer/output_dense",
    ),
    (
        "attention/output/LayerNorm",
        "_attention_layer_norm",
        "_self_attention_layer_norm",
    ),
    ("intermediate/dense", "_intermediate_dense", "_feedforward_intermediate_dense"),
    ("output/dense", "_output_dense", "_feedforward_output_dense"),
    ("output/LayerNorm", "_output_layer_norm", "_feedforward_layer_norm"),
)
_KERAS_VAR_INDEX = {"kernel": 0, "gamma": 0, "bias": 1, "beta": 1}
_LEGACY_BLOCKS_START = 4  # layer_with_weights-4 is the first block

# A TF2 object checkpoint stores each variable under this suffix.
OBJECT_VALUE_SUFFIX = "/.ATTRIBUTES/VARIABLE_VALUE"
# Where a Model Garden encoder's first query kernel sits, per layout.
MODEL_GARDEN_PROBES = {
    "v2": "_transformer_layers/0/_attention_layer/_query_dense/kernel",
    "legacy": f"layer_with_weights-{_LEGACY_BLOCKS_START}/_attention_layer/_query_dense/kernel",
}

_ENCODER_NAME = re.compile(r"^bert/(?:encoder/layer_(\d+)/)?(.+)/([a-z_]+)$")


def _split_encoder_name(tf1_name):
    """(block index or None, sublayer scope, leaf) of an original encoder name."""
    match = _ENCODER_NAME.match(tf1_name)
    if not match:
        return None
    block, scope, leaf = match.groups()
    if block is None and scope == "embeddings":  # the three tables
        scope, leaf = f"embeddings/{leaf}", "embeddings"
    return (None if block is None else int(block)), scope, leaf


def model_garden_name(tf1_name, layout, num_layers, prefix):
    """The object-checkpoint key of an original encoder name, or None.

    `layout` is "v2" or "legacy" (see MODEL_GARDEN_PROBES), `prefix` the
    encoder's object path (e.g. "encoder/").
    """
    parts = _split_encoder_name(tf1_name)
    if parts is None:
        return None
    block, scope, leaf = parts
    if block is not None:
        inner = dict((row[0], row[1]) for row in _BLOCK_COLUMNS).get(scope)
        if inner is None:
            return None
        layer = (
            f"_transformer_layers/{block}"
            if layout == "v2"
            else f"layer_with_weights-{_LEGACY_BLOCKS_START + block}"
        )
        return f"{prefix}{layer}/{inner}/{leaf}{OBJECT_VALUE_SUFFIX}"
    for original, v2, legacy_index, _ in _EMBEDDING_COLUMNS:
        if scope == original:
            if layout == "v2":
                layer = v2
            else:
                if legacy_index is None:  # the pooler follows the blocks
                    legacy_index = _LEGACY_BLOCKS_START + num_layers
                layer = f"layer_with_weights-{legacy_index}"
            return f"{prefix}{layer}/{leaf}{OBJECT_VALUE_SUFFIX}"
    return None


def keras_hub_name(tf1_name):
    """The `model.weights.h5` path of an original encoder name, or None."""
    parts = _split_encoder_name(tf1_name)
    if parts is None:
        return None
    block, scope, leaf = parts
    index = _KERAS_VAR_INDEX.get(leaf, 0)
    if block is not None:
        inner = dict((row[0], row[2]) for row in _BLOCK_COLUMNS).get(scope)
        if inner is None:
            return None
        layer = "transformer_encoder" + (f"_{block}" if block else "")
        return f"layers/{layer}/{inner}/vars/{index}"
    for original, _, _, keras_hub in _EMBEDDING_COLUMNS:
        if scope == original:
            return f"layers/{keras_hub}/vars/{index}"
    return None


# A KerasHub `BertTextClassifier` preset's head (`task.weights.h5`: dropout on
# the pooled output, then a Dense with a [hidden, classes] kernel), as the
# original classifier's root-scope names: (path, transpose).
KERAS_HUB_CLASSIFIER_HEAD = {
    "output_weights": ("layers/dense/vars/0", True),
    "output_bias": ("layers/dense/vars/1", False),
}


def is_tf1_encoder_name(name):
    return name.startswith("bert/")


def is_hf_encoder_name(name):
    if name.startswith("bert."):
        name = name[len("bert.") :]
    return name.startswith(("embeddings.", "encoder.", "pooler."))
