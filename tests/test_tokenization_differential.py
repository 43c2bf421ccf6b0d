"""Differential tests: our FullTokenizer against independent tokenizers.

References (each skipped if not importable):

* a step-by-step transcription of the original algorithm (``simulate`` with
  the default ``Pipeline``, tests/original_tokenizer.py), which must agree
  exactly;
* transformers ``BertTokenizer`` (Rust ``tokenizers`` backend) and
  ``BertTokenizerLegacy`` (pure Python);
* tensorflow_text ``BertTokenizer``.

None of the third-party tokenizers reproduces the original exactly. Each known
deviation is modelled as a *quirk*: a small, explicit change to the step-by-step
pipeline (e.g. "WordPiece limit is 100 characters"). For every string where our
output differs from a reference, the reference's full quirk model must
reproduce the reference output exactly (otherwise the disagreement is
unclassified and the test fails), and the disagreement is labelled with the
quirks it needs (those whose removal breaks the reproduction). Separate tests
(tests/test_tokenization_quirks.py) pin the original's behaviour on one minimal
example per quirk.

The strings come from tests/tokenizer_torture.py; the released vocabularies are
read from $BERT_TF_DATA (the comparison tests skip without it).
"""

import collections
import dataclasses
import functools
import os
import re
import unicodedata

import pytest
from original_tokenizer import CJK_RANGES
from original_tokenizer import Pipeline
from original_tokenizer import category
from original_tokenizer import orig_punct
from original_tokenizer import simulate
from tokenizer_torture import generate_torture_strings

from bert_tf.text import tokenization

N_STRINGS = 6000
SEED = 0
VOCABS = ("bert-base-uncased", "bert-base-cased")
CONFIGS = [(v, lower) for v in VOCABS for lower in (True, False)]
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]")


# ---------------------------------------------------------------------------
# Data and outputs (cached: every test shares one tokenization per config)
# ---------------------------------------------------------------------------


def _data_dir():
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        pytest.skip("BERT_TF_DATA is not set (needs the released vocabularies)")
    return data


def _vocab_path(name):
    path = os.path.join(_data_dir(), "vocab", name, "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


@functools.cache
def _strings():
    return tuple(generate_torture_strings(N_STRINGS, SEED, data_dir=_data_dir()))


@functools.cache
def _vocab_set(name):
    # Independent of tokenization.load_vocab: a plain set of stripped lines.
    with open(_vocab_path(name), encoding="utf-8") as f:
        return frozenset(line.strip() for line in f)


@functools.cache
def _ours(name, lower):
    tokenizer = tokenization.FullTokenizer(_vocab_path(name), do_lower_case=lower)
    return tuple(tuple(tokenizer.tokenize(s)) for s in _strings())


@functools.cache
def _hf_fast(name, lower):
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizer(
        vocab=_vocab_path(name),
        do_lower_case=lower,
        tokenize_chinese_chars=True,
        strip_accents=None,
    )
    return tuple(tuple(tokenizer.tokenize(s)) for s in _strings())


@functools.cache
def _hf_legacy(name, lower):
    transformers = pytest.importorskip("transformers")
    if not hasattr(transformers, "BertTokenizerLegacy"):
        pytest.skip("this transformers version has no BertTokenizerLegacy")
    tokenizer = transformers.BertTokenizerLegacy(
        _vocab_path(name),
        do_lower_case=lower,
        never_split=None,
        tokenize_chinese_chars=True,
        strip_accents=None,
    )
    return tuple(tuple(tokenizer.tokenize(s)) for s in _strings())


@functools.cache
def _tf_text(name, lower):
    tf = pytest.importorskip("tensorflow")
    text = pytest.importorskip("tensorflow_text")
    tokenizer = text.BertTokenizer(
        _vocab_path(name), lower_case=lower, token_out_type=tf.string
    )
    # One batched call; [batch, words, pieces] flattened to [batch, pieces].
    pieces = tokenizer.tokenize(tf.constant(list(_strings()))).merge_dims(-2, -1)
    return tuple(tuple(p.decode("utf-8") for p in row) for row in pieces.to_list())


# ---------------------------------------------------------------------------
# Quirks: changes to the step-by-step model of the original
# (tests/original_tokenizer.py)
# ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Quirk:
    name: str
    apply: object  # Pipeline -> Pipeline
    lower_only: bool = False  # has an effect only with do_lower_case=True
    must_occur: bool = True  # expected on the torture strings


def _replace(p, **kwargs):
    return dataclasses.replace(p, **kwargs)


# -- transformers (both) -----------------------------------------------------


def _limit_100_chars(p):
    return _replace(p, max_chars=100)


def _special_literals(p):
    return _replace(p, specials=SPECIAL_TOKENS)


# -- transformers BertTokenizer (Rust tokenizers) -----------------------------


def _private_use_dropped(p):
    # Rust char::is_other covers Co, which the original keeps.
    return _replace(p, drop=lambda c, d=p.drop: d(c) or category(c) == "Co")


def _cjk_ext_e_typo(p):
    # tokenizers' range starts at 0x2B920 instead of 0x2B820.
    return _replace(p, cjk=lambda cp, f=p.cjk: f(cp) and not 0x2B820 <= cp <= 0x2B91F)


def _no_final_sigma(p):
    # Rust lower-cases char by char (char::to_lowercase): no final-sigma rule.
    return _replace(p, context_lower=False)


# -- transformers BertTokenizerLegacy ------------------------------------------


def _all_c_dropped(p):
    # Python _is_control with cat.startswith("C"): also Co, Cn (and Cs).
    return _replace(
        p,
        drop=lambda c, d=p.drop: d(c) or (c not in "\t\n\r" and category(c)[0] == "C"),
    )


def _nfc_before_split(p):
    return _replace(p, nfc=True)


# -- tensorflow_text -----------------------------------------------------------


def _limit_100_bytes(p):
    return _replace(p, max_bytes=100)


def _controls_become_spaces(p):
    # regex_replace(r"\p{Cc}|\p{Cf}", " ") instead of deleting them.
    return _replace(
        p,
        drop=lambda c, d=p.drop: d(c) and category(c) not in ("Cc", "Cf"),
        space=lambda c, s=p.space: s(c) or category(c) in ("Cc", "Cf"),
    )


def _replacement_char_kept(p):
    return _replace(p, drop=lambda c, d=p.drop: d(c) and c != "\ufffd")


_RE2_SPACE = re.compile("[\t\n\f\r ]+")


def _ascii_whitespace_only(p):
    # RE2's \s is [\t\n\f\r ]: Zs other than " " and Zl/Zp stay inside words.
    return _replace(
        p,
        space=lambda c, s=p.space: s(c) and not (category(c) == "Zs" and c != " "),
        split=_RE2_SPACE.split,
    )


# Default_Ignorable_Code_Point (DerivedCoreProperties.txt), removed by ICU's
# NFKC_Casefold.
_DEFAULT_IGNORABLE = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)


