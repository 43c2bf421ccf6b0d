"""Searches an index run_retrieval.py filled, showing each hit's text (a bert_tf addition).

`python search.py --help` for the flags. The code is bert_tf/cli/search.py,
also installed as the command `bert-tf-search`.
"""

from bert_tf.cli.search import main

if __name__ == "__main__":
    main()
