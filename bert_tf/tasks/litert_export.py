"""What export_litert.py does: a trained checkpoint to a raw-text LiteRT file.

Reads any checkpoint `from_checkpoint` reads, builds the family's model as
export_saved_model.py does (`bert_tf.tasks.export_models`), and writes the file with
`bert_tf.serving.litert_exporter.export_litert`.
"""

from bert_tf.errors import UserInputError
from bert_tf.serving.litert_exporter import export_litert
from bert_tf.serving.mediapipe_exporter import export_mediapipe
from bert_tf.tasks.export_models import build_for_export


def run(options):
    """Exports the checkpoint; returns the written file's path.

    Args:
      options: a `bert_tf.options.litert_export_options.LiteRTExportOptions`.
    """
    built = build_for_export(options)
    family_options = built.signature_options
    try:
        if options.target == "mediapipe":
            if family_options.get("text_pair"):
                raise ValueError(
                    f"{options.task_name} classifies text pairs: MediaPipe's "
                    "TextClassifier reads one text"
                )
            export_mediapipe(
                built.model,
                options.output_file,
                built.vocab_file,
                built.do_lower_case,
                built.max_seq_length,
                label_list=family_options.get("label_list"),
                trained_labels=family_options.get("trained_labels"),
                quantization=options.quantization,
                strip_accents=built.tokenizer_options.get("strip_accents"),
            )
        else:
            export_litert(
                built.model,
                options.output_file,
                built.vocab_file,
                built.do_lower_case,
                built.max_seq_length,
                quantization=options.quantization,
                **built.tokenizer_options,
                **family_options,
            )
    except UserInputError:
        raise  # (it names its parameters: the CLI's flags)
    except ValueError as error:
        # Vocabulary/model mismatches, a query longer than the window.
        raise UserInputError(str(error)) from error
    return options.output_file
