r"""Exports a trained BERT checkpoint as a LiteRT (TFLite) file that takes raw text.

The tokenizer is inside the file (tensorflow-text's fast BERT tokenizer,
whose LiteRT kernels `bert_tf.serving.litert_model.LiteRTModel` registers); weights are
int8 by default. See README.md ("LiteRT").

    python export_litert.py --model_type=classifier --task_name=MRPC \
      --init_checkpoint=/tmp/mrpc_output --do_lower_case=True \
      --max_seq_length=128 --output_file=/tmp/mrpc.tflite

Installed as `bert-tf-export-litert` (needs `pip install ".[litert]"` to run
the file); also `python -m bert_tf.cli.export_litert` and
`python export_litert.py`.
"""

from absl import flags

from bert_tf.cli.command import Command
from bert_tf.options.litert_export_options import LITERT_MODEL_TYPES
from bert_tf.options.litert_export_options import QUANTIZATIONS
from bert_tf.options.litert_export_options import LiteRTExportOptions


def define_flags():
    flags.DEFINE_enum(
        "model_type",
        None,
        list(LITERT_MODEL_TYPES),
        "classifier (run_classifier output), tagger (run_ner output), span "
        "(run_squad output, one window per question/context), embedding "
        "(run_similarity output or a sentence-transformers directory) or encoder.",
    )
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "The trained model: a run_* --output_dir, a checkpoint prefix, or a Google "
        "or Hugging Face model directory.",
    )
    flags.DEFINE_string(
        "bert_config_file",
        None,
        "bert_config.json; default: the one beside the checkpoint.",
    )
    flags.DEFINE_string(
        "vocab_file", None, "vocab.txt; default: the one beside the checkpoint."
    )
    flags.DEFINE_bool(
        "do_lower_case",
        None,
        "Whether to lower case the input text (as the model was trained); "
        "default: as the run recorded (run_settings.json), else True; "
        "embedding: the sentence encoder's own.",
    )
    flags.DEFINE_integer(
        "max_seq_length",
        128,
        "Longest packed input (each request is padded to its longest row, up to "
        "this); span: the window length.",
    )
    flags.DEFINE_string("output_file", None, "The .tflite file to write.")
    flags.DEFINE_enum(
        "quantization",
        "dynamic_int8",
        list(QUANTIZATIONS),
        "dynamic_int8: int8 weights and int8 matrix products (fastest on CPU, "
        "~1/4 of the float32 size); float16: float16 weights; none: float32.",
    )
    flags.DEFINE_string(
        "task_name",
        None,
        "classifier: a run_classifier task (e.g. MRPC) for the label names and "
        "whether it takes text pairs.",
    )
    flags.DEFINE_list(
        "labels",
        None,
        "classifier: label names in label-id order (instead of --task_name); "
        "tagger: its IOB2 tags (default: the label_list.json run_ner.py saved "
        "beside the checkpoint).",
    )
    flags.DEFINE_bool(
        "text_pair",
        None,
        "classifier/encoder: serving_default takes text_b too (default: from "
        "--task_name; else false).",
    )
    flags.DEFINE_integer("max_query_length", 64, "span: question tokens kept.")
    flags.DEFINE_bool(
        "use_crf",
        False,
        "tagger: the checkpoint is a run_ner.py --use_crf tagger (CRF transitions "
        "cls/crf/*); the file decodes its tags with Viterbi.",
    )
    flags.DEFINE_bool(
        "crf_constrained",
        False,
        "tagger, with --use_crf: decode only well-formed IOB2 tag sequences.",
    )


def options(flags_obj):
    """(LiteRTExportOptions,) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    return (
        LiteRTExportOptions(
            model_type=f.model_type,
            init_checkpoint=f.init_checkpoint,
            output_file=f.output_file,
            bert_config_file=f.bert_config_file,
            vocab_file=f.vocab_file,
            do_lower_case=f.do_lower_case,
            # Left out: the checkpoint's own for the embedding and reranker.
            max_seq_length=f.max_seq_length if f["max_seq_length"].present else None,
            quantization=f.quantization,
            task_name=f.task_name,
            labels=f.labels,
            text_pair=f.text_pair,
            max_query_length=f.max_query_length,
            use_crf=f.use_crf,
            crf_constrained=f.crf_constrained,
        ),
    )


def export(options):
    """Exports, then prints the file's path (TensorFlow imported now)."""
    from bert_tf.tasks import litert_export

    print(litert_export.run(options))


COMMAND = Command(
    "export_litert",
    __doc__,
    define_flags,
    export,
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
