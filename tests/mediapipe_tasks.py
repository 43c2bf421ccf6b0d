"""Runs a .tflite with MediaPipe Tasks' `TextEmbedder` / `TextClassifier`.

`mediapipe` is in the test extra; `mediapipe_python()` finds an interpreter
that imports it (`BERT_TF_MEDIAPIPE_PYTHON`, e.g. a separate environment made
with `pip install mediapipe==1.2.3`, else this one). `run_task` calls this file there as a
script, which imports mediapipe and numpy only (not bert_tf, not TensorFlow):
the C++ runtime of Android, iOS and Web, reading the file unmodified.
"""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile


def mediapipe_python():
    """An interpreter that imports mediapipe, or None."""
    explicit = os.environ.get("BERT_TF_MEDIAPIPE_PYTHON")
    if explicit:
        return explicit
    if importlib.util.find_spec("mediapipe") is not None:
        return sys.executable
    return None


def run_task(python, model_file, task, texts, timing_repeats=0):
    """Runs `task` ("embed" or "classify") on each of `texts`.

    Returns {"embeddings": float [N, D]} or {"labels": [N], "scores": [N, C]
    in class-index order}, and "load_ms": the time to create the task; with
    `timing_repeats`, also "latencies_ms": the per-call times of
    `timing_repeats` passes over `texts`.
    """
    import numpy as np

    with tempfile.TemporaryDirectory() as directory:
        request = os.path.join(directory, "request.json")
        with open(request, "w") as f:
            json.dump(
                {
                    "model": model_file,
                    "task": task,
                    "texts": list(texts),
                    "timing_repeats": timing_repeats,
                    "out": os.path.join(directory, "out.npz"),
                },
                f,
            )
        subprocess.run(
            [python, os.path.abspath(__file__), request],
            check=True,
            timeout=3600,
            env={**os.environ, "GLOG_minloglevel": "2"},
        )
        with np.load(os.path.join(directory, "out.npz")) as out:
            return {name: out[name] for name in out.files}


def _main(request_file):
    import time

    import numpy as np
    from mediapipe.tasks.python.core.base_options import BaseOptions
    from mediapipe.tasks.python.text import text_classifier
    from mediapipe.tasks.python.text import text_embedder

    with open(request_file) as f:
        request = json.load(f)
    base = BaseOptions(model_asset_path=request["model"])
    out = {}
    # Creation time: reading the file, the tokenizer's vocabulary, the graph.
    start = time.perf_counter()
    if request["task"] == "embed":
        options = text_embedder.TextEmbedderOptions(base_options=base)
        task = text_embedder.TextEmbedder.create_from_options(options)

        def run(text):
            return task.embed(text).embeddings[0].embedding

        def collect(results):
            out["embeddings"] = np.stack(results).astype(np.float32)

    else:
        # Every class's score, by index.
        options = text_classifier.TextClassifierOptions(
            base_options=base, max_results=-1
        )
        task = text_classifier.TextClassifier.create_from_options(options)

        def run(text):
            return task.classify(text).classifications[0].categories

        def collect(results):
            count = len(results[0]) if results else 0
            scores = np.zeros((len(results), count), np.float32)
            labels = []
            for row, categories in enumerate(results):
                for category in categories:
                    scores[row, category.index] = category.score
                labels.append(max(categories, key=lambda c: c.score).category_name)
            out["scores"], out["labels"] = scores, np.array(labels)

    out["load_ms"] = np.array((time.perf_counter() - start) * 1e3)
    with task:
        collect([run(text) for text in request["texts"]])
        latencies = []
        for _ in range(request["timing_repeats"]):
            for text in request["texts"]:
                start = time.perf_counter()
                run(text)
                latencies.append((time.perf_counter() - start) * 1e3)
        out["latencies_ms"] = np.array(latencies)
    np.savez(request["out"], **out)


if __name__ == "__main__":
    _main(sys.argv[1])
