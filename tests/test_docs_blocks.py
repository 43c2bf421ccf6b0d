"""The docs' blocks: every fenced block of README.md and of every page of the
docs site (docs/**/*.md) must appear in `BLOCKS` below, under its page, so a new
block is either run (tests/test_docs.py) or listed with the reason it cannot run
here. The README's examples are copies of guide blocks: each of their lines is
checked to be in the guide's blocks. The blocks that need what a test machine
lacks (a TF Serving server, network downloads, several hosts, a scheduler,
installing the checkout) are checked statically here.
"""

import os
import re

import pytest
from cli_script import REPO
from cli_script import script_flag_defaults
from docs_blocks import block
from docs_blocks import commands
from docs_blocks import flag_names
from docs_blocks import page_blocks
from docs_blocks import pages

# The docs tests' tier (tests/test_docs.py runs the blocks): the full suite's.
pytestmark = pytest.mark.slow

SETUP = os.path.join(REPO, "setup.py")

# A README block that is a guide's, line for line (comments and output lines may
# differ): its reason names the page whose blocks hold every one of its lines.
COPY = "copy of "

# {page: [(language, a string found in exactly one block of the page, what the
# test does with it)]}, each page's blocks in order. Pages without blocks are
# left out; docs/pending/ (drafts not yet placed in a guide) is not a page.
BLOCKS = {
    "README.md": [
        ("bash", "python -m bert_tf.demo", COPY + "docs/getting-started.md"),
        ("bash", "python -m pytest -q", COPY + "docs/getting-started.md"),
        (
            "bash",
            "--task_name=MRPC --do_train=true",
            COPY + "docs/guides/fine-tuning.md",
        ),
        (
            "bash",
            "--output_dir=/tmp/pretraining_output",
            COPY + "docs/guides/pretraining.md",
        ),
        (
            "bash",
            "python export_saved_model.py --model_type=classifier",
            COPY + "docs/guides/serving.md",
        ),
        ("bash", "--output_file=/tmp/mrpc.tflite", COPY + "docs/guides/litert.md"),
        ("python", "bert_tf.save_tf1_checkpoint", COPY + "docs/guides/keras.md"),
        (
            "python",
            "BertSentenceEncoder.from_checkpoint",
            COPY + "docs/guides/embeddings.md",
        ),
        ("bash", "bert-tf-beir", COPY + "docs/guides/retrieval.md"),
        ("bash", "--runner=DirectRunner", COPY + "docs/guides/beam.md"),
    ],
    "docs/getting-started.md": [
        ("bash", "python -m bert_tf.demo", "static: installs the checkout (pip)"),
        ("", "Dev accuracy after 187 steps", "the demo's output: tests/test_demo.py"),
        (
            "bash",
            "python -m pytest -q",
            "static: installs the checkout, runs the suite",
        ),
        ("bash", "export MINILM_DIR=", "run: MINILM_DIR is the packaged model"),
    ],
    "docs/guides/fine-tuning.md": [
        ("bash", "--task_name=MRPC --do_train=true", "run"),
        ("bash", "--tfds_name=glue/mrpc", "static: downloads GLUE through TFDS"),
    ],
    "docs/guides/squad.md": [
        ("bash", "--predict_file=$SQUAD_DIR/dev-v1.1.json", "static: flags checked"),
    ],
    "docs/guides/ner.md": [
        ("bash", "python run_ner.py", "run"),
    ],
    "docs/guides/pretraining.md": [
        (
            "bash",
            "--text_column=content",
            "static: flags checked; tests/test_prepare_corpus.py runs the tool on "
            "10 pages of the shared dump, into create_pretraining_data.py",
        ),
        (
            "bash",
            "--compare_vocab_file=$BERT_BASE_DIR/vocab.txt",
            "static: flags checked; tests/test_build_vocab.py runs the tool on "
            "the shared dump's shards",
        ),
        ("bash", "--output_file=/tmp/tf_examples.tfrecord", "run"),
        ("bash", "SLURM_ARRAY_TASK_ID", "static: a Slurm array job"),
        ("bash", "--output_dir=/tmp/pretraining_output", "static: flags checked"),
        (
            "bash",
            "--output_dir=/tmp/wiki/pretrained",
            "static: flags checked; tests/test_pretrain_from_corpus.py runs the "
            "path on the shared dump with a tiny model",
        ),
        (
            "bash",
            "benchmarks/pretraining_transfer.py",
            "static: a 40-minute benchmark (its figures are on the page)",
        ),
        ("bash", "TF_CONFIG='", "static: several hosts"),
        ("text", "was lost during training", "the survivor's line: test_worker_killed"),
        ("yaml", "kind: JobSet", "static: a Kubernetes cluster"),
        ("bash", "SLURM_PROCID", "static: a Slurm job's task"),
        ("bash", "--kill-on-bad-exit=1", "static: a Slurm batch script"),
    ],
    "docs/guides/embeddings.md": [
        ("python", "BertSentenceEncoder.from_checkpoint", "run"),
        ("bash", "python run_similarity.py", "run (32 STS-B pairs, 1 epoch)"),
        ("bash", "python extract_features.py", "run"),
    ],
    "docs/guides/sparse-and-multi-vector.md": [
        ("python", "BertSparseEncoder.from_checkpoint", "run"),
        (
            "python",
            "BertMultiVectorEncoder.from_checkpoint",
            "static: needs a saved MultiVectorEncoder; "
            "tests/test_multi_vector_encoder.py makes the same calls",
        ),
        (
            "bash",
            "--retrieval_mode=splade",
            "static: flags checked; tests/test_sparse_retrieval.py and "
            "tests/test_multi_vector_rerank.py run the same on 12 paragraphs",
        ),
        (
            "bash",
            "--export_dir=/tmp/serving/splade",
            "static: needs saved SparseEncoder/MultiVectorEncoder directories; "
            "tests/test_sparse_multi_vector_export.py runs the same commands",
        ),
    ],
    "docs/guides/retrieval.md": [
        (
            "bash",
            "--output_dir=/tmp/retrieval_output",
            "static: indexes 2,067 paragraphs with MiniLM (minutes); "
            "tests/test_run_retrieval.py runs the same command on 40",
        ),
        (
            "bash",
            "--model_type=retrieval",
            "static: flags checked; tests/test_run_retrieval.py exports a tiny dual "
            "encoder over 40 paragraphs",
        ),
        (
            "bash",
            "bert-tf-search --index=/tmp/retrieval_output",
            "static: flags checked by tests/test_search.py, which runs the command on "
            "30 paragraphs",
        ),
        (
            "bash",
            "--retrieval_mode=hybrid",
            "static: flags checked; tests/test_hybrid_retrieval.py runs the modes on "
            "40 paragraphs",
        ),
    ],
    "docs/guides/reranking.md": [
        ("python", "BertReranker.from_checkpoint", "static: needs a cross-encoder"),
        (
            "bash",
            "python run_reranker.py",
            "static: flags checked; tests/test_run_reranker.py runs it on 30 paragraphs",
        ),
        (
            "bash",
            "--model_type=reranker",
            "static: flags checked; tests/test_reranker.py runs it on a MiniLM "
            "cross-encoder",
        ),
    ],
    "docs/guides/serving.md": [
        (
            "bash",
            "python export_saved_model.py --model_type=classifier",
            "run the export, check docker statically",
        ),
        ("", "max_batch_size", "compare with the exported batching_parameters.txt"),
        ("bash", "--enable_batching", "static: a TF Serving server (docker)"),
        ("json", '"serving_default"', "call the exported signature with it"),
        ("json", '"serve_tokenized"', "check against the exported signature"),
        ("python", "grpc.insecure_channel", "static: a gRPC client needs a server"),
        ("bash", "saved_model_cli show", "run"),
        ("python", "from bert_tf.serving import load_saved_model", "run"),
    ],
    "docs/guides/litert.md": [
        ("bash", "--output_file=/tmp/mrpc.tflite", "run"),
        ("python", "from bert_tf.serving.litert_model import LiteRTModel", "run"),
        (
            "bash",
            "--target=mediapipe",
            "static: flags checked; tests/test_mediapipe_export.py runs the embedding "
            "export and MediaPipe on its file",
        ),
        ("kotlin", "TextEmbedder.createFromFile", "static: an Android app"),
        ("swift", "import MediaPipeTasksText", "static: an iOS app"),
        ("js", "@mediapipe/tasks-text", "static: a web page"),
        (
            "python",
            "from mediapipe.tasks.python.text import",
            "static: tests/mediapipe_tasks.py makes the same calls in a process of "
            "its own",
        ),
    ],
    "docs/guides/beam.md": [
        (
            "bash",
            "--runner=DataflowRunner",
            "static: Dataflow, Flink and Spark clusters; tests/test_beam_*.py and "
            "tests/test_batch_predict.py run the pipelines on the DirectRunner",
        ),
    ],
    "docs/guides/keras.md": [
        ("python", "BertEncoder.from_checkpoint", "run"),
        ("python", "BertTextClassifier.from_checkpoint", "run"),
        ("python", 'bert_tf.pipeline("text-classification"', "run"),
    ],
    "docs/design/layout.md": [
        ("", "the library, floors bottom up", "the layout: files exist"),
    ],
    "docs/design/extending.md": [
        (
            "python",
            "label_smoothing: float = option(",
            "static: tests/test_option_flags.py turns such a field into its flag",
        ),
    ],
    "docs/original_bert.md": [
        ("", "bert/embeddings/{word_embeddings", "the names are the name table's"),
    ],
}


