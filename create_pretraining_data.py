"""Create masked LM/next sentence masked_lm TF examples for BERT.

`python create_pretraining_data.py --help` for the flags. The code is bert_tf/cli/create_pretraining_data.py, also
installed as the command `bert-tf-create-pretraining-data`.
"""

from bert_tf.cli.create_pretraining_data import main

if __name__ == "__main__":
    main()
