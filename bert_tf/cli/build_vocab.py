r"""Build a WordPiece vocabulary (vocab.txt) from a prepared corpus.

Trains with Hugging Face tokenizers' WordPiece trainer, splitting words as the
original's BasicTokenizer does, and writes the original's vocab.txt layout:
[PAD], [unused0]..., [UNK], [CLS], [SEP], [MASK], whole words, then ## pieces.
The same corpus and flags give the same file. --eval_file measures the [UNK]
rate and word pieces per word on held-out text (--compare_vocab_file beside
it). Needs the [vocab] extra (pip install "bert_tf[vocab]").

    python data_prep/build_vocab.py \
      --input_file=/tmp/corpus/corpus-0000[1-9]-of-00010.txt \
      --vocab_size=8192 --do_lower_case=true --output_file=/tmp/vocab.txt \
      --eval_file=/tmp/corpus/corpus-00000-of-00010.txt
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.vocab_options import VocabOptions


def run(options):
    """Writes the vocabulary (and its report); prints what it did."""
    from bert_tf.data_prep.corpus.readers import expand_input_patterns
    from bert_tf.data_prep.vocabulary.build import build_vocab
    from bert_tf.data_prep.vocabulary.training import import_tokenizers

    import_tokenizers()
    lines = build_vocab(
        expand_input_patterns(options.input_file),
        options.output_file,
        options.vocab_size,
        do_lower_case=options.do_lower_case,
        num_unused=options.num_unused,
        min_frequency=options.min_frequency,
        limit_alphabet=options.limit_alphabet,
        eval_file=options.eval_file,
        compare_vocab_file=options.compare_vocab_file,
    )
    print("\n".join(lines))


COMMAND = Command(
    "build_vocab",
    __doc__,
    OptionFlags(VocabOptions),
    run,
    required=("input_file", "output_file"),
    uses_tensorflow=False,
    checkout_script="data_prep",
)


main = COMMAND.main


if __name__ == "__main__":
    main()
