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

Installed as `bert-tf-run-classifier`; also `python -m bert_tf.cli.run_classifier` and `python run_classifier.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import ORIGINAL_TPU_FLAGS
from bert_tf.cli.command import Command
from bert_tf.options.classifier_options import ClassifierOptions

ORIGINAL_FLAGS = (
    "data_dir",
    "bert_config_file",
    "task_name",
    "vocab_file",
    "output_dir",
    "init_checkpoint",
    "do_lower_case",
    "max_seq_length",
    "do_train",
    "do_eval",
    "do_predict",
    "train_batch_size",
    "eval_batch_size",
    "predict_batch_size",
    "learning_rate",
    "num_train_epochs",
    "warmup_proportion",
    "save_checkpoints_steps",
    "iterations_per_loop",
    *ORIGINAL_TPU_FLAGS,
)


def define_flags():
    """Defines run_classifier.py's flags: the original's, the shared new ones, and
    the task options (custom files, bad rows, batching)."""
    flags.DEFINE_string(
        "data_dir",
        None,
        "The input data dir. Should contain the .tsv files (or other data files) for the task.",
    )
    flags.DEFINE_string("task_name", None, "The name of the task to train.")
    common_flags.define_eval_and_batching_flags()
    flags.DEFINE_bool(
        "skip_bad_rows",
        False,
        "Skip malformed data rows (counted and logged) instead of stopping at the first.",
    )
    flags.DEFINE_string(
        "xnli_language", "zh", "Language of the XNLI task (the original: zh)."
    )
    # --task_name=custom: your own TSV/CSV/JSONL files, no code needed.
    flags.DEFINE_string(
        "train_file", None, "custom task: training file (.tsv, .csv or .jsonl)."
    )
    flags.DEFINE_string("dev_file", None, "custom task: dev file.")
    flags.DEFINE_string("test_file", None, "custom task: test file.")
    flags.DEFINE_string(
        "text_a_column", "0", "custom task: first text column (name or index)."
    )
    flags.DEFINE_string(
        "text_b_column", None, "custom task: second text column, if any."
    )
    flags.DEFINE_string(
        "label_column", "1", "custom task: label column (name or index)."
    )
    flags.DEFINE_bool(
        "has_header", True, "custom task: .tsv/.csv files start with a header."
    )
    flags.DEFINE_bool(
        "is_regression", False, "custom task: the label is a real number."
    )
    flags.DEFINE_bool(
        "allow_single_class",
        False,
        "Train even if every training example has the same label (by default "
        "an error naming the file: usually a cut or mis-parsed file).",
    )
    flags.DEFINE_bool(
        "allow_header_like_first_row",
        False,
        "custom task with --has_header=false: accept a first train row that "
        "looks like a header (single-word cells, a label found in no other "
        "row); by default an error, since it would become a bogus class.",
    )
    common_flags.define_common_flags(max_seq_length=128)
    common_flags.define_finetuning_flags()
    common_flags.define_tfds_flags(text_features=True)


def options(flags_obj):
    """(RunOptions, ClassifierOptions) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    classifier = ClassifierOptions(
        task_name=f.task_name,
        data_dir=f.data_dir,
        xnli_language=f.xnli_language,
        skip_bad_rows=f.skip_bad_rows,
        allow_single_class=f.allow_single_class,
        train_file=f.train_file,
        dev_file=f.dev_file,
        test_file=f.test_file,
        text_a_column=f.text_a_column,
        text_b_column=f.text_b_column,
        label_column=f.label_column,
        has_header=f.has_header,
        is_regression=f.is_regression,
        allow_header_like_first_row=f.allow_header_like_first_row,
        tfds=common_flags.tfds_options(f),
    )
    run = common_flags.run_options(f)
    classifier.check(run)
    return run, classifier


COMMAND = Command(
    "run_classifier",
    __doc__,
    define_flags,
    "bert_tf.tasks.classification:run",
    original_flags=ORIGINAL_FLAGS,
    # --task_name is required unless --tfds_name names the task (checked in run).
    required=("output_dir",),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
