"""Raw corpus to create_pretraining_data input (see bert_tf.cli.prepare_corpus)."""
