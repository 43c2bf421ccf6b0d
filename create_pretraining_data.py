"""Create masked LM/next sentence masked_lm TF examples for BERT.

The original create_pretraining_data.py: every flag keeps its name, default
and meaning, and with the default ``--num_workers=1`` (and no
``--shard_size_mb``) the records are those of the original for the same inputs
and seed. ``--num_workers=N`` / ``--shard_size_mb`` add sharded, streaming
generation (shards of whole documents, memory bounded by the shard size, not by
the corpus); see ``data_prep/pretraining.py``. TensorFlow is not imported for
local files.

    python create_pretraining_data.py \
      --input_file=./sample_text.txt --output_file=/tmp/tf_examples.tfrecord \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True \
      --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
      --random_seed=12345 --dupe_factor=5

The code is in bert_tf/cli/create_pretraining_data.py (installed as `bert-tf-create-pretraining-data`).
"""

from bert_tf.cli.create_pretraining_data import main

if __name__ == "__main__":
    main()
