r"""Exports a trained BERT checkpoint as a SavedModel for TF Serving.

Raw text in (`serving_default`), predictions out; `serve_tokenized` for
int32 ids. See docs/guides/serving.md.

    python export_saved_model.py --model_type=classifier --task_name=MRPC \
      --init_checkpoint=/tmp/mrpc_output --do_lower_case=True \
      --max_seq_length=128 --export_dir=/tmp/serving/mrpc

    python export_saved_model.py --model_type=retrieval \
      --init_checkpoint=/tmp/retrieval_output --data_dir=/tmp/squad_beir \
      --export_dir=/tmp/serving/retrieval
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import EXPORT_FLAGS
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.export_options import ExportOptions
from bert_tf.options.saved_model_export_options import SavedModelExportOptions

COMMAND = Command(
    "export_saved_model",
    __doc__,
    OptionFlags(
        SavedModelExportOptions,
        layout=(
            *EXPORT_FLAGS,
            "export_dir",
            SavedModelExportOptions,
            ExportOptions,
        ),
        changed=(
            Flag(
                "export_dir",
                help="Base directory; the model goes to export_dir/<version>/.",
            ),
        ),
    ),
    "bert_tf.tasks.saved_model_export:run",
    print_result=True,  # the version directory
)


main = COMMAND.main


if __name__ == "__main__":
    main()
