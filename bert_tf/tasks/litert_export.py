"""What export_litert.py does: a trained checkpoint to a raw-text LiteRT file.

Reads any checkpoint `from_checkpoint` reads, builds the task model as
export_saved_model.py does, and writes the file with
`bert_tf.serving.litert_exporter.export_litert`.
"""

from bert_tf.data_prep import glue
from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier
from bert_tf.models import BertEncoder
from bert_tf.models import BertSentenceEncoder
from bert_tf.models import BertSpanLabeler
from bert_tf.serving.litert_exporter import export_litert
from bert_tf.serving.mediapipe_exporter import export_mediapipe
from bert_tf.tasks import ner
from bert_tf.tasks.saved_model_export import checkpoint_files
from bert_tf.tasks.saved_model_export import recorded_tokenization
from bert_tf.tasks.saved_model_export import tagger_labels


def run(options):
    """Exports the checkpoint; returns the written file's path.

    Args:
      options: a `bert_tf.options.litert_export_options.LiteRTExportOptions`.
    """
    vocab_file, config = checkpoint_files(options)
    # What the run recorded wins over the flags, as in the SavedModel export.
    do_lower_case, recorded_labels = recorded_tokenization(options)
    max_seq_length = options.max_seq_length
    model_type = options.model_type
    family_options = {}
    if model_type == "classifier":
        labels, pair = options.classifier_labels()
        if labels is None:
            labels = recorded_labels
        regression = glue.is_regression_label_list(labels)
        model = BertClassifier.from_checkpoint(
            options.init_checkpoint,
            config=config,
            num_labels=1 if regression else len(labels),
        )
        family_options = {
            "label_list": None if regression else labels,
            "text_pair": pair,
        }
    elif model_type == "span":
        model = BertSpanLabeler.from_checkpoint(options.init_checkpoint, config=config)
        family_options = {"max_query_length": options.max_query_length}
    elif model_type == "tagger":
        labels = list(options.labels or tagger_labels(options.init_checkpoint))
        model = ner.tagger_for_export(options.init_checkpoint, config, options, labels)
        family_options = {"label_list": labels}
    elif model_type == "embedding":
        model = BertSentenceEncoder.from_checkpoint(
            options.init_checkpoint,
            config=config,
            vocab_file=vocab_file,
            max_seq_length=options.max_seq_length,
        )
        model.set_defaults(options.prompt_name, options.truncate_dim)
        # The tokenization and length the encoder was trained with (e.g.
        # sentence_bert_config.json's 256), as the SavedModel export does.
        do_lower_case = model.preprocessor.do_lower_case
        max_seq_length = model.preprocessor.seq_length
        family_options = {
            "strip_accents": model.preprocessor.strip_accents,
            "tokenize_chinese_chars": model.preprocessor.tokenize_chinese_chars,
        }
    elif model_type == "encoder":
        model = BertEncoder.from_checkpoint(options.init_checkpoint, config=config)
        family_options = {"text_pair": bool(options.text_pair)}
    else:
        raise UserInputError(
            f"--model_type={model_type}: expected one of classifier, tagger, span, "
            "embedding, encoder"
        )
    report = model.checkpoint_load_report
    missing = [
        name
        for name in report.missing
        # A model that does not read the pooler may lack it.
        if getattr(model, "reads_pooled_output", True)
        or not name.startswith("bert/pooler/")
    ]
    if missing:
        raise UserInputError(
            f"{options.init_checkpoint} lacks {len(missing)} of the "
            f"{model_type} model's variables, e.g. {missing[:3]}: "
            "is --model_type right?"
        )
    try:
        if options.target == "mediapipe":
            if family_options.get("text_pair"):
                raise ValueError(
                    f"{options.task_name} classifies text pairs: MediaPipe's "
                    "TextClassifier reads one text"
                )
            export_mediapipe(
                model,
                options.output_file,
                vocab_file,
                do_lower_case,
                max_seq_length,
                label_list=family_options.get("label_list"),
                quantization=options.quantization,
                strip_accents=family_options.get("strip_accents"),
            )
        else:
            export_litert(
                model,
                options.output_file,
                vocab_file,
                do_lower_case,
                max_seq_length,
                quantization=options.quantization,
                **family_options,
            )
    except ValueError as error:
        # Vocabulary/model mismatches, a query longer than the window.
        raise UserInputError(str(error)) from error
    return options.output_file
