r"""Masked LM and next sentence prediction pre-training: the original
run_pretraining.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/cli/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation). Records come from create_pretraining_data.py.

    python run_pretraining.py --input_file=/tmp/tf_examples.tfrecord \
      --output_dir=/tmp/pretraining_output --do_train=True --do_eval=True \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
      --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
      --num_train_steps=20 --num_warmup_steps=10 --learning_rate=2e-5
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import BATCHING
from bert_tf.cli.flags import EPOCH_SCHEDULE
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.pretraining_options import PretrainingOptions
from bert_tf.options.run_options import RunOptions

COMMAND = Command(
    "run_pretraining",
    __doc__,
    OptionFlags(
        RunOptions,
        PretrainingOptions,
        layout=(
            "dynamic_masking",
            Flag(
                "vocab_file",
                help="--dynamic_masking: the vocabulary of the records (for the "
                "[CLS], [SEP] and [MASK] ids).",
            ),
            PretrainingOptions,
            RunOptions,
        ),
        without=(
            *BATCHING,
            *EPOCH_SCHEDULE,
            "do_lower_case",
            "do_predict",
            "predict_batch_size",
        ),
    ),
    "bert_tf.tasks.pretraining:run",
    # --bert_config_file may be left out with an --init_checkpoint that has
    # its own config (a Hugging Face or sentence-transformers directory), as
    # in run_classifier; the runner names both flags when neither is given.
    required=("input_file", "output_dir"),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
