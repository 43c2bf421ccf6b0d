r"""Exports a trained BERT checkpoint as a LiteRT (TFLite) file that takes raw text.

The tokenizer is inside the file (tensorflow-text's fast BERT tokenizer,
whose LiteRT kernels `bert_tf.serving.litert_model.LiteRTModel` registers); weights are
int8 by default. See docs/guides/litert.md.

    python export_litert.py --model_type=classifier --task_name=MRPC \
      --init_checkpoint=/tmp/mrpc_output --do_lower_case=True \
      --max_seq_length=128 --output_file=/tmp/mrpc.tflite

Running the file needs `pip install ".[litert]"`.
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import EXPORT_FLAGS
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.litert_export_options import LiteRTExportOptions

COMMAND = Command(
    "export_litert",
    __doc__,
    OptionFlags(
        LiteRTExportOptions,
        layout=(
            *EXPORT_FLAGS,
            LiteRTExportOptions,
        ),
    ),
    "bert_tf.tasks.litert_export:run",
    print_result=True,  # the file's path
)


main = COMMAND.main


if __name__ == "__main__":
    main()
