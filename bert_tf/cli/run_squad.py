r"""BERT SQuAD runner: the original run_squad.py on TF2 / Keras 3.

The original's flags keep their names, defaults and meanings; see
`bert_tf/cli/flags.py` for the added ones (strategy, precision, optimizer,
gradient accumulation) and `--do_eval` to score the predictions as
evaluate-v1.1.py / evaluate-v2.0.py do (eval_results.json).

    python run_squad.py --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --do_train=True \
      --train_file=$SQUAD_DIR/train-v1.1.json --do_predict=True \
      --predict_file=$SQUAD_DIR/dev-v1.1.json --train_batch_size=12 \
      --learning_rate=3e-5 --num_train_epochs=2.0 --max_seq_length=384 \
      --doc_stride=128 --output_dir=/tmp/squad_base/
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import BATCHING
from bert_tf.cli.flags import STEP_SCHEDULE
from bert_tf.cli.flags import TFDS_TEXT_FEATURES
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.run_options import RunOptions
from bert_tf.options.squad_options import SquadOptions
from bert_tf.options.tfds_options import TfdsOptions

COMMAND = Command(
    "run_squad",
    __doc__,
    OptionFlags(
        RunOptions,
        SquadOptions,
        layout=(
            RunOptions,
            SquadOptions,
            Flag(
                "do_eval",
                help="After predicting, score predictions.json against --predict_file "
                "as evaluate-v1.1.py (or evaluate-v2.0.py with "
                "--version_2_with_negative, using null_odds.json) and write "
                "eval_results.json.",
            ),
            TfdsOptions,
        ),
        without=(
            *BATCHING,
            *STEP_SCHEDULE,
            *TFDS_TEXT_FEATURES,
            "eval_batch_size",
            "tfds_split_eval",
        ),
        changed=(Flag("max_seq_length", default=384),),
    ),
    "bert_tf.tasks.squad:run",
    required=("vocab_file", "output_dir"),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
