"""Extract pre-computed feature vectors from BERT: the original extract_features.py.

    python extract_features.py --input_file=/tmp/input.txt \
      --output_file=/tmp/output.jsonl --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
      --max_seq_length=128 --batch_size=8

The code is in bert_tf/cli/extract_features.py (installed as `bert-tf-extract-features`).
"""

from bert_tf.cli.extract_features import main

if __name__ == "__main__":
    main()
