"""What prepare_corpus is asked to do: which inputs, which rules, where to."""

import dataclasses

from bert_tf.data_prep.corpus.cleaning import CleaningRules
from bert_tf.data_prep.corpus.readers import INPUT_FORMATS
from bert_tf.errors import UserInputError
from bert_tf.options.beam_options import BeamOptions
from bert_tf.options.option import fields_by_name
from bert_tf.options.option import option

_RULES = fields_by_name(CleaningRules)


@dataclasses.dataclass(frozen=True)
class CorpusOptions:
    """prepare_corpus's flags.

    Args:
      input_file: comma-separated paths and globs.
      output_dir: where the shards and ``corpus_summary.json`` go.
      input_format, text_column: how the inputs are read.
      num_shards, random_seed: the shard layout.
      min_document_chars, min_line_words, drop_markup_lines: `CleaningRules`.
      dedup_threshold: the Jaccard similarity of near duplicates.
      beam: the Beam runner, if any (`BeamOptions`).

    Example:

    ```python
    CorpusOptions("enwiki-latest-pages-articles1.xml.bz2", "/tmp/corpus")
    ```
    """

    input_file: str = option(
        help="Input files: a path or glob, or a comma-separated list of them "
        "(MediaWiki XML dumps .xml/.bz2, JSON-lines, Parquet, plain text)."
    )
    output_dir: str = option(
        help="Where corpus-SSSSS-of-NNNNN.txt (one sentence per line, a blank "
        "line between documents: create_pretraining_data's --input_file) and "
        "corpus_summary.json are written."
    )
    input_format: str = option(
        "auto",
        "How the inputs are read. auto: by name (.xml or *pages-articles*.bz2: "
        "a Wikipedia dump; .jsonl/.json; .parquet; anything else: plain text, "
        "a blank line between documents).",
        choices=INPUT_FORMATS,
    )
    text_column: str = option(
        "text", "The text field of JSON-lines rows and Parquet columns."
    )
    num_shards: int = option(
        1,
        "Output shards. A document's shard is a seeded hash of its key (a page's "
        "wiki and title, a row's file and line), so each shard is a random "
        "split: e.g. shard 0 of 10 as held-out pages.",
        lower_bound=1,
    )
    random_seed: int = option(
        12345, "Seed of the shard assignment and of the order within a shard."
    )
    min_document_chars: int = option(
        _RULES["min_document_chars"].default,
        "Drop a document with fewer characters of text after line cleaning.",
        lower_bound=0,
    )
    min_line_words: int = option(
        _RULES["min_line_words"].default,
        "Drop a line (paragraph) of fewer words: list items, captions, stubs.",
        lower_bound=0,
    )
    drop_markup_lines: bool = option(
        _RULES["drop_markup_lines"].default,
        "Drop a line still holding markup: {{ }} {| |} [[ ]] or a tag (<ref, "
        "<onlyinclude>, ...).",
    )
    dedup_threshold: float = option(
        0.8,
        "Near-duplicate removal: of two documents whose MinHash-estimated "
        "Jaccard similarity (word 5-grams) is at least this, the one with the "
        "larger key is dropped. 1.0 drops only near-identical ones.",
    )
    beam: BeamOptions = BeamOptions()

    def __post_init__(self):
        if not 0 < self.dedup_threshold <= 1:
            raise UserInputError(
                f"--dedup_threshold={self.dedup_threshold}: must be in (0, 1]"
            )

    def rules(self):
        """The cleaning thresholds (`CleaningRules`)."""
        return CleaningRules(**{name: getattr(self, name) for name in _RULES})
