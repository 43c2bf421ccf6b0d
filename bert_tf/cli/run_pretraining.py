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

Installed as `bert-tf-run-pretraining`; also `python -m bert_tf.cli.run_pretraining` and `python run_pretraining.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import ORIGINAL_TPU_FLAGS
from bert_tf.cli.command import Command
from bert_tf.options.pretraining_options import PretrainingOptions

ORIGINAL_FLAGS = (
    "bert_config_file",
    "input_file",
    "output_dir",
    "init_checkpoint",
    "max_seq_length",
    "max_predictions_per_seq",
    "do_train",
    "do_eval",
    "train_batch_size",
    "eval_batch_size",
    "learning_rate",
    "num_train_steps",
    "num_warmup_steps",
    "save_checkpoints_steps",
    "iterations_per_loop",
    "max_eval_steps",
    *ORIGINAL_TPU_FLAGS,
)


def define_flags():
    """Defines run_pretraining.py's flags: the original's and the shared new ones."""
    flags.DEFINE_string(
        "input_file",
        None,
        "Input TF example files (can be a glob or comma separated).",
    )
    flags.DEFINE_integer(
        "max_predictions_per_seq",
        20,
        "Maximum number of masked LM predictions per sequence. "
        "Must match data generation.",
    )
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    flags.DEFINE_integer("num_train_steps", 100000, "Number of training steps.")
    flags.DEFINE_integer("num_warmup_steps", 10000, "Number of warmup steps.")
    flags.DEFINE_integer("max_eval_steps", 100, "Maximum number of eval steps.")
    flags.DEFINE_bool(
        "dynamic_masking",
        False,
        "Draw new masked-LM predictions each time a record is read (per epoch) "
        "instead of using the masks in the records. Needs --vocab_file.",
    )
    flags.DEFINE_string(
        "vocab_file",
        None,
        "--dynamic_masking: the vocabulary of the records (for the [CLS], [SEP] "
        "and [MASK] ids).",
    )
    flags.DEFINE_float(
        "masked_lm_prob", 0.15, "--dynamic_masking: share of tokens to predict."
    )
    common_flags.define_common_flags(max_seq_length=128)


def options(flags_obj):
    """(RunOptions, PretrainingOptions) of the parsed flags, checked (no
    TensorFlow)."""
    f = flags_obj
    pretraining = PretrainingOptions(
        input_file=f.input_file,
        max_predictions_per_seq=f.max_predictions_per_seq,
        max_eval_steps=f.max_eval_steps,
        dynamic_masking=f.dynamic_masking,
        masked_lm_prob=f.masked_lm_prob,
    )
    run = common_flags.run_options(
        f, lower_case=False, batching=False, schedule="steps"
    )
    pretraining.check(run)
    return run, pretraining


COMMAND = Command(
    "run_pretraining",
    __doc__,
    define_flags,
    "bert_tf.tasks.pretraining:run",
    original_flags=ORIGINAL_FLAGS,
    required=(
        "input_file",
        "bert_config_file",
        "output_dir",
    ),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
