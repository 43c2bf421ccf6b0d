"""BERT SQuAD runner: the original run_squad.py on TF2 / Keras 3.

`python run_squad.py --help` for the flags. The code is bert_tf/cli/run_squad.py, also
installed as the command `bert-tf-run-squad`.
"""

from bert_tf.cli.run_squad import main

if __name__ == "__main__":
    main()
