"""Exports a trained BERT checkpoint as a SavedModel for TF Serving.

`python export_saved_model.py --help` for the flags. The code is bert_tf/cli/export_saved_model.py, also
installed as the command `bert-tf-export-saved-model`.
"""

from bert_tf.cli.export_saved_model import main

if __name__ == "__main__":
    main()
