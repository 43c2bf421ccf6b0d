"""Re-ranking with a cross-encoder on BEIR data (a bert_tf addition to the original's scripts).

`python run_reranker.py --help` for the flags. The code is bert_tf/cli/run_reranker.py,
also installed as the command `bert-tf-run-reranker`.
"""

from bert_tf.cli.run_reranker import main

if __name__ == "__main__":
    main()
