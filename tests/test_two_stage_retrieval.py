"""The two-stage retrieval SavedModel: dual-encoder search and cross-encoder
order in one graph (run_retrieval.py --export_dir --rerank_checkpoint)."""

import os

import numpy as np
import pytest

pytest.importorskip("pymilvus", reason="pymilvus (retrieval extra) is not installed")

from beir_fixtures import squad_beir  # noqa: E402, F401  (fixture)
from cli_script import REPO  # noqa: E402
from cli_script import run_script  # noqa: E402
from serving_ops import STOCK_TF_TEXT_OPS  # noqa: E402
from serving_ops import ops_outside_core_tensorflow  # noqa: E402
from serving_process import call_in_fresh_process  # noqa: E402
from test_run_retrieval import small_beir  # noqa: E402, F401  (fixture)
from test_run_retrieval import tiny_encoders  # noqa: E402, F401  (fixture)

from bert_tf.data_prep import beir  # noqa: E402

SCRIPT = os.path.join(REPO, "run_retrieval.py")


@pytest.mark.slow
def test_served_ranking_is_the_cross_encoders_order_of_the_candidates(
    small_beir,  # noqa: F811
    tiny_encoders,  # noqa: F811
    shared_data,
    tmp_path,
):
    import keras
    from tiny_models import tiny_bert_config

    from bert_tf.models.bert_reranker import BertReranker
    from bert_tf.retrieval.dual_encoder import DualEncoder
    from bert_tf.text.preprocessing import BertPreprocessor
    from bert_tf.text.tokenization import FullTokenizer

    keras.utils.set_random_seed(6)
    vocab = os.path.join(shared_data, "vocab/bert-base-uncased/vocab.txt")
    reranker = BertReranker(
        tiny_bert_config(30522, max_position_embeddings=128, dropout=0.0),
        preprocessor=BertPreprocessor(vocab, True, 128, padding="longest"),
    )
    rerank_dir = reranker.save_cross_encoder(str(tmp_path / "cross_encoder"))
    run_script(
        SCRIPT,
        f"--data_dir={small_beir}",
        f"--output_dir={tmp_path / 'out'}",
        f"--init_checkpoint={tiny_encoders[0]}",
        "--passage_length=48",
        "--passage_stride=24",
        "--do_index",
        f"--export_dir={tmp_path / 'sm'}",
        f"--rerank_checkpoint={rerank_dir}",
        "--rerank_top_k=6",
        timeout=600,
    )
    assert ops_outside_core_tensorflow(str(tmp_path / "sm" / "1")) <= STOCK_TF_TEXT_OPS
    queries = beir.read_queries(small_beir)
    some = list(beir.read_qrels(small_beir, "test"))[:4]
    texts = [queries[q].text for q in some]
    served = call_in_fresh_process(
        tmp_path,
        [
            {
                "dir": str(tmp_path / "sm" / "1"),
                "signature": "serving_default",
                "inputs": {"query": texts},
                "scalars": {"top_k": 3},
            }
        ],
    )[0]

    # The reference: exact inner-product top 6 passages, each scored by the
    # cross-encoder, documents by their best candidate passage.
    towers = DualEncoder.from_checkpoint(tiny_encoders[0])
    tokenizer = FullTokenizer(os.path.join(tiny_encoders[0], "vocab.txt"), True)
    passages = beir.split_passages(
        beir.read_corpus(small_beir), lambda w: len(tokenizer.tokenize(w)) or 1, 48, 24
    )
    first = (
        towers.encode_queries(texts)
        @ towers.encode_documents([p.text for p in passages]).T
    )
    ids = served["ids"].astype(str)
    assert ids.shape == (4, 3)
    for row, text in enumerate(texts):
        candidates = np.argsort(-first[row], kind="stable")[:6]
        scores = reranker.predict([(text, passages[i].text) for i in candidates])
        best = {}
        for i, score in zip(candidates, scores, strict=True):
            doc = passages[i].doc_id
            best[doc] = max(best.get(doc, -np.inf), score)
        expected = sorted(best.items(), key=lambda x: -x[1])[:3]
        assert list(ids[row]) == [d for d, _ in expected]
        np.testing.assert_allclose(
            served["scores"][row], [s for _, s in expected], atol=1e-5
        )
