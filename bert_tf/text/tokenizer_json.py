"""Reading a Hugging Face tokenizer directory: `tokenizer.json` and
`tokenizer_config.json`, the files transformers 5 and sentence-transformers 6
write (often without a vocab.txt).

A BERT `tokenizer.json` holds a WordPiece model (its `vocab`, token -> id), a
`BertNormalizer` (`lowercase`, `strip_accents`, `handle_chinese_chars`,
`clean_text`) and a `BertPreTokenizer`: the original's FullTokenizer with
three switches. `TokenizerFiles` is what a directory says, in this
project's terms; a `tokenizer.json` path is accepted wherever a vocab.txt is
(`tokenization.load_vocab` reads both). A BPE or Unigram tokenizer (RoBERTa,
XLM-R, T5, ...) is refused with one line naming the file.
"""

import collections
import dataclasses
import functools
import json
import os

from bert_tf.errors import UserInputError

TOKENIZER_FILE = "tokenizer.json"
TOKENIZER_CONFIG_FILE = "tokenizer_config.json"
VOCAB_FILE = "vocab.txt"
# What the in-graph and Python tokenizers reproduce.
_NORMALIZERS = ("BertNormalizer",)
_PRE_TOKENIZERS = ("BertPreTokenizer",)
# tokenizer_config.json keys (the slow tokenizer's arguments) and the
# BertNormalizer's keys for the same switches.
_CONFIG_KEYS = {
    "do_lower_case": "lowercase",
    "strip_accents": "strip_accents",
    "tokenize_chinese_chars": "handle_chinese_chars",
}


def is_tokenizer_json(path):
    """Whether `path` names a tokenizer.json (any `*.json`), not a vocab.txt."""
    return os.fspath(path).endswith(".json")


@dataclasses.dataclass(frozen=True)
class TokenizerFiles:
    """A directory's tokenizer, in this project's terms.

    `vocab_file` is its vocab.txt, else its tokenizer.json; the settings are
    None where the files do not say. `strip_accents` None means "as
    `do_lower_case`" (the original's rule, and Hugging Face's).
    """

    vocab_file: str | None
    do_lower_case: bool | None = None
    strip_accents: bool | None = None
    tokenize_chinese_chars: bool | None = None
    model_max_length: int | None = None

    def options(self):
        """The `BertPreprocessor`/`FullTokenizer` keyword arguments beyond
        `do_lower_case`."""
        return {
            "strip_accents": self.strip_accents,
            "tokenize_chinese_chars": self.tokenize_chinese_chars,
        }


def read_json(path):
    """The JSON file `path`; invalid JSON is a UserInputError naming it."""
    with open(path, encoding="utf-8") as f:
        try:
            return json.load(f)
        except json.JSONDecodeError as e:
            raise UserInputError(f"{path}: not valid JSON: {e}") from e


def read_json_or_empty(path):
    """`read_json(path)`, or {} when there is no such file (an optional one)."""
    return read_json(path) if os.path.exists(path) else {}


@functools.lru_cache(maxsize=8)
def _parsed(path, mtime_ns, size):
    del mtime_ns, size  # the cache key: a rewritten file is read again
    data = read_json(path)
    model = data.get("model") or {}
    kind = model.get("type")
    if kind != "WordPiece":
        raise UserInputError(
            f"{path}: a {kind or 'untyped'} tokenizer; bert_tf reads BERT "
            "WordPiece tokenizers only (RoBERTa/GPT BPE and T5/XLM-R Unigram are "
            "not supported)"
        )
    prefix = model.get("continuing_subword_prefix", "##")
    if prefix != "##":
        raise UserInputError(
            f"{path}: WordPiece continuing_subword_prefix {prefix!r} is not "
            "supported (BERT's is '##')"
        )
    normalizer = data.get("normalizer") or {}
    if normalizer and normalizer.get("type") not in _NORMALIZERS:
        raise UserInputError(
            f"{path}: normalizer {normalizer.get('type')!r} is not supported "
            f"(bert_tf reproduces {', '.join(_NORMALIZERS)})"
        )
    pre_tokenizer = data.get("pre_tokenizer") or {}
    if pre_tokenizer and pre_tokenizer.get("type") not in _PRE_TOKENIZERS:
        raise UserInputError(
            f"{path}: pre_tokenizer {pre_tokenizer.get('type')!r} is not supported "
            f"(bert_tf reproduces {', '.join(_PRE_TOKENIZERS)})"
        )
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise UserInputError(f"{path}: the WordPiece model has no vocab")
    tokens = sorted(vocab, key=vocab.get)
    ids = [vocab[t] for t in tokens]
    if ids != list(range(len(ids))):
        raise UserInputError(
            f"{path}: the WordPiece ids are not 0..{len(ids) - 1} without gaps"
        )
    # Tokens added with tokenizer.add_tokens (ids after the vocabulary, the
    # embeddings resized): transformers splits them off before WordPiece;
    # this project's tokenizers (in the graph too) do not, so their texts
    # would embed otherwise. One line, not other vectors.
    added = [
        entry.get("content")
        for entry in data.get("added_tokens") or []
        if entry.get("content") not in vocab
    ]
    if added:
        shown = ", ".join(repr(t) for t in added[:5])
        raise UserInputError(
            f"{path}: {len(added)} added token(s) outside the WordPiece "
            f"vocabulary ({shown}{', ...' if len(added) > 5 else ''}): "
            "transformers splits them off before WordPiece, bert_tf's "
            "tokenizers do not; not supported"
        )
    settings = {}
    if normalizer:
        settings = {
            "do_lower_case": bool(normalizer.get("lowercase", True)),
            "strip_accents": normalizer.get("strip_accents"),
            "tokenize_chinese_chars": bool(
                normalizer.get("handle_chinese_chars", True)
            ),
        }
    return tuple(tokens), settings


