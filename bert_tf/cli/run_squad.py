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

Installed as `bert-tf-run-squad`; also `python -m bert_tf.cli.run_squad` and `python run_squad.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import ORIGINAL_TPU_FLAGS
from bert_tf.cli.command import Command
from bert_tf.options.squad_options import SquadOptions

ORIGINAL_FLAGS = (
    "bert_config_file",
    "vocab_file",
    "output_dir",
    "train_file",
    "predict_file",
    "init_checkpoint",
    "do_lower_case",
    "max_seq_length",
    "doc_stride",
    "max_query_length",
    "do_train",
    "do_predict",
    "train_batch_size",
    "predict_batch_size",
    "learning_rate",
    "num_train_epochs",
    "warmup_proportion",
    "save_checkpoints_steps",
    "iterations_per_loop",
    "n_best_size",
    "max_answer_length",
    *ORIGINAL_TPU_FLAGS,
    "verbose_logging",
    "version_2_with_negative",
    "null_score_diff_threshold",
)


def define_flags():
    """Defines run_squad.py's flags: the original's, the shared new ones, and
    --do_eval."""
    common_flags.define_common_flags(max_seq_length=384)
    common_flags.define_finetuning_flags()
    flags.DEFINE_string(
        "train_file", None, "SQuAD json for training. E.g., train-v1.1.json"
    )
    flags.DEFINE_string(
        "predict_file",
        None,
        "SQuAD json for predictions. E.g., dev-v1.1.json or test-v1.1.json",
    )
    flags.DEFINE_integer(
        "doc_stride",
        128,
        "When splitting up a long document into chunks, how much stride to take "
        "between chunks.",
    )
    flags.DEFINE_integer(
        "max_query_length",
        64,
        "The maximum number of tokens for the question. Questions longer than this "
        "will be truncated to this length.",
    )
    flags.DEFINE_integer(
        "n_best_size",
        20,
        "The total number of n-best predictions to generate in the "
        "nbest_predictions.json output file.",
    )
    flags.DEFINE_integer(
        "max_answer_length",
        30,
        "The maximum length of an answer that can be generated. This is needed "
        "because the start and end predictions are not conditioned on one another.",
    )
    flags.DEFINE_bool(
        "verbose_logging",
        False,
        "If true, all of the warnings related to data processing will be printed. "
        "A number of warnings are expected for a normal SQuAD evaluation.",
    )
    flags.DEFINE_bool(
        "version_2_with_negative",
        False,
        "If true, the SQuAD examples contain some that do not have an answer.",
    )
    flags.DEFINE_float(
        "null_score_diff_threshold",
        0.0,
        "If null_score - best_non_null is greater than the threshold predict null.",
    )
    flags.DEFINE_enum(
        "train_answer",
        "error",
        ["error", "first"],
        "A training question with several gold answers (as in dev files): error "
        "stops naming it (the original's behaviour); first trains on the first "
        "answer.",
    )
    flags.DEFINE_bool(
        "do_eval",
        False,
        "After predicting, score predictions.json against --predict_file as "
        "evaluate-v1.1.py (or evaluate-v2.0.py with --version_2_with_negative, "
        "using null_odds.json) and write eval_results.json.",
    )
    common_flags.define_tfds_flags(text_features=False)


def options(flags_obj):
    """(RunOptions, SquadOptions) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    squad = SquadOptions(
        train_file=f.train_file,
        predict_file=f.predict_file,
        doc_stride=f.doc_stride,
        max_query_length=f.max_query_length,
        n_best_size=f.n_best_size,
        max_answer_length=f.max_answer_length,
        verbose_logging=f.verbose_logging,
        version_2_with_negative=f.version_2_with_negative,
        null_score_diff_threshold=f.null_score_diff_threshold,
        train_answer=f.train_answer,
        tfds=common_flags.tfds_options(f),
    )
    run = common_flags.run_options(f, batching=False)
    squad.check(run)
    return run, squad


COMMAND = Command(
    "run_squad",
    __doc__,
    define_flags,
    "bert_tf.tasks.squad:run",
    original_flags=ORIGINAL_FLAGS,
    required=(
        "vocab_file",
        "output_dir",
    ),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
