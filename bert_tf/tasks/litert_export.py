"""What export_litert.py does: a trained checkpoint to a raw-text LiteRT file.

Reads any checkpoint `from_checkpoint` reads, builds the task model as
export_saved_model.py does, and writes the file with
`bert_tf.serving.litert_exporter.export_litert`.
"""

from bert_tf import tokenization
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.config import BertConfig
from bert_tf.data_prep import glue
from bert_tf.errors import UserInputError
from bert_tf.models import BertClassifier
from bert_tf.models import BertEncoder
from bert_tf.models import BertSentenceEncoder
from bert_tf.models import BertSpanLabeler
from bert_tf.models import BertTokenClassifier
from bert_tf.serving.litert_exporter import export_litert
from bert_tf.tasks.saved_model_export import classifier_labels
from bert_tf.tasks.saved_model_export import tagger_labels


def run(flags_obj):
    """Exports the checkpoint; returns the written file's path."""
    for name in ("model_type", "init_checkpoint", "output_file"):
        if not getattr(flags_obj, name):
            raise UserInputError(f"Flag --{name} must be specified.")
    files = find_checkpoint(flags_obj.init_checkpoint)
    vocab_file = flags_obj.vocab_file or files.vocab_file
    if not vocab_file:
        raise UserInputError(
            f"No vocab.txt beside {flags_obj.init_checkpoint}: give --vocab_file"
        )
    tokenization.validate_case_matches_checkpoint(
        flags_obj.do_lower_case, flags_obj.init_checkpoint
    )
    config = flags_obj.bert_config_file
    max_positions = BertConfig.from_json_file(
        config or files.config_file
    ).max_position_embeddings
    if flags_obj.max_seq_length > max_positions:
        raise UserInputError(
            f"--max_seq_length={flags_obj.max_seq_length} > max_position_embeddings "
            f"({max_positions}) of {config or files.config_file}"
        )
    model_type = flags_obj.model_type
    options = {}
    if model_type == "classifier":
        labels, pair = classifier_labels(flags_obj)
        regression = glue.is_regression_label_list(labels)
        model = BertClassifier.from_checkpoint(
            flags_obj.init_checkpoint,
            config=config,
            num_labels=1 if regression else len(labels),
        )
        options = {"label_list": None if regression else labels, "text_pair": pair}
    elif model_type == "span":
        model = BertSpanLabeler.from_checkpoint(
            flags_obj.init_checkpoint, config=config
        )
        options = {"max_query_length": flags_obj.max_query_length}
    elif model_type == "tagger":
        labels = flags_obj.labels or tagger_labels(flags_obj.init_checkpoint)
        model = BertTokenClassifier.from_checkpoint(
            flags_obj.init_checkpoint, config=config, num_labels=len(labels)
        )
        options = {"label_list": labels}
    elif model_type == "embedding":
        model = BertSentenceEncoder.from_checkpoint(
            flags_obj.init_checkpoint, config=config, vocab_file=vocab_file
        )
    elif model_type == "encoder":
        model = BertEncoder.from_checkpoint(flags_obj.init_checkpoint, config=config)
        options = {"text_pair": bool(flags_obj.text_pair)}
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
            f"{flags_obj.init_checkpoint} lacks {len(missing)} of the "
            f"{model_type} model's variables, e.g. {missing[:3]}: "
            "is --model_type right?"
        )
    try:
        export_litert(
            model,
            flags_obj.output_file,
            vocab_file,
            flags_obj.do_lower_case,
            flags_obj.max_seq_length,
            quantization=flags_obj.quantization,
            **options,
        )
    except ValueError as error:
        # Vocabulary/model mismatches, a query longer than the window.
        raise UserInputError(str(error)) from error
    return flags_obj.output_file
