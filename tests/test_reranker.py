"""BertReranker against sentence-transformers' CrossEncoder on SQuAD pairs."""

import json
import os

import numpy as np
import pytest
from cross_encoder_fixtures import cross_encoder_dir  # noqa: F401  (fixture)
from safetensors.numpy import load_file
from safetensors.numpy import save_file
from serving_ops import STOCK_TF_TEXT_OPS
from serving_ops import ops_outside_core_tensorflow

from bert_tf.errors import UserInputError


def squad_pairs(shared_data, num_paragraphs=8):
    """(question, passage) pairs from SQuAD v1.1 dev: each question with its
    own paragraph and with a paragraph of another article."""
    with open(os.path.join(shared_data, "squad/dev-v1.1.json"), encoding="utf-8") as f:
        articles = json.load(f)["data"]
    own = [p for p in articles[0]["paragraphs"][:num_paragraphs]]
    other = [p["context"] for p in articles[5]["paragraphs"][:num_paragraphs]]
    pairs = []
    for paragraph, unrelated in zip(own, other, strict=True):
        for qa in paragraph["qas"][:2]:
            pairs.append((qa["question"], paragraph["context"]))
            pairs.append((qa["question"], unrelated))
    return pairs


@pytest.mark.slow
def test_scores_equal_cross_encoder_predict(cross_encoder_dir, shared_data, tmp_path):  # noqa: F811
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from bert_tf.models.bert_reranker import BertReranker

    pairs = squad_pairs(shared_data)
    reference = sentence_transformers.CrossEncoder(cross_encoder_dir)
    expected = reference.predict(pairs)
    assert expected.std() > 0.1  # a head that ranks, not constant scores

    reranker = BertReranker.from_checkpoint(cross_encoder_dir)
    # The directory's own settings: 512 tokens, lower-cased, sigmoid.
    assert reranker.preprocessor.seq_length == reference.max_seq_length == 512
    assert reranker.activation == "sigmoid"
    scores = reranker.predict(pairs)
    assert scores.dtype == np.float32 and scores.shape == (len(pairs),)
    np.testing.assert_allclose(scores, expected, atol=1e-5, rtol=0)
    logits = reranker.predict_logits(pairs)
    np.testing.assert_allclose(
        logits, np.log(expected / (1 - expected)), atol=1e-4, rtol=0
    )
    query = pairs[0][0]
    passages = [p for q, p in pairs if q == query]
    ours = reranker.rerank(query, passages)
    theirs = reference.rank(query, passages)
    assert [r["corpus_id"] for r in ours] == [r["corpus_id"] for r in theirs]

    # Passages cut to 64 tokens: the same truncation as the fast tokenizer.
    short = BertReranker.from_checkpoint(cross_encoder_dir, seq_length=64)
    np.testing.assert_allclose(
        short.predict(pairs),
        sentence_transformers.CrossEncoder(cross_encoder_dir, max_length=64).predict(
            pairs
        ),
        atol=1e-5,
        rtol=0,
    )

    # A CrossEncoder.save() directory (sentence-transformers 6: modules.json,
    # config_sentence_transformers.json) reads the same.
    reference.save(str(tmp_path / "saved"))
    vocab = os.path.join(cross_encoder_dir, "vocab.txt")
    reread = BertReranker.from_checkpoint(str(tmp_path / "saved"), vocab_file=vocab)
    np.testing.assert_allclose(reread.predict(pairs), expected, atol=1e-5, rtol=0)

    # What we write, CrossEncoder loads with the same scores and settings.
    written = reranker.save_cross_encoder(str(tmp_path / "ours"))
    loaded = sentence_transformers.CrossEncoder(written)
    assert loaded.max_seq_length == 512
    np.testing.assert_allclose(loaded.predict(pairs), expected, atol=1e-5, rtol=0)


@pytest.fixture
def tiny_reranker(shared_data):
    import keras
    from tiny_models import tiny_bert_config

    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(3)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    return BertReranker(
        tiny_bert_config(30522, max_position_embeddings=64, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 64, padding="longest"),
    )


PAIRS = [
    ("who wrote it?", "Ann wrote the book in 1990."),
    ("who wrote it?", "The sky is blue."),
    ("where is it?", "It is in Paris, France, near the river."),
]


