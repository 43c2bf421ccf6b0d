"""Numerical parity with Hugging Face transformers (PyTorch) as the reference."""

import os

import numpy as np
import pytest

import bert_tf

torch = pytest.importorskip("torch", reason="torch (test extra) is not installed")
transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed"
)

SENTENCES = [
    "Hello world!",
    "The quick brown fox jumps over the lazy dog near the riverbank at dawn.",
    "BERT",
    "Résumé of naïve café owners in São Paulo, written in 2019.",
    "Super Bowl 50 was an American football game to determine the champion of the "
    "National Football League (NFL) for the 2015 season.",
    "Short.",
    "Transformers are neural networks that learn context by tracking relationships.",
    "What time is it?",
    "The Normans were the people who in the 10th and 11th centuries gave their name "
    "to Normandy, a region in France.",
]


def pack(tokenizer, texts, pairs=None):
    """[CLS] A [SEP] (B [SEP]) ids, padded to the longest with id 0."""
    rows = []
    for i, text in enumerate(texts):
        tokens = ["[CLS]"] + tokenizer.tokenize(text) + ["[SEP]"]
        segments = [0] * len(tokens)
        if pairs is not None:
            b = tokenizer.tokenize(pairs[i]) + ["[SEP]"]
            tokens += b
            segments += [1] * len(b)
        rows.append((tokenizer.convert_tokens_to_ids(tokens), segments))
    width = max(len(ids) for ids, _ in rows)
    ids = np.zeros((len(rows), width), "int32")
    segments = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for i, (row_ids, row_segments) in enumerate(rows):
        ids[i, : len(row_ids)] = row_ids
        segments[i, : len(row_ids)] = row_segments
        mask[i, : len(row_ids)] = 1
    return {"input_ids": ids, "input_mask": mask, "segment_ids": segments}


def torch_inputs(features):
    return {
        "input_ids": torch.tensor(features["input_ids"], dtype=torch.long),
        "attention_mask": torch.tensor(features["input_mask"], dtype=torch.long),
        "token_type_ids": torch.tensor(features["segment_ids"], dtype=torch.long),
    }


@pytest.mark.slow
def test_minilm_encoder_matches_transformers(minilm_dir):
    tokenizer = bert_tf.text.tokenization.FullTokenizer(
        os.path.join(minilm_dir, "vocab.txt"), do_lower_case=True
    )
    features = pack(tokenizer, SENTENCES)
    lengths = features["input_mask"].sum(axis=1)
    assert len(set(lengths)) >= 8  # real sentences of different lengths, padded

    encoder = bert_tf.BertEncoder.from_checkpoint(minilm_dir)
    report = encoder.checkpoint_load_report
    assert report.missing == [] and report.unused == []
    assert len(report.loaded) == len(encoder.weights)

    reference = transformers.BertModel.from_pretrained(minilm_dir).eval()
    with torch.no_grad():
        expected = reference(**torch_inputs(features))
    # Eager and compiled graph both.
    for outputs in (encoder(features), encoder.predict(features, verbose=0)):
        sequence = np.asarray(outputs["sequence_output"])
        real = features["input_mask"].astype(bool)
        seq_diff = np.abs(sequence - expected.last_hidden_state.numpy())[real].max()
        pooled_diff = np.abs(
            np.asarray(outputs["pooled_output"]) - expected.pooler_output.numpy()
        )
        assert seq_diff <= 1e-4, seq_diff
        assert pooled_diff.max() <= 1e-4, pooled_diff.max()


def test_minilm_all_layer_outputs_match_hidden_states(minilm_dir):
    tokenizer = bert_tf.text.tokenization.FullTokenizer(
        os.path.join(minilm_dir, "vocab.txt")
    )
    features = pack(tokenizer, SENTENCES[:4], pairs=SENTENCES[4:8])
    encoder = bert_tf.BertEncoder.from_checkpoint(minilm_dir)
    reference = transformers.BertModel.from_pretrained(minilm_dir).eval()
    with torch.no_grad():
        expected = reference(**torch_inputs(features), output_hidden_states=True)
    layers = encoder(features)["encoder_outputs"]
    assert len(layers) == 6
    real = features["input_mask"].astype(bool)
    for ours, theirs in zip(layers, expected.hidden_states[1:], strict=True):
        assert np.abs(ours.numpy() - theirs.numpy())[real].max() <= 1e-4


