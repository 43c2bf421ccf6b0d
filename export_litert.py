"""Exports a trained BERT checkpoint as a LiteRT (TFLite) file that takes raw text.

`python export_litert.py --help` for the flags. The code is bert_tf/cli/export_litert.py, also
installed as the command `bert-tf-export-litert`.
"""

from bert_tf.cli.export_litert import main

if __name__ == "__main__":
    main()
