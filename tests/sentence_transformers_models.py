"""Models that sentence-transformers itself assembles from the shipped MiniLM
and saves, for the tests that read them: SPLADE (SparseEncoder) and ColBERT
(MultiVectorEncoder) directories. The heads start random: these measure
parity and plumbing, not quality. Callers set HF_HUB_OFFLINE=1."""

import string

# Two ColBERT configurations between them cover every module setting read:
# "projected": Dense 384 -> 64, a punctuation skiplist on documents, "fixed"
# [MASK] expansion to 16 tokens (not attended), query/document lengths and
# prompts, MaxSim. "plain": no Dense, the skiplist on both sides, "min"
# expansion to 12 tokens (attended), keep_only_token_ids absent, MeanMaxSim,
# truncate_dim.
COLBERT_CONFIGS = {
    "projected": {
        "transformer": {
            "query_length": 24,
            "document_length": 48,
            "query_expansion": {"strategy": "fixed", "length": 16},
        },
        "dense": 64,
        "mask": {"skiplist_words": list(string.punctuation)},
        "model": {"prompts": {"query": "query: ", "document": "passage: "}},
    },
    "plain": {
        "transformer": {
            "query_length": 20,
            "document_length": 40,
            "query_expansion": {"strategy": "min", "length": 12, "attend": True},
        },
        "dense": None,
        "mask": {
            "skiplist_words": list(string.punctuation),
            "skiplist_tasks": ["query", "document"],
        },
        "model": {"similarity_fn_name": "meanmaxsim", "truncate_dim": 256},
    },
}


def save_max_splade(minilm_dir, directory, seed=0):
    """MLMTransformer + SpladePooling("max") on MiniLM, saved to directory.
    MiniLM has no masked-LM head, so sentence-transformers draws one."""
    import torch
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    torch.manual_seed(seed)
    mlm = MLMTransformer(minilm_dir)
    SparseEncoder(modules=[mlm, SpladePooling("max")]).save(str(directory))
    return str(directory)


def save_colbert(minilm_dir, directory, spec=None):
    """A MultiVectorEncoder of COLBERT_CONFIGS[...] (default "projected")."""
    import torch
    from sentence_transformers import MultiVectorEncoder
    from sentence_transformers.base.modules import Normalize
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.base.modules.dense import Dense
    from sentence_transformers.multi_vector_encoder.modules import MultiVectorMask

    spec = spec or COLBERT_CONFIGS["projected"]
    torch.manual_seed(0)
    modules = [Transformer(minilm_dir, **spec["transformer"])]
    if spec["dense"]:
        modules.append(
            Dense(
                384,
                spec["dense"],
                bias=False,
                activation_function=torch.nn.Identity(),
                module_input_name="token_embeddings",
            )
        )
    modules.append(MultiVectorMask(**spec["mask"]))
    modules.append(Normalize(module_input_name="token_embeddings"))
    MultiVectorEncoder(modules=modules, device="cpu", **spec["model"]).save(
        str(directory)
    )
    return str(directory)
