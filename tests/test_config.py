"""BertConfig: the original's defaults, Google and HF files, validation."""

import json
import os

import pytest

from bert_tf import BertConfig

GOOGLE_BASE = {
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 768,
    "initializer_range": 0.02,
    "intermediate_size": 3072,
    "max_position_embeddings": 512,
    "num_attention_heads": 12,
    "num_hidden_layers": 12,
    "type_vocab_size": 2,
    "vocab_size": 30522,
}


def write_json(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return str(path)


def test_class_defaults_match_the_original():
    config = BertConfig(vocab_size=100)
    assert config.hidden_size == 768
    assert config.num_hidden_layers == 12
    assert config.num_attention_heads == 12
    assert config.intermediate_size == 3072
    assert config.hidden_act == "gelu"
    assert config.hidden_dropout_prob == 0.1
    assert config.attention_probs_dropout_prob == 0.1
    assert config.max_position_embeddings == 512
    assert config.type_vocab_size == 16  # the class default, not the released 2
    assert config.initializer_range == 0.02
    assert config.layer_norm_eps == 1e-12


def test_google_config_round_trip_is_the_original_format(tmp_path):
    path = write_json(tmp_path, "bert_config.json", GOOGLE_BASE)
    config = BertConfig.from_json_file(path)
    assert config.hidden_act == "gelu" and config.type_vocab_size == 2
    out = tmp_path / "out.json"
    config.to_json_file(out)
    text = out.read_text()
    # The original's to_json_string: indent=2, sorted keys.
    assert text == json.dumps(GOOGLE_BASE, indent=2, sort_keys=True) + "\n"


def test_unknown_keys_are_kept_and_written_back(tmp_path):
    data = dict(GOOGLE_BASE, directionality="bidi", pooler_type="first_token_transform")
    config = BertConfig.from_json_file(write_json(tmp_path, "c.json", data))
    assert config.extra == {
        "directionality": "bidi",
        "pooler_type": "first_token_transform",
    }
    assert config.to_dict() == data


def test_missing_keys_take_class_defaults():
    config = BertConfig.from_dict({"vocab_size": 7})
    assert config.type_vocab_size == 16 and config.hidden_size == 768


def test_real_google_config_with_multilingual_keys(tiny_tf1_checkpoint):
    config = BertConfig.from_json_file(
        os.path.join(tiny_tf1_checkpoint, "bert_config.json")
    )
    assert (config.vocab_size, config.hidden_size, config.num_hidden_layers) == (
        15,
        4,
        2,
    )
    assert config.hidden_act == "gelu"
    assert config.extra["pooler_type"] == "first_token_transform"


@pytest.mark.parametrize(
    "hf_act, ours",
    [
        ("gelu", "gelu_exact"),
        ("gelu_new", "gelu"),
        ("gelu_pytorch_tanh", "gelu"),
        ("relu", "relu"),
    ],
)
def test_hf_activation_names_are_translated(tmp_path, hf_act, ours):
    data = dict(GOOGLE_BASE, hidden_act=hf_act, model_type="bert", layer_norm_eps=1e-12)
    config = BertConfig.from_json_file(write_json(tmp_path, "config.json", data))
    assert config.hidden_act == ours


def test_real_hf_config(minilm_dir):
    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    assert (config.num_hidden_layers, config.hidden_size, config.intermediate_size) == (
        6,
        384,
        1536,
    )
    assert config.hidden_act == "gelu_exact"  # HF "gelu" is the erf form
    assert config.type_vocab_size == 2


def test_hf_default_type_vocab_size_is_two():
    config = BertConfig.from_hf_dict({"vocab_size": 10, "model_type": "bert"})
    assert config.type_vocab_size == 2


def test_hf_non_bert_and_relative_positions_are_refused():
    with pytest.raises(ValueError, match="model_type"):
        BertConfig.from_hf_dict({"vocab_size": 10, "model_type": "roberta"})
    with pytest.raises(ValueError, match="position_embedding_type"):
        BertConfig.from_hf_dict(
            {"vocab_size": 10, "position_embedding_type": "relative_key"}
        )


@pytest.mark.parametrize(
    "key, value",
    [
        ("hidden_size", 0),
        ("num_hidden_layers", -1),
        ("num_attention_heads", 0),
        ("intermediate_size", 0),
        ("vocab_size", 0),
        ("max_position_embeddings", -5),
        ("hidden_size", 1.5),
        ("hidden_dropout_prob", 1.0),
        ("hidden_act", "swish"),
        # JSON's NaN and Infinity: `NaN <= 0` is False, so they need their own check.
        ("initializer_range", float("nan")),
        ("initializer_range", float("inf")),
        ("layer_norm_eps", float("nan")),
        ("attention_probs_dropout_prob", float("nan")),
    ],
)
def test_invalid_values_name_the_key_and_the_file(tmp_path, key, value):
    path = write_json(tmp_path, "bad_config.json", dict(GOOGLE_BASE, **{key: value}))
    with pytest.raises(ValueError) as info:
        BertConfig.from_json_file(path)
    assert key in str(info.value) and path in str(info.value)


def test_heads_must_divide_hidden_size(tmp_path):
    path = write_json(
        tmp_path, "bert_config.json", dict(GOOGLE_BASE, num_attention_heads=7)
    )
    with pytest.raises(
        ValueError, match=r"hidden_size \(768\).*num_attention_heads \(7\)"
    ) as info:
        BertConfig.from_json_file(path)
    assert path in str(info.value)


def test_missing_vocab_size_and_missing_file(tmp_path):
    path = write_json(tmp_path, "c.json", {"hidden_size": 8})
    with pytest.raises(ValueError, match="vocab_size"):
        BertConfig.from_json_file(path)
    with pytest.raises(FileNotFoundError, match="nope.json"):
        BertConfig.from_json_file(tmp_path / "nope.json")


def test_invalid_json_names_the_file(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json"):
        BertConfig.from_json_file(path)


def test_hf_config_written_back_reads_the_same(minilm_dir, tmp_path):
    config = BertConfig.from_json_file(os.path.join(minilm_dir, "config.json"))
    config.to_json_file(tmp_path / "bert_config.json")
    written = json.loads((tmp_path / "bert_config.json").read_text())
    assert "model_type" not in written and written["hidden_act"] == "gelu_exact"
    again = BertConfig.from_json_file(tmp_path / "bert_config.json")
    assert again == config
