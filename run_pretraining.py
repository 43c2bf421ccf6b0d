"""Masked LM and next sentence prediction pre-training: the original run_pretraining.py.

`python run_pretraining.py --help` for the flags. The code is bert_tf/cli/run_pretraining.py, also
installed as the command `bert-tf-run-pretraining`.
"""

from bert_tf.cli.run_pretraining import main

if __name__ == "__main__":
    main()
