"""Named-entity recognition on CoNLL files (a bert_tf addition to the original's scripts).

`python run_ner.py --help` for the flags. The code is bert_tf/cli/run_ner.py, also
installed as the command `bert-tf-run-ner`.
"""

from bert_tf.cli.run_ner import main

if __name__ == "__main__":
    main()
