"""Predicts every row of TSV/JSONL/TFRecord files with an exported SavedModel (Beam).

`python batch_predict.py --help` for the flags. The code is bert_tf/cli/batch_predict.py,
also installed as the command `bert-tf-batch-predict`.
"""

from bert_tf.cli.batch_predict import main

if __name__ == "__main__":
    main()
