r"""Named-entity recognition: fine-tune BERT on CoNLL files, evaluate as conlleval.

Same shared flags, training loop, resume and outputs as run_classifier.py; see
`bert_tf/tasks/ner.py` for the files it writes and `data_prep/conll.py` for
the formats and tag schemes it reads.

    python run_ner.py --data_dir=$CONLL03_DIR --tag_scheme=iob1 \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=False \
      --bert_config_file=$BERT_BASE_DIR/bert_config.json \
      --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt --max_seq_length=128 \
      --do_train --do_eval --do_predict --train_batch_size=32 \
      --learning_rate=5e-5 --num_train_epochs=3.0 --output_dir=/tmp/ner_output/
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import STEP_SCHEDULE
from bert_tf.cli.flags import TFDS_TEXT_FEATURES
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.ner_options import NerOptions
from bert_tf.options.run_options import RunOptions
from bert_tf.options.tfds_options import TfdsOptions

COMMAND = Command(
    "run_ner",
    __doc__,
    OptionFlags(
        RunOptions,
        NerOptions,
        layout=(NerOptions, RunOptions, TfdsOptions),
        without=(*STEP_SCHEDULE, *TFDS_TEXT_FEATURES),
    ),
    "bert_tf.tasks.ner:run",
    required=("output_dir",),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
