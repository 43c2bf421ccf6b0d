"""How well a vocabulary covers held-out text, measured with `FullTokenizer`.

Words are `BasicTokenizer`'s tokens (what WordPiece splits); a word that
WordPiece cannot spell is one [UNK]. The same text and casing give the
figures of any other vocab.txt, e.g. bert-base-uncased's, side by side.
"""

import dataclasses

from bert_tf.data_prep.vocabulary.training import corpus_lines


@dataclasses.dataclass(frozen=True)
class CoverageReport:
    """A vocabulary on held-out text.

    Args:
      vocab_file: the vocabulary measured.
      vocab_entries: its number of entries.
      words: BasicTokenizer tokens of the text.
      pieces: WordPiece tokens they became.
      unknown_words: words that became [UNK].

    Example:

    ```python
    report = coverage(["vocab.txt"][0], ["corpus-00000-of-00010.txt"])
    print(report.unk_rate, report.pieces_per_word)
    ```
    """

    vocab_file: str
    vocab_entries: int
    words: int
    pieces: int
    unknown_words: int

    @property
    def unk_rate(self):
        return self.unknown_words / self.words if self.words else 0.0

    @property
    def pieces_per_word(self):
        return self.pieces / self.words if self.words else 0.0

    def as_dict(self):
        return {
            **dataclasses.asdict(self),
            "unk_rate": self.unk_rate,
            "pieces_per_word": self.pieces_per_word,
        }

    def line(self):
        return (
            f"{self.vocab_file} ({self.vocab_entries:,} entries): [UNK] "
            f"{100 * self.unk_rate:.3f}% of {self.words:,} words, "
            f"{self.pieces_per_word:.3f} pieces per word"
        )


def coverage(vocab_file, eval_files, do_lower_case=True):
    """The `CoverageReport` of `vocab_file` on the lines of `eval_files`."""
    from bert_tf.text.tokenization import FullTokenizer

    tokenizer = FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    words = pieces = unknown = 0
    for line in corpus_lines(eval_files):
        for word in tokenizer.basic_tokenizer.tokenize(line):
            split = tokenizer.wordpiece_tokenizer.tokenize(word)
            words += 1
            pieces += len(split)
            unknown += split == ["[UNK]"]
    return CoverageReport(vocab_file, len(tokenizer.vocab), words, pieces, unknown)