def test_pretraining_heads_match_bert_for_pretraining(tmp_path):
    """Random weights, tanh GELU, moved HF -> bert_tf through safetensors."""
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=120,
        hidden_size=48,
        num_hidden_layers=3,
        num_attention_heads=4,
        intermediate_size=96,
        max_position_embeddings=64,
        type_vocab_size=2,
        hidden_act="gelu_new",  # the tanh approximation, as the original BERT
    )
    reference = transformers.BertForPreTraining(hf_config).eval()
    # Random, not-tiny values everywhere, biases and LayerNorms included.
    with torch.no_grad():
        for param in reference.parameters():
            param.normal_(0.0, 0.2)
    reference.save_pretrained(tmp_path)

    pretrainer = bert_tf.BertPretrainer.from_checkpoint(str(tmp_path))
    report = pretrainer.checkpoint_load_report
    assert report.missing == [] and report.unused == []
    assert pretrainer.encoder.config.hidden_act == "gelu"

    rng = np.random.default_rng(1)
    features = {
        "input_ids": rng.integers(1, 120, size=(4, 20)).astype("int32"),
        "input_mask": np.ones((4, 20), "int32"),
        "segment_ids": np.repeat([[0] * 12 + [1] * 8], 4, axis=0).astype("int32"),
    }
    features["input_mask"][1, 15:] = 0
    features["input_mask"][3, 6:] = 0
    positions = np.sort(rng.choice(np.arange(1, 6), size=(4, 3)), axis=1).astype(
        "int32"
    )
    outputs = pretrainer({**features, "masked_lm_positions": positions})
    with torch.no_grad():
        expected = reference(**torch_inputs(features))
    mlm = np.take_along_axis(
        expected.prediction_logits.numpy(),
        positions[:, :, None].astype("int64"),
        axis=1,
    )
    assert np.abs(outputs["mlm_logits"].numpy() - mlm).max() <= 1e-4
    assert (
        np.abs(
            outputs["nsp_logits"].numpy() - expected.seq_relationship_logits.numpy()
        ).max()
        <= 1e-4
    )


@pytest.mark.parametrize(
    "hf_class, ours, outputs",
    [
        ("BertForSequenceClassification", "BertClassifier", {"logits": "logits"}),
        (
            "BertForQuestionAnswering",
            "BertSpanLabeler",
            {"start_logits": "start_logits", "end_logits": "end_logits"},
        ),
        ("BertForTokenClassification", "BertTokenClassifier", {"logits": "logits"}),
    ],
)
def test_task_heads_load_from_transformers(tmp_path, hf_class, ours, outputs):
    torch.manual_seed(0)
    hf_config = transformers.BertConfig(
        vocab_size=80,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        max_position_embeddings=32,
        num_labels=2 if hf_class == "BertForQuestionAnswering" else 3,
    )
    reference = getattr(transformers, hf_class)(hf_config).eval()
    with torch.no_grad():
        for param in reference.parameters():
            param.normal_(0.0, 0.2)
    reference.save_pretrained(tmp_path)
    kwargs = {} if ours == "BertSpanLabeler" else {"num_labels": 3}
    model = getattr(bert_tf, ours).from_checkpoint(str(tmp_path), **kwargs)
    # HF builds its QA and tagging models without the pooler; ours keeps one
    # (unused by those heads), so exactly the pooler is reported missing.
    no_pooler = hf_class != "BertForSequenceClassification"
    expected_missing = (
        ["bert/pooler/dense/kernel", "bert/pooler/dense/bias"] if no_pooler else []
    )
    assert model.checkpoint_load_report.missing == expected_missing
    assert model.checkpoint_load_report.unused == []
    rng = np.random.default_rng(2)
    features = {
        "input_ids": rng.integers(1, 80, size=(3, 9)).astype("int32"),
        "input_mask": np.ones((3, 9), "int32"),
        "segment_ids": np.zeros((3, 9), "int32"),
    }
    features["input_mask"][2, 5:] = 0
    ours_out = model(features)
    with torch.no_grad():
        theirs = reference(**torch_inputs(features))
    for our_key, their_key in outputs.items():
        diff = np.abs(ours_out[our_key].numpy() - getattr(theirs, their_key).numpy())
        if ours != "BertClassifier":
            diff = diff[features["input_mask"].astype(bool)]
        assert diff.max() <= 1e-4, (our_key, diff.max())
