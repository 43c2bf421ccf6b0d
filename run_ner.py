"""Named-entity recognition: fine-tune BERT on CoNLL files, evaluate as conlleval.

Same shared flags, training loop, resume and outputs as run_classifier.py; see
`bert_tf/tasks/ner.py` for the files it writes and `data_prep/conll.py` for
the formats and tag schemes it reads.

    python run_ner.py --data_dir=$CONLL03_DIR --tag_scheme=iob1 \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=False \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --do_train --do_eval --do_predict --train_batch_size=32 \
      --learning_rate=5e-5 --num_train_epochs=3.0 --output_dir=/tmp/ner_output/
"""

from absl import app
from absl import flags

from bert_tf.tasks import ner

ner.define_flags()


def main(_):
    ner.run(flags.FLAGS)


if __name__ == "__main__":
    flags.mark_flag_as_required("output_dir")
    app.run(main)
