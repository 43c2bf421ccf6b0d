"""The MiniLM models the MediaPipe parity test and benchmark export.

* the sentence encoder: all-MiniLM-L6-v2 as sentence-transformers runs it
  (mean pooling, normalised; length 256);
* an SST-2 classifier: MiniLM with a classification head fine-tuned for a few
  steps on the first SST-2 train rows (fixed seed), so its labels are
  decisive rather than coin flips near 0.5.

References are our SavedModel's outputs (`saved_model_outputs`), served from
the exported directory as TF Serving would.
"""

import csv
import os

import numpy as np

SST2_LABELS = ["negative", "positive"]
CLASSIFIER_SEQ_LENGTH = 64


def stsb_sentences(data_dir, split="dev"):
    """Both columns of STS-B `split`, first then second, and the gold scores."""
    path = os.path.join(data_dir, "glue", "STS-B", f"{split}.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    gold = np.array([float(r[9]) for r in rows])
    return [r[7] for r in rows] + [r[8] for r in rows], gold


def sst2(data_dir, split):
    """(sentences, label ids) of SST-2 `split`."""
    path = os.path.join(data_dir, "glue", "SST-2", f"{split}.tsv")
    with open(path, encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
    return [r[0] for r in rows], np.array([int(r[1]) for r in rows])


def sst2_classifier(minilm_dir, data_dir, rows=256, steps=32, batch_size=16):
    """MiniLM + a classification head, `steps` Adam steps on the first `rows`
    SST-2 train sentences; returns (model, vocab_file)."""
    import keras
    import tensorflow as tf

    from bert_tf.checkpoints.loading import find_checkpoint
    from bert_tf.models import BertClassifier
    from bert_tf.text.preprocessing import BertPreprocessor

    keras.utils.set_random_seed(7)
    vocab_file = find_checkpoint(minilm_dir).vocab_file
    model = BertClassifier.from_checkpoint(minilm_dir, num_labels=2)
    preprocessor = BertPreprocessor(vocab_file, True, CLASSIFIER_SEQ_LENGTH)
    texts, labels = sst2(data_dir, "train")
    texts, labels = texts[:rows], labels[:rows]
    optimizer = keras.optimizers.Adam(1e-4)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    variables = model.trainable_variables

    # Traced once: eager steps of MiniLM cost several times as much.
    @tf.function(reduce_retracing=True)
    def train_step(inputs, labels):
        with tf.GradientTape() as tape:
            logits = model(inputs, training=True)["logits"]
            loss = loss_fn(labels, logits)
        optimizer.apply_gradients(
            zip(tape.gradient(loss, variables), variables, strict=True)
        )

    for step in range(steps):
        start = step * batch_size % rows
        inputs = preprocessor(tf.constant(texts[start : start + batch_size]))
        train_step(inputs, tf.constant(labels[start : start + batch_size]))
    return model, vocab_file


def id_echo_file(vocab_file, path, width):
    """A MediaPipe TextEmbedder file whose "embedding" is the ids it was fed,
    mapped to ours as export_mediapipe's files map them (float, [CLS] ...
    [SEP], then -1 up to `width`): what MediaPipe's own tokenizer makes of
    a text with the exported vocabulary."""
    import tensorflow as tf

    from bert_tf.serving.mediapipe_exporter import write_mediapipe_file
    from bert_tf.serving.mediapipe_vocabulary import mediapipe_vocabulary

    lines, remap = mediapipe_vocabulary(vocab_file)

    class IdEcho(tf.Module):
        def __init__(self):
            super().__init__()
            self.remap = tf.constant(remap, tf.int32)

        def serve(self, ids, mask, segment_ids):
            ids = tf.cast(tf.gather(self.remap, ids), tf.float32)
            # The converter keeps only inputs the output reads; MediaPipe
            # wants all three.
            ids += 0.0 * tf.cast(mask + segment_ids, tf.float32)
            padded = tf.pad(ids, [[0, 0], [0, width]], constant_values=-1.0)
            return {"embedding": padded[:, :width]}

    metadata = {"model": "id_echo", "quantization": "none"}
    write_mediapipe_file(IdEcho(), path, lines, metadata, "embedding", "The ids.")


def saved_model_outputs(version_dir, input_name, texts, output, batch_size=64):
    """`output` of the SavedModel's serving_default on `texts` (numpy)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the tokenizer's ops)

    serve = tf.saved_model.load(version_dir).signatures["serving_default"]
    parts = [
        serve(**{input_name: tf.constant(texts[i : i + batch_size])})[output].numpy()
        for i in range(0, len(texts), batch_size)
    ]
    return np.concatenate(parts)
