"""What build_vocab is asked to do: which corpus, what size, where to."""

import dataclasses

from bert_tf.options.option import option


@dataclasses.dataclass(frozen=True)
class VocabOptions:
    """build_vocab's flags.

    Args:
      input_file: comma-separated paths and globs of the corpus.
      output_file: the vocab.txt written.
      vocab_size, do_lower_case, num_unused, min_frequency, limit_alphabet:
        what is trained (`train_wordpiece`).
      eval_file, compare_vocab_file: held-out text to measure the vocabulary
        on, and another vocabulary to measure beside it.

    Example:

    ```python
    VocabOptions("/tmp/corpus/corpus-0000[1-9]-of-00010.txt", "/tmp/vocab.txt")
    ```
    """

    input_file: str = option(
        help="The corpus: a path or glob, or a comma-separated list of them "
        "(text, e.g. prepare_corpus's shards: one sentence per line)."
    )
    output_file: str = option(
        help="The vocab.txt to write (the original's format: one entry a line); "
        "with --eval_file, its report goes beside it as <name>_report.json."
    )
    vocab_size: int = option(
        30522,
        "Entries in all, special tokens and [unusedN] slots included (the "
        "bert_config.json's vocab_size). A corpus too small for it gives fewer, "
        "and says so.",
        lower_bound=1,
    )
    do_lower_case: bool = option(
        True,
        "Lower-case and strip accents before training (an uncased model; "
        "false for a cased one). Pass the same value to the other tools.",
    )
    num_unused: int = option(
        99,
        "[unusedN] slots after [PAD], free for tokens added later; 99 puts "
        "[UNK], [CLS], [SEP] and [MASK] at bert-base-uncased's ids 100-103.",
        lower_bound=0,
    )
    min_frequency: int = option(
        2, "A piece must occur this often in the corpus.", lower_bound=1
    )
    limit_alphabet: int = option(
        1000,
        "At most this many single characters, the most frequent; rarer ones "
        "become [UNK].",
        lower_bound=1,
    )
    eval_file: str = option(
        None,
        "Held-out text (e.g. prepare_corpus's shard 0): the [UNK] rate and word "
        "pieces per word of the new vocabulary on it are printed and written "
        "to the report.",
    )
    compare_vocab_file: str = option(
        None,
        "Another vocab.txt (e.g. bert-base-uncased's) measured on --eval_file "
        "beside the new one.",
    )
