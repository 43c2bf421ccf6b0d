"""BERT finetuning runner: the original run_classifier.py on TF2 / Keras 3.

`python run_classifier.py --help` for the flags. The code is bert_tf/cli/run_classifier.py, also
installed as the command `bert-tf-run-classifier`.
"""

from bert_tf.cli.run_classifier import main

if __name__ == "__main__":
    main()
