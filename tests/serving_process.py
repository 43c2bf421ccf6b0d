"""Calls a SavedModel's signatures in a fresh process that can import only
TensorFlow and tensorflow-text, as TF Serving loads it: an export that still
needs bert_tf (a py_function, a custom Python op) fails there."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

LOADER = textwrap.dedent(
    """
    import importlib.abc, json, sys

    class NoBertTf(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("bert_tf",):
                raise ImportError("the SavedModel must not need " + name)

    sys.meta_path.insert(0, NoBertTf())
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops TF Serving links in)

    calls = json.load(open(sys.argv[1]))
    results = {}
    for i, call in enumerate(calls):
        model = tf.saved_model.load(call["dir"])
        signature = model.signatures[call["signature"]]
        kwargs = {}
        for k, v in call["inputs"].items():
            first = v
            while isinstance(first, list):  # [B] or [B, N] inputs
                first = first[0]
            kwargs[k] = tf.constant(
                v, dtype=tf.string if isinstance(first, str) else tf.int32
            )
        for k, v in call.get("scalars", {}).items():  # e.g. top_k
            kwargs[k] = tf.constant(v, tf.int32)
        for name, value in signature(**kwargs).items():
            results[f"{i}/{name}"] = value.numpy()
    np.savez(sys.argv[2], **results)
    """
)


def call_in_fresh_process(tmp_path, calls):
    """Each call {"dir", "signature", "inputs": {name: list}, optional
    "scalars": {name: int}} → {output: array}."""
    script = tmp_path / "load.py"
    script.write_text(LOADER)
    (tmp_path / "calls.json").write_text(json.dumps(calls))
    out = tmp_path / "out.npz"
    env = {**os.environ, "PYTHONPATH": "", "TF_CPP_MIN_LOG_LEVEL": "2"}
    subprocess.run(
        [sys.executable, str(script), str(tmp_path / "calls.json"), str(out)],
        check=True,
        cwd=str(tmp_path),
        env=env,
        timeout=600,
    )
    results = np.load(out, allow_pickle=True)
    return [
        {k.split("/", 1)[1]: results[k] for k in results if k.startswith(f"{i}/")}
        for i in range(len(calls))
    ]
