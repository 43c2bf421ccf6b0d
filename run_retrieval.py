"""Retrieval with a dual encoder over a BEIR corpus, indexed into Milvus (a bert_tf addition).

`python run_retrieval.py --help` for the flags. The code is
bert_tf/cli/run_retrieval.py, also installed as the command `bert-tf-run-retrieval`.
"""

from bert_tf.cli.run_retrieval import main

if __name__ == "__main__":
    main()
