r"""Extract pre-computed feature vectors from BERT: the original extract_features.py.

    python extract_features.py --input_file=/tmp/input.txt \
      --output_file=/tmp/output.jsonl --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
      --max_seq_length=128 --batch_size=8

Installed as `bert-tf-extract-features`; also `python -m bert_tf.cli.extract_features` and `python extract_features.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.options.feature_extraction_options import FeatureExtractionOptions

ORIGINAL_FLAGS = (
    "input_file",
    "output_file",
    "layers",
    "bert_config_file",
    "max_seq_length",
    "init_checkpoint",
    "vocab_file",
    "do_lower_case",
    "batch_size",
    "use_tpu",
    "master",
    "num_tpu_cores",
    "use_one_hot_embeddings",
)


def define_flags():
    """The original extract_features.py flags, names and defaults unchanged."""
    flags.DEFINE_string("input_file", None, "")
    flags.DEFINE_string("output_file", None, "")
    flags.DEFINE_string("layers", "-1,-2,-3,-4", "")
    flags.DEFINE_string(
        "bert_config_file",
        None,
        "The config json file corresponding to the pre-trained BERT model. "
        "This specifies the model architecture.",
    )
    flags.DEFINE_integer(
        "max_seq_length",
        128,
        "The maximum total input sequence length after WordPiece tokenization. "
        "Sequences longer than this will be truncated, and sequences shorter than this "
        "will be padded.",
    )
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "Initial checkpoint (usually from a pre-trained BERT model).",
    )
    common_flags.define_vocab_flags()
    flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
    flags.DEFINE_string("master", None, "If using a TPU, the address of the master.")
    flags.DEFINE_integer(
        "num_tpu_cores",
        8,
        "Only used if `use_tpu` is True. Total number of TPU cores to use.",
    )
    flags.DEFINE_bool(
        "use_one_hot_embeddings",
        False,
        "If True, tf.one_hot will be used for embedding lookups, otherwise tf.nn.embedding_lookup "
        "will be used. On TPUs, this should be True since it is much faster.",
    )


def options(flags_obj):
    """(FeatureExtractionOptions,) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    return (
        FeatureExtractionOptions(
            input_file=f.input_file,
            output_file=f.output_file,
            init_checkpoint=f.init_checkpoint,
            vocab_file=f.vocab_file,
            bert_config_file=f.bert_config_file,
            do_lower_case=f.do_lower_case,
            layers=f.layers,
            max_seq_length=f.max_seq_length,
            batch_size=f.batch_size,
        ),
    )


COMMAND = Command(
    "extract_features",
    __doc__,
    define_flags,
    "bert_tf.tasks.feature_extraction:run",
    original_flags=ORIGINAL_FLAGS,
    required=(
        "input_file",
        "vocab_file",
        "init_checkpoint",
        "output_file",
    ),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
