"""sentence-transformers models assembled and saved by sentence-transformers
itself from the shipped MiniLM (every pooling mode, Dense, Normalize,
prompts, truncate_dim, tokenizer switches), against `SentenceTransformer`."""

import os

import numpy as np
import pytest

from bert_tf.errors import UserInputError
from bert_tf.layers.sentence_pooling import POOLING_MODES
from bert_tf.models import BertSentenceEncoder

TEXTS = [
    "A man is playing a guitar.",
    "Héllo 中文 wörld café naïve",
    "short",
    "the quick brown fox jumps over the lazy dog " * 12,
    "",
]
TOLERANCE = 2e-5


@pytest.fixture(scope="module")
def st():
    return pytest.importorskip("sentence_transformers")


def _assemble(
    st,
    minilm_dir,
    directory,
    pooling_mode,
    include_prompt,
    dense=None,
    normalize_before_dense=False,
    truncate_dim=None,
):
    import torch
    from sentence_transformers.base.modules import Dense
    from sentence_transformers.base.modules import Normalize
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    torch.manual_seed(0)
    transformer = Transformer(minilm_dir)
    width = 384 * (1 if isinstance(pooling_mode, str) else len(pooling_mode))
    modules = [transformer, Pooling(384, pooling_mode, include_prompt=include_prompt)]
    if dense is not None:
        if normalize_before_dense:
            # The usual projection added to a normalized model (all-MiniLM's
            # own Normalize, then Dense and Normalize).
            modules.append(Normalize())
        modules.append(Dense(width, 48, **dense))
    modules.append(Normalize())
    model = st.SentenceTransformer(
        modules=modules,
        prompts={"query": "query: ", "document": "passage: "},
        default_prompt_name="query",
        similarity_fn_name="dot",
        truncate_dim=truncate_dim,
        device="cpu",
    )
    model.save(directory)
    return directory


