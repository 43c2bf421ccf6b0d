r"""Exports a trained BERT checkpoint as a SavedModel for TF Serving.

Raw text in (`serving_default`), predictions out; `serve_tokenized` for
int32 ids. See README.md ("Serving with TF Serving").

    python export_saved_model.py --model_type=classifier --task_name=MRPC \
      --init_checkpoint=/tmp/mrpc_output --do_lower_case=True \
      --max_seq_length=128 --export_dir=/tmp/serving/mrpc

    python export_saved_model.py --model_type=retrieval \
      --init_checkpoint=/tmp/retrieval_output --data_dir=/tmp/squad_beir \
      --export_dir=/tmp/serving/retrieval

Installed as `bert-tf-export-saved-model`; also `python -m bert_tf.cli.export_saved_model` and `python export_saved_model.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.errors import UserInputError
from bert_tf.options.export_options import ExportOptions
from bert_tf.options.retrieval_options import METRICS
from bert_tf.options.saved_model_export_options import SPAN_OPTIONS
from bert_tf.options.saved_model_export_options import SavedModelExportOptions
from bert_tf.serving.span_options import MAX_CONTEXT_BYTES
from bert_tf.serving.span_options import MAX_WINDOWS
from bert_tf.tasks.saved_model_types import MODEL_TYPES


def define_flags():
    flags.DEFINE_enum(
        "model_type",
        None,
        list(MODEL_TYPES),
        "classifier (run_classifier output), span (run_squad output), tagger "
        "(run_ner output), encoder, or embedding (a sentence encoder: a "
        "sentence-transformers directory such as run_similarity's "
        "output_dir/sentence_transformers, or a BERT checkpoint with --pooling; "
        "its own max_seq_length and lower-casing are used), or reranker (a "
        "cross-encoder: a sentence-transformers CrossEncoder / one-label Hugging "
        "Face BertForSequenceClassification directory, or a run_reranker "
        "output_dir; its own max_seq_length, lower-casing and "
        "activation are used), or retrieval (a dual encoder: a run_retrieval "
        "output_dir or a sentence-transformers directory, over the --data_dir "
        "corpus embedded into the SavedModel: query in, document ids and scores "
        "out).",
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
        True,
        "Whether to lower case the input text (as the model was trained; "
        "default: as the run in --init_checkpoint recorded it, else true).",
    )
    flags.DEFINE_integer(
        "max_seq_length",
        128,
        "Longest packed input of the raw-text signature (each request is padded "
        "to its longest row, up to this); span: the window length.",
    )
    flags.DEFINE_string(
        "export_dir", None, "Base directory; the model goes to export_dir/<version>/."
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
        "tagger: its IOB2 tags in label-id order (default: the label_list.json "
        "run_ner.py saved beside the checkpoint).",
    )
    flags.DEFINE_bool(
        "text_pair",
        None,
        "classifier/encoder: serving_default takes text_b too (default: from "
        "--task_name; else false).",
    )
    flags.DEFINE_bool(
        "use_crf",
        False,
        "tagger: the checkpoint is a run_ner.py --use_crf tagger (CRF transitions "
        "cls/crf/*); the SavedModel decodes its tags with Viterbi.",
    )
    flags.DEFINE_bool(
        "crf_constrained",
        False,
        "tagger, with --use_crf: decode only well-formed IOB2 tag sequences.",
    )
    flags.DEFINE_integer("max_query_length", 64, "span: question tokens kept.")
    flags.DEFINE_integer(
        "max_context_bytes",
        MAX_CONTEXT_BYTES,
        "span: the model refuses a request with a longer context (bytes).",
    )
    flags.DEFINE_integer(
        "max_windows",
        MAX_WINDOWS,
        "span: the model refuses a request whose contexts need more windows in all.",
    )
    flags.DEFINE_integer("max_answer_length", 30, "span: longest answer in tokens.")
    flags.DEFINE_integer(
        "doc_stride", 128, "span: how far each window of a long context moves on."
    )
    flags.DEFINE_integer(
        "n_best_size", 20, "span: start/end candidates per window, n-best entries."
    )
    flags.DEFINE_bool(
        "version_2_with_negative",
        False,
        "span: the model was trained on SQuAD 2.0 (answers may be empty).",
    )
    flags.DEFINE_float(
        "null_score_diff_threshold",
        0.0,
        'span, SQuAD 2.0: answer "" when the null score beats the best span by '
        "more than this.",
    )
    flags.DEFINE_string(
        "pooling",
        None,
        "embedding, plain BERT checkpoint: mean, cls, max or mean_sqrt_len_tokens.",
    )
    flags.DEFINE_string(
        "data_dir",
        None,
        "retrieval: BEIR directory whose corpus.jsonl is embedded into the "
        "SavedModel (passages cut as run_retrieval.py cuts them).",
    )
    flags.DEFINE_integer(
        "passage_length",
        None,
        "retrieval: word pieces per passage (default: the document tower's "
        "max_seq_length - 2).",
    )
    flags.DEFINE_integer(
        "passage_stride",
        None,
        "retrieval: word pieces between passage starts (default: half of "
        "--passage_length).",
    )
    flags.DEFINE_enum(
        "metric_type",
        "IP",
        list(METRICS),
        "retrieval: similarity of the exact search: inner product, cosine or L2.",
    )
    flags.DEFINE_string(
        "rerank_checkpoint",
        None,
        "retrieval: a cross-encoder (a CrossEncoder directory or a run_reranker "
        "output_dir) that re-orders each query's --rerank_top_k best passages in "
        "the SavedModel (both stages in one graph).",
    )
    flags.DEFINE_integer(
        "rerank_top_k",
        20,
        "retrieval: candidate passages per query for the cross-encoder.",
    )
    common_flags.define_serving_flags()


def options(flags_obj):
    """(SavedModelExportOptions,) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    required = {"model_type": f.model_type, "init_checkpoint": f.init_checkpoint}
    for name, value in (*required.items(), ("export_dir", f.export_dir)):
        if not value:
            raise UserInputError(f"Flag --{name} must be specified.")
    export = ExportOptions(
        export_dir=f.export_dir,
        serving_tokenizer=f.serving_tokenizer,
        serving_dtype=f.serving_dtype,
        export_version=f.export_version,
    )
    return (
        SavedModelExportOptions(
            export=export,
            bert_config_file=f.bert_config_file,
            vocab_file=f.vocab_file,
            # Left out: as the run in --init_checkpoint recorded it.
            do_lower_case=f.do_lower_case if f["do_lower_case"].present else None,
            # Left out: the checkpoint's own for the embedding and reranker.
            max_seq_length=f.max_seq_length if f["max_seq_length"].present else None,
            task_name=f.task_name,
            labels=f.labels,
            text_pair=f.text_pair,
            pooling=f.pooling,
            use_crf=f.use_crf,
            crf_constrained=f.crf_constrained,
            data_dir=f.data_dir,
            passage_length=f.passage_length,
            passage_stride=f.passage_stride,
            metric_type=f.metric_type,
            rerank_checkpoint=f.rerank_checkpoint,
            rerank_top_k=f.rerank_top_k,
            **required,
            **{name: getattr(f, name) for name in SPAN_OPTIONS},
        ),
    )


def export(options):
    """Exports, then prints the version directory (TensorFlow imported now)."""
    from bert_tf.tasks import saved_model_export

    print(saved_model_export.run(options))


COMMAND = Command(
    "export_saved_model",
    __doc__,
    define_flags,
    export,
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
