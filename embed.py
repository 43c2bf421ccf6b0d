"""Embeds a text file with a sentence encoder into .npy + ids (and TFRecord).

`python embed.py --help` for the flags. The code is bert_tf/cli/embed.py, also
installed as the command `bert-tf-embed`.
"""

from bert_tf.cli.embed import main

if __name__ == "__main__":
    main()
