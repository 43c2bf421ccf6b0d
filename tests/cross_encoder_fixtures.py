"""A real one-label cross-encoder for the re-ranking tests (torch and transformers).

from cross_encoder_fixtures import cross_encoder_dir  # noqa: F401  (fixture)
"""

import os
import shutil

import pytest


@pytest.fixture(scope="module")
def cross_encoder_dir(minilm_dir, tmp_path_factory):
    """A real one-label cross-encoder: transformers' BertForSequenceClassification
    from the MiniLM weights with a seeded head, saved as an HF directory (the
    form of the hub's cross-encoder/* models: vocab.txt + tokenizer_config.json)."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(25)
    model = transformers.BertForSequenceClassification.from_pretrained(
        minilm_dir, num_labels=1
    )
    with torch.no_grad():  # a head whose scores spread over (0, 1)
        model.classifier.weight.normal_(0.0, 2.0)
        model.classifier.bias.fill_(-0.5)
    directory = tmp_path_factory.mktemp("cross_encoder")
    model.save_pretrained(directory)
    for name in ("vocab.txt", "tokenizer_config.json"):
        shutil.copy(os.path.join(minilm_dir, name), directory)
    return str(directory)
