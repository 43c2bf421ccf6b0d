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

Installed as `bert-tf-run-ner`; also `python -m bert_tf.cli.run_ner` and
`python run_ner.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.data_prep import conll
from bert_tf.options.ner_options import NerOptions


def define_flags():
    """run_ner.py's flags: data, tag scheme and windows, plus the shared ones."""
    flags.DEFINE_string(
        "data_dir",
        None,
        "Directory with train.txt, dev.txt and test.txt (the CoNLL-2003 names).",
    )
    flags.DEFINE_string("train_file", None, "Training file (instead of data_dir).")
    flags.DEFINE_string("dev_file", None, "Dev file, for --do_eval.")
    flags.DEFINE_string("test_file", None, "Test file, for --do_predict.")
    flags.DEFINE_enum(
        "tag_scheme",
        "iob2",
        list(conll.TAG_SCHEMES),
        "How the files' tags are written: iob1 (CoNLL-2003's original), iob2 (BIO) "
        "or bioes (IOBES). Predictions are written in the same scheme.",
    )
    flags.DEFINE_bool(
        "strict_tags",
        False,
        "Stop at an ill-formed tag sequence (e.g. I-X after O in iob2) instead of "
        "reading it as conlleval does.",
    )
    flags.DEFINE_list(
        "labels",
        None,
        "Entity types, in label order (e.g. PER,LOC,ORG,MISC); default: those of "
        "the training file, sorted.",
    )
    flags.DEFINE_integer(
        "doc_stride",
        None,
        "Sentences longer than max_seq_length - 2 tokens are cut into windows this "
        "many tokens apart (default: half of max_seq_length - 2); each word is "
        "scored in the window where it has most context.",
    )
    flags.DEFINE_bool(
        "use_crf",
        False,
        "A linear-chain CRF over the tag logits: trained by its log-likelihood "
        "over each sentence's words, predictions decoded by Viterbi (also in the "
        "SavedModel). Eval/predict/export of a CRF run need it too.",
    )
    flags.DEFINE_bool(
        "crf_constrained",
        False,
        "With --use_crf: decode only well-formed IOB2 tag sequences (no I-X after "
        "O or another type, none first).",
    )
    common_flags.define_eval_and_batching_flags()
    common_flags.define_common_flags(max_seq_length=128)
    common_flags.define_finetuning_flags()
    common_flags.define_tfds_flags(text_features=False, eval_split=True)


def options(flags_obj):
    """(RunOptions, NerOptions) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    ner = NerOptions(
        data_dir=f.data_dir,
        train_file=f.train_file,
        dev_file=f.dev_file,
        test_file=f.test_file,
        tag_scheme=f.tag_scheme,
        strict_tags=f.strict_tags,
        labels=f.labels,
        doc_stride=f.doc_stride,
        tfds=common_flags.tfds_options(f),
        use_crf=f.use_crf,
        crf_constrained=f.crf_constrained,
    )
    run = common_flags.run_options(f)
    ner.check(run)
    return run, ner


COMMAND = Command(
    "run_ner",
    __doc__,
    define_flags,
    "bert_tf.tasks.ner:run",
    required=("output_dir",),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
