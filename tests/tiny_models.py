"""The tiny BERT configuration the tests train and export in seconds, and the
pre-training records they train it on."""

import os

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


def sample_text_pretraining(shared_data, folder, dropout=0.1):
    """sample_text.txt as pre-training records (64 tokens, 10 masks, seed
    12345) and a 2-layer config with `dropout` in `folder`; returns
    (folder, uncased vocab file)."""
    from bert_tf.data_prep.pretraining import create_pretraining_data

    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    create_pretraining_data(
        os.path.join(shared_data, "bert_sample_text", "sample_text.txt"),
        str(folder / "sample.tfrecord"),
        vocab,
        do_lower_case=True,
        max_seq_length=64,
        max_predictions_per_seq=10,
        random_seed=12345,
        dupe_factor=1,
    )
    tiny_bert_config(30522, dropout=dropout).to_json_file(folder / "bert_config.json")
    return folder, vocab
