"""Random model inputs for tests."""

import numpy as np


def random_features(config, batch=3, seq=11, seed=0, padded=True):
    """Random int32 encoder inputs, with some sequences padded."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, config.vocab_size, size=(batch, seq)).astype("int32")
    lengths = (
        rng.integers(min(2, seq), seq + 1, size=batch)
        if padded
        else np.full(batch, seq)
    )
    lengths[0] = seq
    mask = (np.arange(seq)[None, :] < lengths[:, None]).astype("int32")
    segments = (
        (np.arange(seq)[None, :] >= lengths[:, None] // 2) & (mask == 1)
    ).astype("int32")
    return {"input_ids": ids * mask, "input_mask": mask, "segment_ids": segments}
