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
