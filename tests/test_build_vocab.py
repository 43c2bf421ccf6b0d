"""build_vocab on the shared Wikipedia excerpt: the original's layout, the same
file every run, tokenisation equal to Hugging Face's WordPiece, the coverage
report against an independent count, and bad inputs named in one line."""

import glob
import os
import subprocess
import sys

import pytest

from bert_tf.data_prep.vocabulary.build import build_vocab
from bert_tf.data_prep.vocabulary.report import coverage
from bert_tf.data_prep.vocabulary.training import train_wordpiece
from bert_tf.errors import UserInputError

tokenizers = pytest.importorskip("tokenizers")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(REPO, "data_prep", "build_vocab.py")
VOCAB_SIZE = 8192


@pytest.fixture(scope="module")
def corpus(shared_data, tmp_path_factory):
    """prepare_corpus's 10 shards of the dump: (train shards 1-9, held-out 0)."""
    pytest.importorskip("wikiextractor")
    from bert_tf.data_prep.corpus.preparation import prepare_corpus

    out = str(tmp_path_factory.mktemp("corpus"))
    dump = glob.glob(os.path.join(shared_data, "wikipedia", "*.bz2"))
    prepare_corpus(dump, out, num_shards=10)
    shards = sorted(glob.glob(os.path.join(out, "corpus-*-of-00010.txt")))
    return shards[1:], shards[0]


@pytest.fixture(scope="module")
def bert_base_vocab(shared_data):
    return os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")


@pytest.fixture(scope="module")
def built(corpus, bert_base_vocab, tmp_path_factory):
    """(vocab.txt path, printed lines) of an 8,192-entry uncased vocabulary."""
    train, heldout = corpus
    path = str(tmp_path_factory.mktemp("vocab") / "vocab.txt")
    lines = build_vocab(
        train,
        path,
        VOCAB_SIZE,
        eval_file=heldout,
        compare_vocab_file=bert_base_vocab,
    )
    return path, lines


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def test_layout_is_the_originals(built, bert_base_vocab):
    path, _ = built
    tokens = read_lines(path)
    assert len(tokens) == VOCAB_SIZE == len(set(tokens))
    assert tokens[0] == "[PAD]"
    assert tokens[1:100] == [f"[unused{i}]" for i in range(99)]
    # [UNK] [CLS] [SEP] [MASK] at bert-base-uncased's own ids.
    original = read_lines(bert_base_vocab)
    for token in ("[UNK]", "[CLS]", "[SEP]", "[MASK]"):
        assert tokens.index(token) == original.index(token)
    words = tokens[104:]
    first_piece = next(i for i, t in enumerate(words) if t.startswith("##"))
    assert all(t.startswith("##") for t in words[first_piece:])
    assert not any(t.startswith("##") for t in words[:first_piece])
    # Single characters first, and every ##c beside its c (WordPiece can spell
    # any word of the alphabet).
    singles = [t for t in words[:first_piece] if len(t) == 1]
    assert words[: len(singles)] == singles and len(singles) > 50
    assert {t[2:] for t in words[first_piece:] if len(t) == 3} <= set(singles)
    # Uncased: no capital letters, no accents.
    assert all(t == t.lower() for t in words)
    assert "é" not in words and "e" in words


def heldout_sentences(corpus, count):
    with open(corpus[1], encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip()][:count]


def test_full_tokenizer_equals_hugging_face_wordpiece(built, corpus):
    """FullTokenizer with the new vocabulary gives HF tokenizers' own
    BertWordPieceTokenizer's pieces on held-out pages."""
    from bert_tf.text.tokenization import FullTokenizer

    path, _ = built
    sentences = heldout_sentences(corpus, 1500)
    reference = tokenizers.BertWordPieceTokenizer(path, lowercase=True)
    ours = FullTokenizer(path, do_lower_case=True)
    expected = [reference.encode(s, add_special_tokens=False).tokens for s in sentences]
    got = [ours.tokenize(s) for s in sentences]
    differ = [
        (s, a, b) for s, a, b in zip(sentences, got, expected, strict=True) if a != b
    ]
    assert not differ, differ[:2]


@pytest.mark.slow  # builds tensorflow-text's graph
def test_in_graph_preprocessor_reads_the_new_vocabulary(built, corpus):
    from bert_tf.text.preprocessing import BertPreprocessor
    from bert_tf.text.tokenization import FullTokenizer

    path, _ = built
    sentences = heldout_sentences(corpus, 1500)
    ours = FullTokenizer(path, do_lower_case=True)
    ids = [ours.convert_tokens_to_ids(ours.tokenize(s)) for s in sentences]
    in_graph = BertPreprocessor(path, True, 128).tokenize(sentences).to_list()
    assert in_graph == ids


