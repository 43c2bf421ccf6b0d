"""Which ops of a SavedModel core TensorFlow (without tensorflow-text) lacks.

Stock TF Serving links in an old tensorflow-text: only its classic ops are
safe (docs/guides/serving.md). The check runs in a fresh process that imports
TensorFlow alone, so no tensorflow-text op is registered by accident.
"""

import json
import os
import subprocess
import sys

# The tensorflow-text ops every stock TF Serving image links in (since 2.3);
# every other op of an export must be a core TensorFlow op.
STOCK_TF_TEXT_OPS = {
    "RegexSplitWithOffsets",
    "NormalizeUTF8",
    "WordpieceTokenizeWithOffsets",
}
OPS_OUTSIDE_CORE = """
import json
import sys
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2
from tensorflow.python.framework import op_def_registry

assert "tensorflow_text" not in sys.modules
outside = {}
for directory in sys.argv[1:]:
    proto = saved_model_pb2.SavedModel()
    proto.ParseFromString(open(directory + "/saved_model.pb", "rb").read())
    ops = set()
    for meta_graph in proto.meta_graphs:
        graph = meta_graph.graph_def
        ops |= {n.op for n in graph.node}
        ops |= {n.op for f in graph.library.function for n in f.node_def}
    outside[directory] = sorted(op for op in ops if op_def_registry.get(op) is None)
assert "tensorflow_text" not in sys.modules
print(json.dumps(outside))
"""


def ops_outside_core_by_dir(saved_model_dirs):
    """{directory: set of op types core TensorFlow does not register} for
    each SavedModel version directory (one fresh process for all)."""
    result = subprocess.run(
        [sys.executable, "-c", OPS_OUTSIDE_CORE, *saved_model_dirs],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"},
        timeout=300,
    )
    outside = json.loads(result.stdout.strip().splitlines()[-1])
    return {directory: set(ops) for directory, ops in outside.items()}


def ops_outside_core_tensorflow(saved_model_dir):
    """The op types of one SavedModel that core TensorFlow lacks."""
    return ops_outside_core_by_dir([saved_model_dir])[saved_model_dir]