_DEFAULT_IGNORABLE_RE = re.compile(
    "[" + "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _DEFAULT_IGNORABLE) + "]"
)


def _nfkc_casefold(text):
    text = _DEFAULT_IGNORABLE_RE.sub("", text)
    text = unicodedata.normalize("NFKD", text).casefold()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text))


def _tf_lower(text):
    # tf_text lower_case: case_fold_utf8 (NFKC_Casefold), NFD, drop \p{Mn}.
    text = unicodedata.normalize("NFD", _nfkc_casefold(text))
    return "".join(c for c in text if category(c) != "Mn")


def _nfkc_casefold_first(p):
    return _replace(p, first_map=_tf_lower)


# -- Unicode tables: per-character differences found by probing ---------------


def _table_quirk(overrides):
    """Quirk replacing single-character predicates by the reference's answers
    (its Unicode tables are a different version than Python's unicodedata)."""

    def apply(p):
        changes = {}
        for field, table in overrides.items():
            if not table:
                continue
            if field == "first_map":
                if p.first_map is not None:
                    changes[field] = _with_char_overrides(p.first_map, table)
            else:
                base = getattr(p, field)
                changes[field] = lambda c, base=base, t=table: t.get(c, base(c))
        return _replace(p, **changes)

    return apply


def _with_char_overrides(fn, table):
    def mapped(text):
        out, run = [], []
        for char in text:
            if char in table:
                out += [fn("".join(run)), table[char]]
                run = []
            else:
                run.append(char)
        return "".join(out) + fn("".join(run))

    return mapped


def _probe_chars():
    chars = {c for s in _strings() for c in s}
    derived = {x for c in chars for x in unicodedata.normalize("NFD", c.lower())}
    return sorted(chars | derived)