def test_report_counts_equal_an_independent_count(built, corpus, bert_base_vocab):
    """[UNK] rate and pieces per word, recounted with HF's tokenizer (words:
    its word ids), for the new vocabulary and bert-base-uncased's."""
    path, lines = built
    with open(corpus[1], encoding="utf-8") as f:
        sentences = [line.strip() for line in f if line.strip()]
    for vocab in (path, bert_base_vocab):
        reference = tokenizers.BertWordPieceTokenizer(vocab, lowercase=True)
        words = pieces = unknown = 0
        for encoding in reference.encode_batch(sentences, add_special_tokens=False):
            by_word = {}
            for word, token in zip(encoding.word_ids, encoding.tokens, strict=True):
                by_word.setdefault(word, []).append(token)
            words += len(by_word)
            pieces += len(encoding.tokens)
            unknown += sum(split == ["[UNK]"] for split in by_word.values())
        report = coverage(vocab, [corpus[1]])
        assert (report.words, report.pieces, report.unknown_words) == (
            words,
            pieces,
            unknown,
        )
    ours, base = coverage(path, [corpus[1]]), coverage(bert_base_vocab, [corpus[1]])
    # A vocabulary of 8,192 learnt from 2.3 MB spells held-out pages with few
    # [UNK]s, in more pieces than bert-base-uncased's 30,522 entries.
    assert ours.unk_rate < 0.001
    assert base.pieces_per_word < ours.pieces_per_word < 1.5
    assert any(ours.line() in line for line in lines)
    report_file = os.path.join(os.path.dirname(path), "vocab_report.json")
    assert os.path.exists(report_file)


def test_same_corpus_gives_the_same_file_every_run(corpus, tmp_path):
    """Through the command line, twice (the trainer's hash maps are seeded
    per process): the same bytes."""
    train, _ = corpus
    outputs = []
    for run in range(2):
        output = tmp_path / f"vocab{run}.txt"
        result = subprocess.run(
            [
                sys.executable,
                SCRIPT,
                "--input_file=" + ",".join(train),
                "--vocab_size=3000",
                f"--output_file={output}",
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        assert "3,000 entries" in result.stdout
        outputs.append(output.read_bytes())
    assert outputs[0] == outputs[1]


def test_cased_vocabulary_keeps_case(corpus):
    train, _ = corpus
    tokens = train_wordpiece(train[:3], 4000, do_lower_case=False)
    assert "The" in tokens and "the" in tokens
    assert any(t != t.lower() for t in tokens[104:])


def test_small_corpus_gives_fewer_entries_and_says_so(shared_data, tmp_path):
    text = os.path.join(shared_data, "bert_sample_text", "sample_text.txt")
    lines = build_vocab([text], str(tmp_path / "vocab.txt"), 30522)
    entries = len(read_lines(tmp_path / "vocab.txt"))
    assert entries < 30522
    assert any(f"gives only {entries:,} entries" in line for line in lines)


def test_bad_inputs_are_named(corpus, tmp_path):
    train, heldout = corpus
    out = str(tmp_path / "vocab.txt")
    with pytest.raises(UserInputError, match="vocab_size=50: must be at least"):
        build_vocab(train, out, 50)
    with pytest.raises(UserInputError, match="output_file=.* is also an input"):
        build_vocab(train, train[0], 1000)
    with pytest.raises(UserInputError, match="eval_file=.*: no such file"):
        build_vocab(train, out, 1000, eval_file=str(tmp_path / "none.txt"))
    with pytest.raises(UserInputError, match="give --eval_file too"):
        build_vocab(train, out, 1000, compare_vocab_file=heldout)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n  \n")
    with pytest.raises(UserInputError, match="blank.txt holds no text"):
        build_vocab([str(blank)], out, 1000)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("first line\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(UserInputError, match=r"latin1.txt:2: not UTF-8"):
        build_vocab([str(latin1)], out, 1000)
    assert not os.path.exists(out) and not os.path.exists(out + ".partial")


def test_command_line_error_is_one_line_and_exit_2(corpus, tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            SCRIPT,
            f"--input_file={corpus[0][0]}",
            "--vocab_size=20",
            f"--output_file={tmp_path / 'vocab.txt'}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "vocab_size=20" in lines[0], result.stderr
