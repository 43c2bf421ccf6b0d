r"""BERT finetuning runner: the original run_classifier.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/cli/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation, export) and `--task_name=custom` for your own files.

    python run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
      --data_dir=$GLUE_DIR/MRPC --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3.0 \
      --output_dir=/tmp/mrpc_output/
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import STEP_SCHEDULE
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.classifier_options import ClassifierOptions
from bert_tf.options.run_options import RunOptions
from bert_tf.options.tfds_options import TfdsOptions

COMMAND = Command(
    "run_classifier",
    __doc__,
    OptionFlags(
        RunOptions,
        ClassifierOptions,
        layout=(
            "pad_to_longest",
            "length_bucketing",
            ClassifierOptions,
            RunOptions,
            TfdsOptions,
        ),
        without=STEP_SCHEDULE,
    ),
    "bert_tf.tasks.classification:run",
    # --task_name is required unless --tfds_name names the task (checked in run).
    required=("output_dir",),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
