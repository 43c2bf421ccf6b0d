"""Prepare a pretraining corpus (a Wikipedia dump, JSON-lines, Parquet, text).

`python data_prep/prepare_corpus.py --help` for the flags. The code is bert_tf/cli/prepare_corpus.py, also
installed as the command `bert-tf-prepare-corpus`.
"""

import os
import sys

# Run as a file (python data_prep/prepare_corpus.py), this folder is on the
# path, not the checkout: the checkout's bert_tf comes first.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.cli.prepare_corpus import main  # noqa: E402

if __name__ == "__main__":
    main()