@pytest.mark.parametrize("page", pages())
def test_every_block_is_run_or_listed(page):
    blocks = page_blocks(page)
    listed = BLOCKS.get(page, [])
    assert [language for language, _ in blocks] == [b[0] for b in listed], page
    for (_, text), (_, marker, _) in zip(blocks, listed, strict=True):
        assert marker in text, (page, marker)


def test_blocks_names_only_pages_that_exist():
    assert set(BLOCKS) <= set(pages())


def _code_lines(text):
    """A block's lines without comments (trailing ones too) and blank lines."""
    lines = [re.sub(r"\s+#.*$", "", line).rstrip() for line in text.splitlines()]
    return [
        line for line in lines if line.strip() and not line.lstrip().startswith("#")
    ]


@pytest.mark.parametrize(
    "marker, guide",
    [
        (m, reason[len(COPY) :])
        for _, m, reason in BLOCKS["README.md"]
        if reason.startswith(COPY)
    ],
)
def test_readme_examples_are_guide_blocks(marker, guide):
    guide_lines = {line for _, text in page_blocks(guide) for line in _code_lines(text)}
    example = _code_lines(block(marker, "README.md"))
    missing = [line for line in example if line not in guide_lines]
    assert example and not missing, (guide, missing)


# ---------------------------------------------------------------------------
# Blocks that cannot run here, checked statically.