def test_keras_file_round_trip_keeps_scores(tiny_reranker, tmp_path):
    import keras

    path = str(tmp_path / "reranker.keras")
    tiny_reranker.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded).__name__ == "BertReranker"
    assert loaded.activation == "sigmoid"
    np.testing.assert_array_equal(loaded.predict(PAIRS), tiny_reranker.predict(PAIRS))


def test_pair_forms_and_ranking(tiny_reranker):
    scores = tiny_reranker.predict(PAIRS)
    columns = tiny_reranker.predict(([q for q, _ in PAIRS], [p for _, p in PAIRS]))
    np.testing.assert_array_equal(scores, columns)
    logits = tiny_reranker.predict_logits(PAIRS)
    np.testing.assert_allclose(scores, 1 / (1 + np.exp(-logits)), rtol=1e-6)
    passages = [p for _, p in PAIRS]
    ranked = tiny_reranker.rerank("who wrote it?", passages, top_k=2)
    alone = tiny_reranker.predict([("who wrote it?", p) for p in passages])
    assert [r["corpus_id"] for r in ranked] == list(np.argsort(-alone)[:2])
    np.testing.assert_allclose([r["score"] for r in ranked], np.sort(alone)[::-1][:2])


def test_loading_is_strict(tiny_reranker, tmp_path):
    from bert_tf.models.bert_reranker import BertReranker

    directory = tiny_reranker.save_cross_encoder(str(tmp_path / "ce"))
    np.testing.assert_array_equal(
        BertReranker.from_checkpoint(directory).predict(PAIRS),
        tiny_reranker.predict(PAIRS),
    )

    # An encoder without the score head: an error, unless a head is wanted.
    weights = os.path.join(directory, "model.safetensors")
    tensors = load_file(weights)
    save_file(
        {k: v for k, v in tensors.items() if not k.startswith("classifier.")}, weights
    )
    with pytest.raises(UserInputError, match="not a one-label cross-encoder.*lacks"):
        BertReranker.from_checkpoint(directory)
    fresh = BertReranker.from_checkpoint(directory, new_head=True)
    assert sorted(fresh.checkpoint_load_report.missing) == [
        "output_bias",
        "output_weights",
    ]

    # Entries the model would not use (a two-layer head) are refused.
    save_file(
        {**tensors, "classifier.dense.weight": np.zeros((2, 2), np.float32)}, weights
    )
    with pytest.raises(UserInputError, match="unused.*classifier.dense.weight"):
        BertReranker.from_checkpoint(directory)
    save_file(tensors, weights)

    config_file = os.path.join(directory, "config.json")
    with open(config_file) as f:
        config = json.load(f)
    for change, message in (
        ({"id2label": {"0": "a", "1": "b"}}, "2 labels"),
        (
            {
                "sentence_transformers": {
                    "activation_fn": "torch.nn.modules.activation.Tanh"
                }
            },
            "activation_fn .*Tanh",
        ),
    ):
        with open(config_file, "w") as f:
            json.dump({**config, **change}, f)
        with pytest.raises(UserInputError, match=f"config.json: {message}"):
            BertReranker.from_checkpoint(directory)

    # The activation is read from the directory: Identity gives logits.
    with open(config_file, "w") as f:
        json.dump(
            {
                **config,
                "sentence_transformers": {
                    "activation_fn": "torch.nn.modules.linear.Identity"
                },
            },
            f,
        )
    linear = BertReranker.from_checkpoint(directory)
    np.testing.assert_allclose(
        linear.predict(PAIRS), tiny_reranker.predict_logits(PAIRS), rtol=1e-6
    )


def test_a_sentence_encoder_directory_is_not_a_cross_encoder(shared_data, tmp_path):
    from tiny_models import tiny_bert_config

    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.models.bert_sentence_encoder import BertSentenceEncoder
    from bert_tf.text.preprocessing import BertPreprocessor

    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    encoder = BertSentenceEncoder(
        tiny_bert_config(30522),
        preprocessor=BertPreprocessor(vocab, True, 32),
        pooling="mean",
    )
    directory = encoder.save_sentence_transformers(str(tmp_path / "st"))
    with pytest.raises(UserInputError, match="modules.json: modules .*Pooling"):
        BertReranker.from_checkpoint(directory)


# --- serving ---------------------------------------------------------------


