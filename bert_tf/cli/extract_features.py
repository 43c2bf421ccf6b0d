r"""Extract pre-computed feature vectors from BERT: the original extract_features.py.

    python extract_features.py --input_file=/tmp/input.txt \
      --output_file=/tmp/output.jsonl --vocab_file=$BERT_BASE_DIR/vocab.txt \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --layers=-1,-2,-3,-4 \
      --max_seq_length=128 --batch_size=8
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.feature_extraction_options import FeatureExtractionOptions

COMMAND = Command(
    "extract_features",
    __doc__,
    OptionFlags(FeatureExtractionOptions),
    "bert_tf.tasks.feature_extraction:run",
    required=("input_file", "vocab_file", "init_checkpoint", "output_file"),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
