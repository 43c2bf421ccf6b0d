"""The tiny BERT configuration the tests train and export in seconds."""

import bert_tf


def tiny_bert_config(
    vocab_size,
    *,
    intermediate_size=64,
    max_position_embeddings=64,
    dropout=0.1,
):
    """2 layers of hidden size 32 with 4 heads and 2 segment types; `dropout`
    for both the hidden and the attention dropout (0.1 as BERT's)."""
    return bert_tf.BertConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        type_vocab_size=2,
        hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=dropout,
    )