def test_signature_scores_real_pairs_and_ranks_padding_last(tiny_reranker):
    import tensorflow as tf

    from bert_tf import serving

    module = serving.signature_module_for(tiny_reranker, tiny_reranker.preprocessor)
    assert module.family == "reranker"
    serve, specs = module.text_endpoint()
    assert [s.name for s in specs] == ["query", "passages"]
    queries = ["who wrote it?", "where is it?"]
    passages = [
        [PAIRS[1][1], "", PAIRS[0][1]],
        [PAIRS[2][1], PAIRS[0][1], ""],
    ]
    outputs = serve(tf.constant(queries), tf.constant(passages))
    expected = tiny_reranker.predict(
        [(q, p) for q, row in zip(queries, passages, strict=True) for p in row if p]
    )
    scores = outputs["scores"].numpy()
    assert scores.dtype == np.float32 and outputs["ranking"].dtype == tf.int32
    real = np.array([[p != "" for p in row] for row in passages])
    np.testing.assert_allclose(scores[real], expected, atol=1e-6)
    assert (scores[~real] == np.finfo(np.float32).min).all()
    for row in range(2):
        ranking = outputs["ranking"].numpy()[row]
        assert list(ranking) == list(np.argsort(-scores[row], kind="stable"))
        assert ranking[-1] == list(real[row]).index(False)
    np.testing.assert_allclose(
        outputs["logits"].numpy()[real],
        tiny_reranker.predict_logits(
            [(q, p) for q, row in zip(queries, passages, strict=True) for p in row if p]
        ),
        atol=1e-5,
    )
    with pytest.raises(tf.errors.InvalidArgumentError, match="as many rows"):
        serve(tf.constant(queries[:1]), tf.constant(passages))
    # Nothing to score: every slot is padding.
    empty = serve(tf.constant(["who?"]), tf.constant([["", ""]]))
    assert (empty["scores"].numpy() == np.finfo(np.float32).min).all()
    assert empty["ranking"].numpy().tolist() == [[0, 1]]


@pytest.mark.slow
def test_served_scores_equal_cross_encoder_predict(
    cross_encoder_dir,  # noqa: F811
    shared_data,
    tmp_path,
):
    """export_saved_model.py --model_type=reranker on the MiniLM cross-encoder,
    served in a process without bert_tf; only stock TF Serving ops."""
    sentence_transformers = pytest.importorskip("sentence_transformers")
    from cli_script import REPO
    from cli_script import run_script
    from serving_process import call_in_fresh_process

    export_dir = tmp_path / "export"
    run_script(
        os.path.join(REPO, "export_saved_model.py"),
        "--model_type=reranker",
        f"--init_checkpoint={cross_encoder_dir}",
        f"--export_dir={export_dir}",
        timeout=600,
    )
    version_dir = str(export_dir / "1")
    with open(os.path.join(version_dir, "assets.extra/bert_tf_export.json")) as f:
        metadata = json.load(f)
    assert metadata["model"] == "reranker" and metadata["seq_length"] == 512
    assert metadata["activation"] == "sigmoid"
    assert ops_outside_core_tensorflow(version_dir) <= STOCK_TF_TEXT_OPS

    pairs = squad_pairs(shared_data, num_paragraphs=4)
    queries = [q for q, _ in pairs[::2]]
    # Each query with its own paragraph, one of another article and the next
    # paragraph of its own; the last row has one padding slot.
    passages = [
        [pairs[2 * i][1], pairs[2 * i + 1][1], pairs[(2 * i + 4) % len(pairs)][1]]
        for i in range(len(queries))
    ]
    passages[-1][1] = ""
    served = call_in_fresh_process(
        tmp_path,
        [
            {
                "dir": version_dir,
                "signature": "serving_default",
                "inputs": {"query": queries, "passages": passages},
            }
        ],
    )[0]
    reference = sentence_transformers.CrossEncoder(cross_encoder_dir)
    real = np.array([[p != "" for p in row] for row in passages])
    expected = reference.predict(
        [(q, p) for q, row in zip(queries, passages, strict=True) for p in row if p]
    )
    np.testing.assert_allclose(served["scores"][real], expected, atol=1e-5, rtol=0)
    for row, query in enumerate(queries):
        ranked = reference.rank(query, [p for p in passages[row] if p])
        order = [i for i in served["ranking"][row] if real[row][i]]
        kept = [i for i, p in enumerate(passages[row]) if p]
        assert order == [kept[r["corpus_id"]] for r in ranked]
    assert served["ranking"][-1][-1] == 1  # the padding slot ranks last


