"""No graph of the tagger asks oneDNN for a type it falls back from.

With oneDNN on (TensorFlow's default on AVX-512 CPUs, `prefer_onednn`'s on
every x86-64 one), TensorFlow's layout pass renames ops to their oneDNN
kernels; for a type oneDNN does not take it logs, once per process, an
E-level line: "oneDNN supports DT_BOOL only on platforms with AVX-512.
Falling back to the default Eigen-based implementation if present."
(`mkl_op_registry::IsMklOp` → `DataTypeUnsupportedWarning`; despite the
wording it is printed whatever the CPU). The ops concerned are those whose
`_Mkl*` kernel is registered under the `MklNameChangeOp` label for that type
yet taken only for floats: in TensorFlow 2.21 `Transpose` and
`ConjugateTranspose`, of bools, integers and strings. The CRF transposed its
bool masks and int32 paths (issue 49); it now compares and gathers in place.
The numerics are the CRF tests' (pytorch-crf and brute force, test_crf.py).
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest
import tensorflow as tf
from cli_script import REPO
from cli_script import child_pythonpath
from tensorflow.core.framework import types_pb2
from tensorflow.python.framework import kernels
from tiny_models import tiny_bert_config

import bert_tf
from bert_tf.layers.crf import CRF

TAGS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]
# The types `IsMklOp` takes for a name-change op (bfloat16 and half only on
# CPUs with AVX-512 or AVX-NE-CONVERT: a fallback elsewhere, so not here).
_TAKEN = {
    types_pb2.DT_FLOAT,
    types_pb2.DT_DOUBLE,
    types_pb2.DT_COMPLEX64,
    types_pb2.DT_COMPLEX128,
}
_MKL_PREFIXES = ("_MklNative", "_Mkl")


def falling_back():
    """{op: types} of TensorFlow's ops whose oneDNN kernel is registered for
    a type the layout pass then refuses with the E-level line."""
    found = {}
    for kernel in kernels.get_all_registered_kernels().kernel:
        if kernel.label != "MklNameChangeOp":
            continue
        op = next(
            (kernel.op[len(p) :] for p in _MKL_PREFIXES if kernel.op.startswith(p)),
            None,
        )
        for constraint in kernel.constraint:
            if op and constraint.name == "T":
                types = set(constraint.allowed_values.list.type) - _TAKEN
                found.setdefault(op, set()).update(types)
    return found


def fallback_nodes(concrete_function):
    """(function, node, type) of the nodes in `concrete_function`'s graph
    and the functions it calls (loop bodies, ...) that would log the line."""
    refused = falling_back()
    graph = concrete_function.graph.as_graph_def()
    nodes = [("", node) for node in graph.node]
    for function in graph.library.function:
        nodes += [(function.signature.name, node) for node in function.node_def]
    return [
        (function, node.name, types_pb2.DataType.Name(node.attr["T"].type))
        for function, node in nodes
        if node.attr["T"].type in refused.get(node.op, ())
    ]


def test_the_check_finds_a_bool_transpose():
    assert types_pb2.DT_BOOL in falling_back()["Transpose"]
    traced = tf.function(lambda x: tf.transpose(x > 0)).get_concrete_function(
        tf.TensorSpec([None, None])
    )
    assert [node[1:] for node in fallback_nodes(traced)] == [("transpose", "DT_BOOL")]


@pytest.mark.parametrize("iob2_labels", [None, TAGS])
def test_crf_decoding_and_training_graphs(iob2_labels):
    crf = CRF(len(TAGS), iob2_labels=iob2_labels)
    crf.build()
    emissions = tf.TensorSpec([None, None, len(TAGS)])
    ints = tf.TensorSpec([None, None], tf.int32)

    def gradients(emissions, tags, mask):
        with tf.GradientTape() as tape:
            tape.watch(emissions)
            loss = -tf.reduce_sum(crf.log_likelihood(emissions, tags, mask))
        return tape.gradient(loss, [emissions, *crf.trainable_weights])

    graphs = {
        "decode": tf.function(crf.decode).get_concrete_function(emissions, ints),
        "decode_in_place": tf.function(crf.decode_in_place).get_concrete_function(
            emissions, ints
        ),
        "training": tf.function(gradients).get_concrete_function(emissions, ints, ints),
    }
    for name, graph in graphs.items():
        assert fallback_nodes(graph) == [], name


@pytest.fixture(scope="module")
def crf_tagger_dir(shared_data, tmp_path_factory):
    """A CRF tagger's output_dir as run_ner writes it (tiny, untrained)."""
    keras.utils.set_random_seed(5)
    directory = tmp_path_factory.mktemp("crf_tagger")
    model = bert_tf.BertTokenClassifier(
        tiny_bert_config(30522, intermediate_size=48),
        num_labels=len(TAGS),
        crf=True,
        crf_iob2_labels=TAGS,
    )
    model.crf.transitions.assign(np.random.default_rng(0).normal(size=(5, 5)))
    bert_tf.save_tf1_checkpoint(model, str(directory / "model.ckpt-7"))
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    shutil.copyfile(vocab, directory / "vocab.txt")
    (directory / "label_list.json").write_text(json.dumps({"labels": TAGS}))
    (directory / "run_settings.json").write_text(
        json.dumps({"use_crf": True, "crf_constrained": True})
    )
    return directory


def test_the_crf_pipeline_graph(crf_tagger_dir):
    ner = bert_tf.pipeline("ner", str(crf_tagger_dir), seq_length=32)
    assert ner.source.model.crf is not None
    assert fallback_nodes(ner.source._tag.get_concrete_function()) == []


@pytest.mark.slow  # starts a process
def test_a_crf_pipeline_process_logs_no_onednn_line(crf_tagger_dir):
    """As a user's process: oneDNN on (TF_ENABLE_ONEDNN_OPTS=1, as
    `prefer_onednn` sets it on x86-64), TensorFlow's C++ errors shown."""
    code = textwrap.dedent(
        f"""
        import bert_tf
        ner = bert_tf.pipeline("ner", {str(crf_tagger_dir)!r}, seq_length=32)
        print(len(ner(["Zoë met Ada in Köln.", "", "Paris"])))
        """
    )
    env = {
        **os.environ,
        "TF_ENABLE_ONEDNN_OPTS": "1",
        "TF_CPP_MIN_LOG_LEVEL": "0",
        "PYTHONPATH": child_pythonpath(REPO),
    }
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "3"
    assert "oneDNN supports" not in result.stderr, result.stderr[-2000:]
