"""Fine-tunes a sentence encoder on similarity data (scored pairs or in-batch negatives).

`python run_similarity.py --help` for the flags. The code is bert_tf/cli/run_similarity.py, also
installed as the command `bert-tf-run-similarity`.
"""

from bert_tf.cli.run_similarity import main

if __name__ == "__main__":
    main()