# --- two-stage pieces --------------------------------------------------------


def test_rerank_losses_equal_their_definitions():
    from bert_tf.tasks.reranking import rerank_loss

    rng = np.random.default_rng(0)
    logits = rng.normal(size=(3, 4)).astype(np.float32) * 3
    labels = np.zeros((3, 4), np.float32)
    labels[:, 0] = 1
    probabilities = 1 / (1 + np.exp(-logits.astype(np.float64)))
    bce = -(labels * np.log(probabilities) + (1 - labels) * np.log(1 - probabilities))
    np.testing.assert_allclose(
        float(rerank_loss("bce", logits.reshape(-1), 4)), bce.mean(), rtol=1e-5
    )
    log_softmax = logits - np.log(
        np.exp(logits.astype(np.float64)).sum(-1, keepdims=True)
    )
    np.testing.assert_allclose(
        float(rerank_loss("listwise", logits.reshape(-1), 4)),
        -log_softmax[:, 0].mean(),
        rtol=1e-5,
    )
    with pytest.raises(ValueError, match="bce"):
        rerank_loss("pointwise", logits.reshape(-1), 4)


def test_reranking_reorders_the_top_n_only(tiny_reranker):
    from bert_tf.data_prep import beir
    from bert_tf.retrieval.document_search import rerank_documents
    from bert_tf.tasks.reranking import two_stage_metrics

    queries = {"q": beir.Query("q", "who wrote it?")}
    texts = {
        "a": "The sky is blue.",
        "b": "Ann wrote the book in 1990.",
        "c": "It is in Paris, France.",
        "d": "Cats sleep a lot.",
    }
    passages = [beir.Passage(f"{d}#0", d, t) for d, t in texts.items()]
    # Document "b" has a second passage: it scores as its best one.
    passages.append(beir.Passage("b#1", "b", "Nothing to see here."))
    first_run = {"q": {"a": 0.9, "b": 0.8, "c": 0.7, "d": 0.6}}
    reranked = rerank_documents(tiny_reranker, queries, first_run, passages, top_n=3)
    scores = {
        d: max(
            tiny_reranker.predict(
                [("who wrote it?", p.text) for p in passages if p.doc_id == d]
            )
        )
        for d in "abc"
    }
    order = sorted("abc", key=lambda d: -scores[d]) + ["d"]
    assert [d for d, _ in sorted(reranked["q"].items(), key=lambda x: -x[1])] == order
    np.testing.assert_allclose(
        [reranked["q"][d] for d in "abc"], [scores[d] for d in "abc"], rtol=1e-6
    )
    results = two_stage_metrics({"q": {"b": 1}}, first_run, reranked, ("mrr@10",))
    assert results["mrr@10_retrieval"] == 0.5
    assert results["mrr@10_reranked"] == 1.0 / (order.index("b") + 1)


def test_a_second_stage_worse_than_the_first_is_named(caplog):
    from bert_tf.metrics.retrieval import retrieval_metrics
    from bert_tf.retrieval.document_search import warn_if_reranking_hurts

    qrels = {"q1": {"d1": 1}, "q2": {"d4": 1}}
    first = {"q1": {"d1": 3.0, "d2": 2.0}, "q2": {"d4": 3.0, "d3": 1.0}}
    # The re-ranker puts each relevant document second.
    second = {"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"d4": 1.0, "d3": 2.0}}
    names = ("recall@1", "mrr@10", "recall@10")
    with caplog.at_level("WARNING"):
        losses = warn_if_reranking_hurts(
            retrieval_metrics(qrels, first, names),
            retrieval_metrics(qrels, second, names),
        )
    assert losses == [("recall@1", 1.0, 0.0), ("mrr@10", 1.0, 0.5)]
    (record,) = [r for r in caplog.records if "Re-ranking made" in r.getMessage()]
    assert "2 of 3 metrics worse" in record.getMessage()
    assert "mrr@10 1.0000 -> 0.5000" in record.getMessage()
    # Equal or better: no warning.
    assert warn_if_reranking_hurts({"mrr@10": 0.5}, {"mrr@10": 0.5}) == []
