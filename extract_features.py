"""Extract pre-computed feature vectors from BERT: the original extract_features.py.

    python extract_features.py --input_file=/tmp/input.txt \
      --output_file=/tmp/output.jsonl --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
      --max_seq_length=128 --batch_size=8
"""

from absl import app
from absl import flags

from bert_tf.tasks import feature_extraction

feature_extraction.define_flags()


def main(_):
    feature_extraction.run(flags.FLAGS)


if __name__ == "__main__":
    for name in (
        "input_file",
        "vocab_file",
        "bert_config_file",
        "init_checkpoint",
        "output_file",
    ):
        flags.mark_flag_as_required(name)
    app.run(main)
