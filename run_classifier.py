"""BERT finetuning runner: the original run_classifier.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/training/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation, export) and `--task_name=custom` for your own files.

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
      --output_dir=/tmp/mrpc_output/
"""

from absl import app
from absl import flags

from bert_tf.tasks import classification

classification.define_flags()


def main(_):
    classification.run(flags.FLAGS)


if __name__ == "__main__":
    # --task_name is required unless --tfds_name names the task (checked in run).
    flags.mark_flag_as_required("output_dir")
    app.run(main)
