"""Extract pre-computed feature vectors from BERT: the original extract_features.py.

`python extract_features.py --help` for the flags. The code is bert_tf/cli/extract_features.py, also
installed as the command `bert-tf-extract-features`.
"""

from bert_tf.cli.extract_features import main

if __name__ == "__main__":
    main()