@functools.cache
def _hf_fast_table_overrides():
    tokenizers = pytest.importorskip("tokenizers")
    norm = tokenizers.normalizers
    clean = norm.BertNormalizer(
        clean_text=True,
        handle_chinese_chars=False,
        strip_accents=False,
        lowercase=False,
    )
    strip = norm.BertNormalizer(
        clean_text=False,
        handle_chinese_chars=False,
        strip_accents=True,
        lowercase=False,
    )
    lowercase = norm.Lowercase()
    pre = tokenizers.pre_tokenizers.BertPreTokenizer()
    explicit = _build(HF_FAST_QUIRKS[:-1], lower=True)
    drop, punct, is_mn, lower_char = {}, {}, {}, {}
    for c in _probe_chars():
        if c.isspace():
            continue
        dropped = clean.normalize_str(c) == ""
        if dropped != explicit.drop(c):
            drop[c] = dropped
        if dropped:
            continue
        split = [t for t, _ in pre.pre_tokenize_str(f"a{c}b")] == ["a", c, "b"]
        if split != explicit.punct(c):
            punct[c] = split
        if unicodedata.normalize("NFD", c) == c:
            stripped = strip.normalize_str(c) == ""
            if stripped != explicit.is_mn(c):
                is_mn[c] = stripped
        if lowercase.normalize_str(c) != c.lower():
            lower_char[c] = lowercase.normalize_str(c)
    return {"drop": drop, "punct": punct, "is_mn": is_mn, "lower_char": lower_char}


@functools.cache
def _tf_text_table_overrides():
    tf = pytest.importorskip("tensorflow")
    pytest.importorskip("tensorflow_text")
    from tensorflow_text.python.ops import bert_tokenizer

    chars = [c for c in _probe_chars() if c not in "\t\n\r\f "]
    batch = tf.constant(chars)

    def full_match(pattern):
        return tf.strings.regex_full_match(batch, pattern).numpy().tolist()

    # The exact patterns of tensorflow_text/python/ops/bert_tokenizer.py.
    control = full_match(r"\p{Cc}|\p{Cf}")
    punct = full_match(r"[!-/]|[:-@]|[\[-`]|[{-~]|[\p{P}]")
    lowered = bert_tokenizer.BasicTokenizer(lower_case=True).lower_case(batch)
    lowered = [x.decode("utf-8") for x in lowered.numpy()]
    out = {"space": {}, "drop": {}, "punct": {}, "first_map": {}}
    for c, is_control, is_punct, low in zip(
        chars, control, punct, lowered, strict=True
    ):
        if is_control != (category(c) in ("Cc", "Cf")):
            out["space"][c] = is_control
            out["drop"][c] = False
        if is_punct != orig_punct(c):
            out["punct"][c] = is_punct
        if low != _tf_lower(c):
            out["first_map"][c] = low
    return out


# -- Quirk lists ---------------------------------------------------------------

HF_FAST_QUIRKS = [
    Quirk("wordpiece_limit_100_chars", _limit_100_chars),
    Quirk("special_token_literals_kept", _special_literals),
    Quirk("private_use_Co_dropped", _private_use_dropped),
    Quirk("cjk_ext_e_2B820_2B91F_not_split", _cjk_ext_e_typo),
    Quirk("no_final_sigma", _no_final_sigma, lower_only=True),
    # Must stay last: its overrides are probed against the quirks above.
    Quirk("older_unicode_tables", None),
]

HF_LEGACY_QUIRKS = [
    Quirk("wordpiece_limit_100_chars", _limit_100_chars),
    Quirk("special_token_literals_kept", _special_literals),
    Quirk("Co_Cn_dropped_as_control", _all_c_dropped),
    # NFC then NFD+strip when lower-casing equals NFD+strip: cased only.
    Quirk("nfc_before_split", _nfc_before_split),
]

TF_TEXT_QUIRKS = [
    Quirk("wordpiece_limit_100_bytes", _limit_100_bytes),
    Quirk("controls_become_spaces", _controls_become_spaces),
    Quirk("replacement_char_kept", _replacement_char_kept),
    Quirk("only_ascii_whitespace_splits", _ascii_whitespace_only),
    Quirk("nfkc_casefold_lowercasing", _nfkc_casefold_first, lower_only=True),
    Quirk("newer_unicode_tables", None, must_occur=False),
]


def _build(quirks, lower, tables=None):
    p = Pipeline()
    for quirk in quirks:
        if quirk.lower_only and not lower:
            continue
        if quirk.apply is None:
            if tables:
                p = _table_quirk(tables)(p)
            continue
        p = quirk.apply(p)
    return p


def classify(strings, ours, ref, vocab, lower, quirks, tables):
    """Returns (Counter of quirk-name tuples, list of unclassified indices)."""
    full = _build(quirks, lower, tables)
    without = [
        (q.name, _build([x for x in quirks if x is not q], lower, tables))
        for q in quirks
        if lower or not q.lower_only
    ]
    labels, unclassified = collections.Counter(), []
    for i, (text, a, b) in enumerate(zip(strings, ours, ref, strict=True)):
        if a == b:
            continue
        if simulate(text, vocab, lower, full) != b:
            unclassified.append(i)
            continue
        needed = tuple(n for n, p in without if simulate(text, vocab, lower, p) != b)
        labels[needed or ("overdetermined",)] += 1
    return labels, unclassified