@pytest.fixture(scope="module")
def prompted(st, minilm_dir, tmp_path_factory):
    """(ours, theirs) of a weightedmean model, normalized, then a SiLU Dense
    without bias (48 wide) and Normalize again, with prompts, a default
    prompt, include_prompt=False, dot similarity and a saved truncate_dim
    of 32 (sentence-transformers' encode cuts to it)."""
    import torch

    directory = _assemble(
        st,
        minilm_dir,
        str(tmp_path_factory.mktemp("st") / "prompted"),
        "weightedmean",
        False,
        dense={"bias": False, "activation_function": torch.nn.SiLU()},
        normalize_before_dense=True,
        truncate_dim=32,
    )
    assert not os.path.exists(os.path.join(directory, "vocab.txt"))
    return (
        BertSentenceEncoder.from_checkpoint(directory),
        st.SentenceTransformer(directory, device="cpu"),
        directory,
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", [*POOLING_MODES, ("mean", "lasttoken")])
@pytest.mark.parametrize("include_prompt", [True, False])
def test_every_pooling_mode_equals_encode(
    st, minilm_dir, tmp_path, mode, include_prompt
):
    import torch

    directory = _assemble(
        st,
        minilm_dir,
        str(tmp_path / "st"),
        mode,
        include_prompt,
        dense={"activation_function": torch.nn.Tanh()},
    )
    ours = BertSentenceEncoder.from_checkpoint(directory)
    theirs = st.SentenceTransformer(directory, device="cpu")
    for kwargs in ({}, {"prompt_name": "document"}, {"prompt": ""}):
        np.testing.assert_allclose(
            ours.encode(TEXTS, **kwargs),
            theirs.encode(TEXTS, **kwargs),
            atol=TOLERANCE,
            err_msg=str(kwargs),
        )


@pytest.mark.slow
def test_prompts_dense_truncate_dim_and_api(prompted):
    ours, theirs, _ = prompted
    assert ours.prompts == {"query": "query: ", "document": "passage: "}
    assert ours.similarity_fn_name == "dot"
    for kwargs in (
        {},
        {"prompt_name": "document"},
        {"prompt": "Represent this: "},
        {"truncate_dim": 16},
        {"truncate_dim": 16, "normalize_embeddings": True},
        {"batch_size": 2},
    ):
        np.testing.assert_allclose(
            ours.encode(TEXTS, **kwargs),
            theirs.encode(TEXTS, **kwargs),
            atol=TOLERANCE,
            err_msg=str(kwargs),
        )
    query = ours.encode_query(TEXTS[:2])
    document = ours.encode_document(TEXTS[2:])
    np.testing.assert_allclose(query, theirs.encode_query(TEXTS[:2]), atol=TOLERANCE)
    np.testing.assert_allclose(
        document, theirs.encode_document(TEXTS[2:]), atol=TOLERANCE
    )
    # The prompts change the vectors (so the parity above can fail).
    assert np.abs(query - ours.encode(TEXTS[:2], prompt="")).max() > 1e-2
    np.testing.assert_allclose(
        ours.similarity(query, document),
        theirs.similarity(query, document).numpy(),
        atol=TOLERANCE,
    )
    np.testing.assert_allclose(
        ours.similarity_pairwise(query, document[:2]),
        theirs.similarity_pairwise(query, document[:2]).numpy(),
        atol=TOLERANCE,
    )
    single = ours.encode(TEXTS[0])
    assert ours.truncate_dim == 32 and single.shape == (32,)  # the saved width
    tensor = ours.encode(TEXTS[:2], convert_to_tensor=True)
    np.testing.assert_allclose(tensor.numpy(), ours.encode(TEXTS[:2]), atol=1e-6)
    rows = ours.encode(TEXTS[:2], convert_to_numpy=False)
    assert len(rows) == 2 and tuple(rows[0].shape) == (32,)


@pytest.mark.slow
def test_save_loads_back_in_sentence_transformers(prompted, st, tmp_path):
    ours, _, _ = prompted
    directory = str(tmp_path / "saved")
    ours.save(directory)
    theirs = st.SentenceTransformer(directory, device="cpu")
    assert theirs.prompts["query"] == "query: "
    assert theirs.default_prompt_name == "query"
    assert theirs.similarity_fn_name == "dot"
    for kwargs in ({}, {"prompt_name": "document"}):
        np.testing.assert_allclose(
            ours.encode(TEXTS, **kwargs), theirs.encode(TEXTS, **kwargs), atol=TOLERANCE
        )


@pytest.mark.slow
def test_input_checks(prompted):
    ours, _, _ = prompted
    for batch_size in (0, -1):
        with pytest.raises(ValueError, match="batch_size"):
            ours.encode(TEXTS, batch_size=batch_size)
    with pytest.raises(TypeError, match=r"sentences\[0\] is bytes"):
        ours.encode([b"a cat sat"])
    with pytest.raises(TypeError, match=r"sentences\[1\] is NoneType"):
        ours.encode(["a", None])
    with pytest.raises(ValueError, match="prompt_name='nope'"):
        ours.encode(TEXTS, prompt_name="nope")
    with pytest.raises(ValueError, match="truncate_dim=49"):
        ours.encode(TEXTS, truncate_dim=49)


@pytest.mark.slow
@pytest.mark.parametrize(
    "tokenizer_kwargs",
    [
        {"strip_accents": False},
        {"tokenize_chinese_chars": False},
        {"do_lower_case": False},
    ],
)
def test_tokenizer_switches_of_a_directory_are_honoured(
    st, minilm_dir, tmp_path, tokenizer_kwargs
):
    """A sentence-transformers directory whose tokenizer has a switch set
    embeds as sentence-transformers does (issue 50: up to 0.73 apart)."""
    from transformers import AutoTokenizer

    directory = str(tmp_path / "st")
    st.SentenceTransformer(minilm_dir, device="cpu").save(directory)
    AutoTokenizer.from_pretrained(minilm_dir, **tokenizer_kwargs).save_pretrained(
        directory
    )
    if os.path.exists(os.path.join(directory, "vocab.txt")):
        os.remove(os.path.join(directory, "vocab.txt"))
    ours = BertSentenceEncoder.from_checkpoint(directory)
    theirs = st.SentenceTransformer(directory, device="cpu")
    texts = ["Café naïve Zürich", "北京欢迎你 Beijing", "HELLO World"]
    np.testing.assert_allclose(ours.encode(texts), theirs.encode(texts), atol=TOLERANCE)


@pytest.mark.slow
def test_another_models_vocab_file_is_refused(minilm_dir, shared_data):
    cased = os.path.join(shared_data, "vocab", "bert-base-cased", "vocab.txt")
    with pytest.raises(UserInputError, match="vocab_file=.* is not the vocabulary of"):
        BertSentenceEncoder.from_checkpoint(minilm_dir, vocab_file=cased)
    # The model's own vocabulary, named again, is fine.
    BertSentenceEncoder.from_checkpoint(
        minilm_dir, vocab_file=os.path.join(minilm_dir, "vocab.txt")
    )


@pytest.mark.slow
def test_exports_serve_what_encode_gives(prompted, tmp_path):
    """The SavedModel and LiteRT embedding exports of the directory carry
    the default prompt (left out of pooling), the Dense, the Normalize and
    truncate_dim: the served vector is `encode`'s."""
    import tensorflow as tf

    from bert_tf.options.export_options import ExportOptions
    from bert_tf.options.litert_export_options import LiteRTExportOptions
    from bert_tf.options.saved_model_export_options import SavedModelExportOptions
    from bert_tf.serving.litert_model import LiteRTModel
    from bert_tf.tasks import litert_export
    from bert_tf.tasks import saved_model_export

    _, theirs, directory = prompted
    expected = theirs.encode(TEXTS)
    path = saved_model_export.run(
        SavedModelExportOptions(
            model_type="embedding",
            init_checkpoint=directory,
            export=ExportOptions(str(tmp_path / "export")),
        )
    )
    served = tf.saved_model.load(path).signatures["serving_default"]
    np.testing.assert_allclose(
        served(text=tf.constant(TEXTS))["embeddings"].numpy(), expected, atol=TOLERANCE
    )
    litert = LiteRTModel(
        litert_export.run(
            LiteRTExportOptions(
                model_type="embedding",
                init_checkpoint=directory,
                output_file=str(tmp_path / "embedding.tflite"),
                quantization="none",
            )
        )
    )
    np.testing.assert_allclose(litert(text=TEXTS)["embeddings"], expected, atol=5e-5)
    assert expected.shape == (len(TEXTS), 32)  # the saved truncate_dim, served
    # MediaPipe tokenizes the text itself: the default prompt cannot be
    # applied, so the export stops with one line (not vectors 0.7 away).
    # So is a prompt the export is asked for (--prompt_name=document).
    for name in (None, "document"):
        with pytest.raises(UserInputError, match=f"default prompt '{name or 'query'}'"):
            litert_export.run(
                LiteRTExportOptions(
                    model_type="embedding",
                    init_checkpoint=directory,
                    output_file=str(tmp_path / "mediapipe.tflite"),
                    target="mediapipe",
                    prompt_name=name,
                )
            )
    # truncate_dim given to the model is exported too.
    truncated = BertSentenceEncoder.from_checkpoint(directory, truncate_dim=16)
    from bert_tf.serving.saved_model_exporter import export_saved_model

    path = export_saved_model(
        truncated,
        str(tmp_path / "truncated"),
        truncated.preprocessor.vocab_file,
        True,
        truncated.preprocessor.seq_length,
    )
    served = tf.saved_model.load(path).signatures["serving_default"]
    np.testing.assert_allclose(
        served(text=tf.constant(TEXTS))["embeddings"].numpy(),
        theirs.encode(TEXTS, truncate_dim=16),
        atol=TOLERANCE,
    )


@pytest.mark.slow
def test_module_orders_read_as_sentence_transformers_runs_them(prompted, tmp_path):
    """The Normalize, Dense, Normalize orders a modules.json may list after
    Pooling, read from the prompted model's own module folders."""
    import json

    from bert_tf.checkpoints.sentence_transformers_checkpoint import (
        read_sentence_transformers,
    )

    ours, _, directory = prompted
    assert ours.normalize_before_dense and ours.normalize
    listed = json.load(open(os.path.join(directory, "modules.json")))
    kinds = [m["type"].rsplit(".", 1)[-1] for m in listed]
    assert kinds == ["Transformer", "Pooling", "Normalize", "Dense", "Normalize"]
    by_kind = {m["type"].rsplit(".", 1)[-1]: m for m in listed}

    def read(*names):
        case = tmp_path / "_".join(names)
        case.mkdir()
        for entry in os.listdir(directory):
            if entry != "modules.json":
                os.symlink(os.path.join(directory, entry), case / entry)
        modules = [dict(by_kind[n], idx=i) for i, n in enumerate(names)]
        (case / "modules.json").write_text(json.dumps(modules))
        info = read_sentence_transformers(str(case))
        return bool(info.dense_units), info.normalize_before_dense, info.normalize

    base = ("Transformer", "Pooling")
    assert read(*base, "Dense") == (True, False, False)
    assert read(*base, "Dense", "Normalize") == (True, False, True)
    assert read(*base, "Normalize", "Dense") == (True, True, False)
    assert read(*base, "Normalize") == (False, False, True)
    with pytest.raises(UserInputError, match="a second Dense"):
        read(*base, "Dense", "Normalize", "Dense")


def test_a_vocabulary_larger_than_the_config_is_refused_at_load(minilm_dir, tmp_path):
    """vocab.txt with more entries than config.json's vocab_size: one line
    naming both (before: loaded, then an InvalidArgumentError on the first
    text with such a token)."""
    import json

    from bert_tf.models.bert_reranker import BertReranker

    directory = tmp_path / "smaller_config"
    directory.mkdir()
    for entry in os.listdir(minilm_dir):
        if entry != "config.json":
            os.symlink(os.path.join(minilm_dir, entry), directory / entry)
    config = json.load(open(os.path.join(minilm_dir, "config.json")))
    config["vocab_size"] = 30000
    (directory / "config.json").write_text(json.dumps(config))
    with pytest.raises(UserInputError, match=r"30522 entries but vocab_size .* 30000"):
        BertSentenceEncoder.from_checkpoint(str(directory))
    with pytest.raises(UserInputError, match=r"30522 entries but vocab_size .* 30000"):
        BertReranker.from_checkpoint(str(directory), new_head=True)


@pytest.mark.slow
def test_a_stale_vocab_txt_beside_tokenizer_json_is_not_read(minilm_dir, tmp_path):
    """A vocab.txt that disagrees with tokenizer.json in one directory:
    tokenizer.json is read, as sentence-transformers reads it (before: the
    vocab.txt, vectors up to 2.3 away)."""
    from bert_tf.text.tokenizer_json import read_tokenizer_files

    directory = tmp_path / "stale_vocab"
    directory.mkdir()
    for entry in os.listdir(minilm_dir):
        if entry != "vocab.txt":
            os.symlink(os.path.join(minilm_dir, entry), directory / entry)
    lines = open(os.path.join(minilm_dir, "vocab.txt"), encoding="utf-8").readlines()
    cat, dog = lines.index("cat\n"), lines.index("dog\n")
    lines[cat], lines[dog] = lines[dog], lines[cat]
    (directory / "vocab.txt").write_text("".join(lines), encoding="utf-8")
    assert read_tokenizer_files(str(directory)).vocab_file.endswith("tokenizer.json")
    texts = ["a cat chases a dog"]
    np.testing.assert_allclose(
        BertSentenceEncoder.from_checkpoint(str(directory)).encode(texts),
        BertSentenceEncoder.from_checkpoint(minilm_dir).encode(texts),
        atol=1e-6,
    )


@pytest.mark.slow
def test_added_tokens_are_one_line_not_other_vectors(minilm_dir, tmp_path):
    """Tokens added with tokenizer.add_tokens (saved by transformers): one
    line naming them (before: split into word pieces, vectors 1.15 away)."""
    from transformers import AutoTokenizer

    directory = tmp_path / "added"
    directory.mkdir()
    for entry in os.listdir(minilm_dir):
        if not entry.startswith(("tokenizer", "vocab", "special_tokens")):
            os.symlink(os.path.join(minilm_dir, entry), directory / entry)
    tokenizer = AutoTokenizer.from_pretrained(minilm_dir)
    tokenizer.add_tokens(["covid19vaccine", "<ent>"])
    tokenizer.save_pretrained(str(directory))
    with pytest.raises(UserInputError, match=r"2 added token\(s\) .*'covid19vaccine'"):
        BertSentenceEncoder.from_checkpoint(str(directory))
