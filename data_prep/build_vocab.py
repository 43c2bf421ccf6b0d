"""Build a WordPiece vocabulary (vocab.txt) from a prepared corpus.

`python data_prep/build_vocab.py --help` for the flags. The code is bert_tf/cli/build_vocab.py, also
installed as the command `bert-tf-build-vocab`.
"""

import os
import sys

# Run as a file (python data_prep/build_vocab.py), this folder is on the
# path, not the checkout: the checkout's bert_tf comes first.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bert_tf.cli.build_vocab import main  # noqa: E402

if __name__ == "__main__":
    main()
