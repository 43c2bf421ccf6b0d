"""CrossEncoder directories saved by sentence-transformers 6 (tokenizer.json,
no vocab.txt; one label and several), against `CrossEncoder` itself."""

import os

import numpy as np
import pytest

from bert_tf.errors import UserInputError

PAIRS = [
    ("who wrote it?", "Ann wrote the book in 1990."),
    ("who wrote it?", "The sky is blue."),
    ("where is it?", "It is in Paris, France, near the river. " * 20),
]
# (No empty document: the original's packing makes [CLS] q [SEP] of it where
# Hugging Face's tokenizer makes [CLS] q [SEP] [SEP].)
DOCUMENTS = ["The sky is blue.", "Ann wrote the book in 1990.", "Paris", "it"]
TOLERANCE = 2e-5


@pytest.fixture(scope="module")
def cross_encoders(minilm_dir, tmp_path_factory):
    """{labels: (directory, CrossEncoder)} for 1 and 3 labels."""
    st = pytest.importorskip("sentence_transformers")
    import torch

    torch.manual_seed(0)
    root = tmp_path_factory.mktemp("cross_encoders")
    made = {}
    for labels in (1, 3):
        directory = str(root / f"labels{labels}")
        st.CrossEncoder(minilm_dir, num_labels=labels, device="cpu").save(directory)
        assert not os.path.exists(os.path.join(directory, "vocab.txt"))
        made[labels] = directory, st.CrossEncoder(directory, device="cpu")
    return made


@pytest.fixture(scope="module")
def reranker(cross_encoders):
    from bert_tf.models import BertReranker

    return BertReranker.from_checkpoint(cross_encoders[1][0])


@pytest.mark.slow
def test_predict_and_rank_equal_cross_encoder(cross_encoders, reranker):
    theirs = cross_encoders[1][1]
    np.testing.assert_allclose(
        reranker.predict(PAIRS), theirs.predict(PAIRS), atol=TOLERANCE
    )
    # One pair: one score, as CrossEncoder.predict.
    single = reranker.predict(PAIRS[0])
    assert np.shape(single) == ()
    np.testing.assert_allclose(single, theirs.predict(PAIRS[0]), atol=TOLERANCE)
    # A tuple of two pairs is two pairs (issue 50), not two columns.
    np.testing.assert_allclose(
        reranker.predict(tuple(PAIRS[:2])), theirs.predict(PAIRS[:2]), atol=TOLERANCE
    )
    for top_k in (None, 2):
        ours = reranker.rank(
            "who wrote it?", DOCUMENTS, top_k=top_k, return_documents=True
        )
        want = theirs.rank(
            "who wrote it?", DOCUMENTS, top_k=top_k, return_documents=True
        )
        assert [r["corpus_id"] for r in ours] == [r["corpus_id"] for r in want]
        assert [r["text"] for r in ours] == [r["text"] for r in want]
        np.testing.assert_allclose(
            [r["score"] for r in ours], [r["score"] for r in want], atol=TOLERANCE
        )
    assert "text" not in reranker.rank("who wrote it?", DOCUMENTS)[0]


@pytest.mark.slow
def test_input_checks(reranker):
    for batch_size in (0, -1):
        with pytest.raises(ValueError, match="batch_size"):
            reranker.predict(PAIRS, batch_size=batch_size)
    with pytest.raises(TypeError, match=r"pairs\[0\]: the query is bytes"):
        reranker.predict([(b"who", "Ann")])
    with pytest.raises(TypeError, match=r"pairs\[1\]: the passage is NoneType"):
        reranker.predict([("who", "Ann"), ("who", None)])
    for top_k in (-1, 0):
        with pytest.raises(ValueError, match="top_k"):
            reranker.rank("who wrote it?", DOCUMENTS, top_k=top_k)


@pytest.mark.slow
def test_several_labels_load_as_a_pair_classifier(cross_encoders):
    from bert_tf.models import BertReranker
    from bert_tf.models import BertTextClassifier

    directory, theirs = cross_encoders[3]
    with pytest.raises(UserInputError, match="3 labels.*BertTextClassifier reads it"):
        BertReranker.from_checkpoint(directory)
    ours = BertTextClassifier.from_checkpoint(directory, num_labels=3, seq_length=256)
    logits = ours.predict(([q for q, _ in PAIRS], [p for _, p in PAIRS]))
    # CrossEncoder applies Identity to several labels: the logits.
    np.testing.assert_allclose(logits, theirs.predict(PAIRS), atol=TOLERANCE)


@pytest.mark.slow
def test_one_label_directory_exports(cross_encoders, reranker, tmp_path):
    import tensorflow as tf

    from bert_tf.options.export_options import ExportOptions
    from bert_tf.options.saved_model_export_options import SavedModelExportOptions
    from bert_tf.tasks import saved_model_export

    directory, theirs = cross_encoders[1]
    path = saved_model_export.run(
        SavedModelExportOptions(
            model_type="reranker",
            init_checkpoint=directory,
            export=ExportOptions(str(tmp_path / "export")),
        )
    )
    served = tf.saved_model.load(path).signatures["serving_default"]
    outputs = served(
        query=tf.constant(["who wrote it?"]), passages=tf.constant([DOCUMENTS])
    )
    want = theirs.predict([("who wrote it?", d) for d in DOCUMENTS])
    np.testing.assert_allclose(
        outputs["scores"].numpy()[0][:3], want[:3], atol=TOLERANCE
    )