@pytest.mark.parametrize("page", ["README.md", "docs/getting-started.md"])
def test_install_blocks_run_the_documented_commands(page):
    # Static: `pip install -e .` of the checkout would change the environment the
    # suite runs in; the demo itself is run by tests/test_demo.py, the suite is this.
    demo = commands(block("python -m bert_tf.demo", page))[0].split(" && ")
    assert demo[-1] == "python -m bert_tf.demo"
    with open(os.path.join(REPO, "tests", "test_demo.py")) as f:
        assert '"-m", "bert_tf.demo"' in f.read()
    test = commands(block("python -m pytest -q", page))[0].split(" && ")
    # Three workers on two cores (a test spends much of its time starting
    # processes and tracing, on one thread), a test file per worker (module
    # fixtures train once), from
    # pytest-xdist, which the test extra installs.
    assert test[-1] == "python -m pytest -q -n 3 --dist loadfile"
    for command in demo[:-1] + test[:-1]:
        assert command.startswith("pip install ")
    # torch comes first, from PyTorch's CPU index only (--index-url: no fallback to
    # PyPI's CUDA build), pinned as the test extra pins it, which it then satisfies.
    cpu_index = "--index-url https://download.pytorch.org/whl/cpu"
    with open(SETUP) as f:
        setup = f.read()
    (torch_pin,) = re.findall(r'"(torch==[^"]+)"', setup)
    assert '"pytest-xdist"' in setup
    assert test[0] == f"pip install {torch_pin} {cpu_index}"
    # seqeval (the entity metrics' reference) is an sdist whose setup_requires
    # fetches a setuptools_scm that no longer builds it: installed first, without
    # build isolation, beside an older setuptools_scm.
    assert test[1:3] == [
        'pip install "setuptools_scm<8" wheel',
        "pip install --no-build-isolation seqeval==1.2.2",
    ]
    assert test[3] == 'pip install -e ".[test]"'
    assert "--extra-index-url" not in " ".join(demo + test)
    # CI runs exactly this command.
    with open(os.path.join(REPO, ".ci", "run")) as f:
        assert " && ".join(test) in f.read().splitlines()


