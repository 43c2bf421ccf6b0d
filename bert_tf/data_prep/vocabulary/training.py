"""Trains a WordPiece vocabulary and lays it out as the original's vocab.txt.

The trainer is Hugging Face `tokenizers`' `WordPieceTrainer` (measured against
tensorflow-text's `bert_vocab_from_dataset` on the shared Wikipedia excerpt:
0.8 s against 93 s for the same size, and fewer pieces per held-out word). Its
normaliser and pre-tokeniser are `BertNormalizer` and `BertPreTokenizer`, the
same splitting as the original's `BasicTokenizer` (lower case and accent
stripping together, CJK characters as words, punctuation split off), so the
pieces it learns are the ones `FullTokenizer` will look for.

Two passes make the result the same on every run: the trainer numbers the
`##c` continuation characters in a hash map's order, and ties between equally
frequent merges are broken by those numbers. The first pass finds the
alphabet; the second is given the sorted `##c` characters as fixed entries.
"""

import os

from bert_tf.data_prep.strict_utf8 import decode_line
from bert_tf.errors import UserInputError

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
PIECE_PREFIX = "##"
INSTALL = 'pip install "bert_tf[vocab]"'


def import_tokenizers():
    """The `tokenizers` module, or one line naming the install."""
    try:
        import tokenizers
    except ImportError as error:
        raise UserInputError(
            f"build_vocab needs Hugging Face tokenizers, not installed: {INSTALL}"
        ) from error
    return tokenizers


def corpus_lines(input_files, progress=None):
    """The non-blank lines of `input_files`, decoded strictly as UTF-8
    (a bad byte is an error naming the file and line); `progress`, if given,
    is called with each line's byte count."""
    for path in input_files:
        with open(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                line = decode_line(raw, path, number).strip()
                if line:
                    if progress is not None:
                        progress(len(raw))
                    yield line


def _trainer_tokenizer(tokenizers, do_lower_case):
    tokenizer = tokenizers.Tokenizer(tokenizers.models.WordPiece(unk_token="[UNK]"))
    # strip_accents=None: accents go with lower case, as BasicTokenizer does.
    tokenizer.normalizer = tokenizers.normalizers.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=True,
        strip_accents=None,
        lowercase=do_lower_case,
    )
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.BertPreTokenizer()
    return tokenizer


def _train(
    tokenizers, lines, do_lower_case, vocab_size, fixed, min_frequency, limit_alphabet
):
    tokenizer = _trainer_tokenizer(tokenizers, do_lower_case)
    trainer = tokenizers.trainers.WordPieceTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(fixed),
        limit_alphabet=limit_alphabet,
        continuing_subword_prefix=PIECE_PREFIX,
        show_progress=False,
    )
    tokenizer.train_from_iterator(lines, trainer=trainer)
    vocab = tokenizer.get_vocab()
    return sorted(vocab, key=vocab.get)


def train_wordpiece(
    input_files,
    vocab_size,
    do_lower_case=True,
    num_unused=99,
    min_frequency=2,
    limit_alphabet=1000,
    progress=None,
):
    """A WordPiece vocabulary of at most `vocab_size` entries, in the
    original's layout (`original_layout`).

    Args:
      input_files: text files (a prepared corpus: one sentence per line).
      vocab_size: entries in all, the special and [unusedN] ones included.
      do_lower_case: lower-case and strip accents first (an uncased model).
      num_unused: [unusedN] slots after [PAD] (99 puts [UNK], [CLS], [SEP]
        and [MASK] at bert-base-uncased's ids 100-103).
      min_frequency: a merge must be seen this often.
      limit_alphabet: at most this many single characters (the rest are
        [UNK]).
      progress: called as progress(stage, nbytes) for each line read, stage
        1 (the alphabet) or 2 (the vocabulary); or None.

    Example:

    ```python
    tokens = train_wordpiece(["corpus-00001-of-00010.txt"], 8192)
    ```
    """
    tokenizers = import_tokenizers()
    smallest = len(SPECIAL_TOKENS) + num_unused + 1
    if vocab_size < smallest:
        raise UserInputError(
            f"vocab_size={vocab_size}: must be at least {smallest} (the special "
            f"tokens and {num_unused} [unusedN] slots, with num_unused={num_unused})",
            argument="vocab_size",
        )
    trained_size = vocab_size - num_unused
    # Pass 1: the alphabet (its ##c entries in an order that varies by run).
    first = _train(
        tokenizers,
        corpus_lines(input_files, progress and (lambda n: progress(1, n))),
        do_lower_case,
        len(SPECIAL_TOKENS),
        SPECIAL_TOKENS,
        min_frequency,
        limit_alphabet,
    )
    pieces = sorted(t for t in first if t.startswith(PIECE_PREFIX))
    if len(first) == len(SPECIAL_TOKENS):
        raise UserInputError(
            f"input_file: {', '.join(input_files)} holds no text to learn from",
            argument="input_file",
        )
    fixed = (*SPECIAL_TOKENS, *pieces)
    if trained_size < len(fixed):
        raise UserInputError(
            f"vocab_size={vocab_size}: the corpus has {len(pieces)} continuation "
            f"characters (##c) besides {len(SPECIAL_TOKENS)} special tokens and "
            f"{num_unused} [unusedN] slots; use at least {len(fixed) + num_unused}",
            argument="vocab_size",
        )
    tokens = _train(
        tokenizers,
        corpus_lines(input_files, progress and (lambda n: progress(2, n))),
        do_lower_case,
        trained_size,
        fixed,
        min_frequency,
        limit_alphabet,
    )
    return original_layout(tokens, num_unused)


def original_layout(tokens, num_unused):
    """The original's vocab.txt order: [PAD], [unused0..num_unused-1], [UNK],
    [CLS], [SEP], [MASK], then whole words (single characters first), then
    ## pieces, each group in the trainer's order (most frequent first)."""
    specials = set(SPECIAL_TOKENS)
    rest = [t for t in tokens if t not in specials]
    words = [t for t in rest if not t.startswith(PIECE_PREFIX)]
    singles = [t for t in words if len(t) == 1]
    longer = [t for t in words if len(t) != 1]
    pieces = [t for t in rest if t.startswith(PIECE_PREFIX)]
    return [
        "[PAD]",
        *(f"[unused{i}]" for i in range(num_unused)),
        *SPECIAL_TOKENS[1:],
        *singles,
        *longer,
        *pieces,
    ]


def write_vocab(tokens, output_file):
    """Writes one token a line, atomically (a `.partial` file renamed)."""
    partial = output_file + ".partial"
    with open(partial, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(token + "\n" for token in tokens)
    os.replace(partial, output_file)
