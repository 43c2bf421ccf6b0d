"""Dynamic masking: new masked-LM predictions each time a record is read.

`create_pretraining_data.py` fixes each instance's masks when it writes the
record (dupe_factor copies give a few variants). With `--dynamic_masking`,
run_pretraining's tf.data pipeline restores the record's original tokens and
draws the masks again, per element and epoch, with the original's rule
(as create_pretraining_data.py): `min(max_predictions_per_seq, max(1, round(len(tokens) *
masked_lm_prob)))` positions (`len` counts [CLS] and [SEP]), never [CLS] or
[SEP] or padding, sorted; each becomes [MASK] with probability 0.8, stays
itself 0.1, a uniformly random vocabulary id 0.1. Token-level (no whole-word
grouping). The draws are stateless random ops keyed by (seed, element index),
so a resumed run sees the same masks as an uninterrupted one.
"""

import tensorflow as tf

from bert_tf.text import tokenization


def special_token_ids(vocab_file):
    """{"[CLS]", "[SEP]", "[MASK]": id} of `vocab_file`, or a ValueError
    naming the file."""
    vocab = tokenization.load_vocab(vocab_file)
    missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
    if missing:
        raise ValueError(f"{vocab_file}: the vocabulary has no {', '.join(missing)}")
    return {token: vocab[token] for token in ("[CLS]", "[SEP]", "[MASK]")}


def original_input_ids(features):
    """The record's tokens before masking: masked positions get their labels."""
    weights = features["masked_lm_weights"]
    positions = tf.boolean_mask(features["masked_lm_positions"], weights > 0)
    labels = tf.boolean_mask(features["masked_lm_ids"], weights > 0)
    return tf.tensor_scatter_nd_update(
        features["input_ids"], positions[:, None], tf.cast(labels, tf.int32)
    )


def mask_dynamically(features, seed, special_ids, vocab_size, masked_lm_prob=0.15):
    """New masks for one parsed record (int32 features as the parser gives).

    Args:
        features: dict of one record's tensors (`parse_pretraining_record`).
        seed: int32/int64 [2] stateless seed, e.g. (flag seed, element index).
        special_ids: `special_token_ids(vocab_file)`.
        vocab_size: random replacements are drawn from [0, vocab_size).
        masked_lm_prob: share of tokens to predict.
    """
    input_ids = original_input_ids(features)
    input_mask = features["input_mask"]
    seq_length = tf.shape(input_ids)[0]
    max_predictions = features["masked_lm_positions"].shape[0]
    seed = tf.cast(seed, tf.int64)
    seeds = tf.random.experimental.stateless_split(seed, num=4)

    real = tf.reduce_sum(input_mask)
    candidate = (
        (input_mask > 0)
        & (input_ids != special_ids["[CLS]"])
        & (input_ids != special_ids["[SEP]"])
    )
    # Python's round() and tf.round both round half to even.
    wanted = tf.cast(tf.round(tf.cast(real, tf.float32) * masked_lm_prob), tf.int32)
    num_to_predict = tf.minimum(max_predictions, tf.maximum(1, wanted))
    num_to_predict = tf.minimum(
        num_to_predict, tf.reduce_sum(tf.cast(candidate, tf.int32))
    )

    # A random permutation of the candidates: sort random keys, others last.
    keys = tf.random.stateless_uniform([seq_length], seeds[0])
    keys = tf.where(candidate, keys, 2.0)
    chosen = tf.argsort(keys)[:max_predictions]
    valid = tf.range(max_predictions) < num_to_predict
    positions = tf.sort(tf.where(valid, chosen, seq_length))
    positions = tf.where(valid, positions, 0)
    labels = tf.where(valid, tf.gather(input_ids, positions), 0)

    draw = tf.random.stateless_uniform([max_predictions], seeds[1])
    random_ids = tf.random.stateless_uniform(
        [max_predictions], seeds[2], minval=0, maxval=vocab_size, dtype=tf.int32
    )
    replacement = tf.where(
        draw < 0.8,
        special_ids["[MASK]"],
        tf.where(draw < 0.9, labels, random_ids),
    )
    masked_ids = tf.tensor_scatter_nd_update(
        input_ids,
        tf.boolean_mask(positions, valid)[:, None],
        tf.boolean_mask(replacement, valid),
    )
    return {
        **features,
        "input_ids": masked_ids,
        "masked_lm_positions": positions,
        "masked_lm_ids": labels,
        "masked_lm_weights": tf.cast(valid, tf.float32),
    }