def _parse(path):
    path = os.fspath(path)
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"tokenizer file not found: {path}") from None
    return _parsed(path, stat.st_mtime_ns, stat.st_size)


def tokenizer_json_vocab(path):
    """The token -> id map of tokenizer.json `path` (ordered by id), as
    `tokenization.load_vocab` returns for a vocab.txt.

    Raises:
        UserInputError: not a WordPiece tokenizer, or one this project does
            not reproduce (naming the file).
    """
    tokens, _ = _parse(path)
    return collections.OrderedDict((t, i) for i, t in enumerate(tokens))


def tokenizer_json_vocab_bytes(path):
    """tokenizer.json `path`'s vocabulary as the bytes of a vocab.txt."""
    tokens, _ = _parse(path)
    return ("\n".join(tokens) + "\n").encode("utf-8")


def tokenizer_json_settings(path):
    """{"do_lower_case", "strip_accents", "tokenize_chinese_chars"} of
    tokenizer.json `path`'s BertNormalizer ({} without one)."""
    return dict(_parse(path)[1])


def read_tokenizer_files(directory):
    """The tokenizer of a Hugging Face (or sentence-transformers) directory.

    The vocabulary is vocab.txt when present, else tokenizer.json. The
    settings are tokenizer.json's normalizer (what the fast tokenizer that
    transformers 5 loads runs), else tokenizer_config.json's keys.

    Raises:
        UserInputError: a tokenizer.json that is not BERT WordPiece.
    """
    directory = os.fspath(directory)
    vocab = os.path.join(directory, VOCAB_FILE)
    tokenizer_json = os.path.join(directory, TOKENIZER_FILE)
    config_path = os.path.join(directory, TOKENIZER_CONFIG_FILE)
    config = read_json(config_path) if os.path.exists(config_path) else {}
    settings = {key: config.get(key) for key in _CONFIG_KEYS}
    if os.path.exists(tokenizer_json):
        # Parsed also beside a vocab.txt: a BPE tokenizer.json with a stray
        # vocab.txt is still not a BERT tokenizer.
        settings.update(tokenizer_json_settings(tokenizer_json))
    vocab_file = None
    if os.path.exists(vocab):
        vocab_file = vocab
        if os.path.exists(tokenizer_json) and not _same_tokens(vocab, tokenizer_json):
            # transformers 5 and sentence-transformers read tokenizer.json:
            # a stale vocab.txt beside it would embed other ids.
            from absl import logging

            logging.warning(
                "%s differs from %s: reading %s, as transformers and "
                "sentence-transformers do",
                vocab,
                tokenizer_json,
                TOKENIZER_FILE,
            )
            vocab_file = tokenizer_json
    elif os.path.exists(tokenizer_json):
        vocab_file = tokenizer_json
    max_length = config.get("model_max_length")
    return TokenizerFiles(
        vocab_file=vocab_file,
        do_lower_case=settings["do_lower_case"],
        strip_accents=settings["strip_accents"],
        tokenize_chinese_chars=settings["tokenize_chinese_chars"],
        model_max_length=max_length if isinstance(max_length, int) else None,
    )


def _same_tokens(vocab_txt, tokenizer_json):
    """Whether vocab.txt holds tokenizer.json's tokens, with the same ids."""
    with open(vocab_txt, encoding="utf-8", errors="replace") as f:
        lines = [line.strip() for line in f]
    while lines and not lines[-1]:
        lines.pop()  # a trailing blank line adds no token
    return lines == list(_parse(tokenizer_json)[0])