def _run_reference(reference, quirks, tables):
    """Classifies all four configurations; returns per-config results."""
    strings = _strings()
    results = {}
    for name, lower in CONFIGS:
        ours, ref = _ours(name, lower), reference(name, lower)
        labels, unclassified = classify(
            strings, ours, ref, _vocab_set(name), lower, quirks, tables
        )
        results[(name, lower)] = (labels, unclassified, ref)
    return results


def _report(title, quirks, results):
    strings = _strings()
    lines = [f"{title} ({len(strings)} strings per configuration)"]
    total_by_quirk = collections.Counter()
    for (name, lower), (labels, unclassified, _) in results.items():
        n = sum(labels.values()) + len(unclassified)
        by_quirk = collections.Counter()
        for needed, count in labels.items():
            for q in needed:
                by_quirk[q] += count
        total_by_quirk.update(by_quirk)
        multi = sum(c for needed, c in labels.items() if len(needed) > 1)
        lines.append(
            f"  {name} lower={lower}: {n} differ, {len(unclassified)} unclassified, "
            f"{multi} need >1 quirk; "
            + ", ".join(f"{q}={c}" for q, c in by_quirk.items())
        )
    lines.append(
        "  all configs: " + ", ".join(f"{q}={c}" for q, c in total_by_quirk.items())
    )
    print("\n".join(lines))
    return total_by_quirk


def _assert_classified(title, quirks, results):
    total_by_quirk = _report(title, quirks, results)
    strings = _strings()
    for (name, lower), (_, unclassified, ref) in results.items():
        examples = [
            f"{strings[i]!r}:\n    ours {_ours(name, lower)[i]}\n    ref  {ref[i]}"
            for i in unclassified[:5]
        ]
        assert not unclassified, (
            f"{title} {name} lower={lower}: {len(unclassified)} unclassified "
            "disagreements, e.g.\n" + "\n".join(examples)
        )
    for quirk in quirks:
        if quirk.must_occur:
            assert total_by_quirk[quirk.name] > 0, f"{quirk.name} never needed"


# ---------------------------------------------------------------------------
# Comparison tests
# ---------------------------------------------------------------------------


def test_torture_strings_are_deterministic_and_varied():
    strings = generate_torture_strings(N_STRINGS, SEED)
    assert len(strings) == N_STRINGS >= 5000
    assert strings == generate_torture_strings(N_STRINGS, SEED)
    assert "" in strings
    chars = {c for s in strings for c in s}
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in chars)
    categories = {category(c) for c in chars}
    wanted = {"Cc", "Cf", "Co", "Cn", "Mn", "Zs", "Zl", "Zp"}
    wanted |= {"Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po"}
    assert wanted <= categories
    for lo, hi in CJK_RANGES:
        assert any(lo <= ord(c) <= hi for c in chars), hex(lo)
    for ch in ("\u00a0", "\u3000", "\u202f", "\u2028", "\u2029", "\u200b", "\ufeff"):
        assert ch in chars
    long_words = [w for s in strings for w in s.split() if 100 <= len(w) <= 250]
    assert len(long_words) > 100


@pytest.mark.parametrize("name,lower", CONFIGS)
def test_ours_equals_step_by_step_original(name, lower):
    vocab = _vocab_set(name)
    ours = _ours(name, lower)
    bad = [
        (s, o)
        for s, o in zip(_strings(), ours, strict=True)
        if simulate(s, vocab, lower) != o
    ]
    assert not bad, bad[:5]


@pytest.mark.slow
def test_transformers_bert_tokenizer_disagreements_are_classified():
    results = _run_reference(_hf_fast, HF_FAST_QUIRKS, _hf_fast_table_overrides())
    _assert_classified("transformers BertTokenizer", HF_FAST_QUIRKS, results)


@pytest.mark.slow
def test_transformers_legacy_tokenizer_disagreements_are_classified():
    results = _run_reference(_hf_legacy, HF_LEGACY_QUIRKS, None)
    _assert_classified("transformers BertTokenizerLegacy", HF_LEGACY_QUIRKS, results)


@pytest.mark.slow
def test_tf_text_tokenizer_disagreements_are_classified():
    results = _run_reference(_tf_text, TF_TEXT_QUIRKS, _tf_text_table_overrides())
    _assert_classified("tensorflow_text BertTokenizer", TF_TEXT_QUIRKS, results)