@pytest.mark.parametrize(
    "marker, module",
    [
        ("--tfds_name=glue/mrpc", "run_classifier"),
        ("SLURM_ARRAY_TASK_ID", "create_pretraining_data"),
        ("--text_column=content", "prepare_corpus"),
        ("--text_column=content", "create_pretraining_data"),
        ("--compare_vocab_file=$BERT_BASE_DIR/vocab.txt", "build_vocab"),
        ("--output_dir=/tmp/wiki/pretrained", "prepare_corpus"),
        ("--output_dir=/tmp/wiki/pretrained", "build_vocab"),
        ("--output_dir=/tmp/wiki/pretrained", "create_pretraining_data"),
        ("--output_dir=/tmp/wiki/pretrained", "run_pretraining"),
        ("--output_dir=/tmp/wiki/pretrained", "run_classifier"),
        ("TF_CONFIG='", "run_pretraining"),
        ("SLURM_PROCID", "run_pretraining"),
        ("kind: JobSet", "run_pretraining"),
        ("--output_dir=/tmp/pretraining_output", "run_pretraining"),
        ("--predict_file=$SQUAD_DIR/dev-v1.1.json", "run_squad"),
        ("--output_dir=/tmp/retrieval_output", "run_retrieval"),
        ("--retrieval_mode=hybrid --fusion=rrf", "run_retrieval"),
        ("--retrieval_mode=splade", "run_retrieval"),
        ("--model_type=reranker", "export_saved_model"),
        ("--model_type=retrieval", "export_saved_model"),
        ("python run_reranker.py", "run_reranker"),
        ("--target=mediapipe", "export_litert"),
        ("--export_dir=/tmp/serving/splade", "export_saved_model"),
        ("--export_dir=/tmp/serving/splade", "export_litert"),
    ],
)
def test_unrunnable_commands_use_real_flags(marker, module):
    # Static: a TFDS download, a Slurm array, several hosts; SQuAD's training
    # file and BERT-base pre-training, too big for a test (tests/test_run_squad.py
    # and tests/test_run_pretraining.py run both tools). Their flags must exist.
    defined = set(script_flag_defaults(module))
    used = set()
    for command in commands(block(marker)):
        if f"{module}.py" in command:
            used |= set(flag_names(command))
    assert used and used <= defined, sorted(used - defined)


def test_the_commands_table_lists_every_installed_command():
    commands_page = os.path.join(REPO, "docs", "reference", "commands.md")
    with open(commands_page, encoding="utf-8") as f:
        listed = set(re.findall(r"^\| `(bert-tf-[a-z-]+)` \|", f.read(), re.M))
    with open(os.path.join(REPO, "setup.py"), encoding="utf-8") as f:
        source = f.read()
    commands = re.search(r"COMMANDS = \((.*?)\)", source, re.S).group(1)
    names = re.findall(r'"(\w+)"', commands)
    installed = {"bert-tf-" + name.replace("_", "-") for name in names}
    assert listed == installed | {"bert-tf-demo"}


def test_the_original_variable_names_are_the_name_tables():
    # The original's variable names listed in docs/original_bert.md: each name part
    # (a path segment without its [shape]) is one the name table maps.
    with open(os.path.join(REPO, "bert_tf", "checkpoints", "name_map.py")) as f:
        table = f.read()
    text = re.sub(r" \[[^]]*\]", "", block("bert/embeddings/{word_embeddings"))
    parts = set()
    for line in text.split():
        for segment in line.split("/"):
            parts |= set(segment.strip("{}").split(","))
    parts -= {"layer_<i>", ""}
    missing = [part for part in parts if part not in table]
    assert len(parts) > 15 and not missing, missing
