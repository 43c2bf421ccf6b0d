"""CoNLL-2003 from TFDS, as sentences or a `token<TAB>tag` file for the NER reader."""

from absl import logging

from bert_tf.data_prep.tfds_input.builders import as_str
from bert_tf.data_prep.tfds_input.builders import check_split
from bert_tf.data_prep.tfds_input.builders import check_supported
from bert_tf.data_prep.tfds_input.builders import load_builder
from bert_tf.data_prep.tfds_input.builders import rows
from bert_tf.errors import UserInputError

CONLL_CONFIGS = ("conll2003",)
CONLL_SPLITS = ("train", "dev", "test")


def conll2003_sentences(
    split="train", data_dir=None, download=True, tfds_name="conll2003"
):
    """Yields `(tokens, tags)` of each sentence of a TFDS CoNLL-2003 split.

    `tokens` and `tags` are lists of str of equal length; tags are the
    dataset's NER class names (IOB2: O, B-PER, I-PER, ...). Empty rows (TFDS's
    builder stores one after each file's last sentence) are skipped and their
    number logged.
    """
    check_supported(tfds_name, CONLL_CONFIGS)
    builder = load_builder(tfds_name, data_dir, download)
    check_split(builder, tfds_name, split, "split", "tfds_split_*")
    names = builder.info.features["ner"].feature.names
    empty = 0
    for position, row in enumerate(rows(builder, split)):
        tokens = [as_str(token) for token in row["tokens"]]
        tags = [names[int(tag)] for tag in row["ner"]]
        if len(tokens) != len(tags):
            raise UserInputError(
                f"TFDS {tfds_name}[{split}] row {position}: {len(tokens)} tokens "
                f"but {len(tags)} tags"
            )
        if not tokens:
            empty += 1
            continue
        yield tokens, tags
    if empty:
        logging.info(
            "TFDS %s[%s]: skipped %d empty sentence(s)", tfds_name, split, empty
        )


def write_conll_file(sentences, path):
    """Writes `(tokens, tags)` sentences as `token<TAB>tag` lines, a blank line
    after each sentence; returns the number of sentences written.

    Raises:
      ValueError: a token is empty or holds whitespace (it would not read back
        as one token), or tokens and tags differ in length.
    """
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for tokens, tags in sentences:
            if len(tokens) != len(tags):
                raise UserInputError(
                    f"sentence {count}: {len(tokens)} tokens but {len(tags)} tags"
                )
            for token, tag in zip(tokens, tags, strict=True):
                if not token or any(c.isspace() for c in token):
                    raise UserInputError(
                        f"sentence {count}: token {token!r} is empty or holds whitespace"
                    )
                f.write(f"{token}\t{tag}\n")
            f.write("\n")
            count += 1
    return count


def write_conll2003_file(
    split, path, data_dir=None, download=True, tfds_name="conll2003"
):
    """Writes a TFDS CoNLL-2003 split to `path` as a `token<TAB>tag` file (IOB2
    tags) for the NER file reader; returns `path`."""
    count = write_conll_file(
        conll2003_sentences(split, data_dir, download, tfds_name), path
    )
    logging.info("TFDS %s[%s]: wrote %d sentences to %s", tfds_name, split, count, path)
    return path


# ---------------------------------------------------------------------------
# Offline preparation
