"""Encoder throughput: bert_tf against KerasHub and HF PyTorch, in one run.

Prints examples/s for inference and for one training step (forward, backward,
AdamW update) at seq 128, at the MiniLM size (L6 H384 A12 I1536) and the
BERT-base size (L12 H768 A12 I3072). Weights are random: speed does not depend
on their values. KerasHub and PyTorch rows appear when those packages are
installed. Every framework gets the same threads and the same inputs.

The `bert_tf`, `keras_hub` and `torch` rows are the plainest harness a user
would write: the encoder's `pooled_output`, dropout, a Dense head, softmax
cross-entropy and the framework's AdamW, in one `tf.function` (PyTorch: eager).
The `bert_tf_classifier` row is what run_classifier.py trains instead:
`BertClassifier`, whose last layer computes only the [CLS] position it needs
(`output_range=1`), with the original AdamWeightDecay. That row is faster than
the plain one by about the share of the last layer in the model, so it is not
the figure to compare frameworks by.

    python benchmarks/encoder_throughput.py                # both sizes
    python benchmarks/encoder_throughput.py --sizes minilm --seconds 20
    python benchmarks/encoder_throughput.py --dtype mixed_bfloat16  # bf16 CPUs/GPUs
"""

import argparse
import os
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
from cpu_flags import cpu_description  # noqa: E402

SIZES = {
    # name: (layers, hidden, heads, intermediate, infer batch, train batch)
    "minilm": (6, 384, 12, 1536, 32, 32),
    "base": (12, 768, 12, 3072, 32, 16),
}
VOCAB = 30522
DTYPES = ("float32", "mixed_bfloat16", "mixed_float16")  # Keras policies
SEQ = 128


def make_batch(batch, seq, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, VOCAB, size=(batch, seq)).astype("int32")
    return {
        "input_ids": ids,
        "input_mask": np.ones((batch, seq), "int32"),
        "segment_ids": np.zeros((batch, seq), "int32"),
        "labels": rng.integers(0, 2, size=(batch,)).astype("int32"),
    }


def time_it(step, batch, seconds):
    """Runs `step` twice to warm up, then for about `seconds`; returns ex/s."""
    for _ in range(2):
        step()
    count, start = 0, time.perf_counter()
    while True:
        step()
        count += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds and count >= 3:
            return count * batch / elapsed


def interleaved_rates(steps, seconds, rounds):
    """Median ex/s of each step over `rounds` rounds, the steps taking turns.

    A shared 2-core machine has bursts of outside load lasting tens of
    seconds; timing the frameworks one after the other lets a burst land on
    one of them. Taking turns within each round and keeping the median puts
    every framework under the same conditions.
    """
    rates = {name: [] for name in steps}
    for _ in range(rounds):
        for name, (step, batch) in steps.items():
            rates[name].append(time_it(step, batch, seconds))
    return {name: float(np.median(values)) for name, values in rates.items()}


def bench_bert_tf(size, jit_compile, as_run_classifier=False):
    """Returns ((inference step, batch), (training step, batch)).

    as_run_classifier: train run_classifier's model and optimizer instead of
    the plain encoder + Dense head + Keras AdamW.
    """
    import keras
    import tensorflow as tf

    import bert_tf

    layers, hidden, heads, inter, infer_batch, train_batch = SIZES[size]
    config = bert_tf.BertConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        type_vocab_size=2,
    )
    # Inference runs the full encoder (every position's output, as KerasHub's
    # backbone).
    encoder = bert_tf.BertEncoder(config)
    if as_run_classifier:
        # Computes only the [CLS] position in its last layer (`output_range=1`).
        model = bert_tf.BertClassifier(config, num_labels=2)
        from bert_tf.training.optimization import create_optimizer

        optimizer = create_optimizer("adamw_original", 1e-5, 1000, 100, model)
        variables = model.trainable_variables

        def logits_of(features):
            return model(features, training=True)["logits"]

    else:
        train_encoder = bert_tf.BertEncoder(config)
        head = keras.layers.Dense(2)
        head.build((None, hidden))
        dropout = keras.layers.Dropout(0.1)
        optimizer = keras.optimizers.AdamW(1e-5)
        variables = train_encoder.trainable_variables + head.trainable_variables

        def logits_of(features):
            pooled = train_encoder(features, training=True)["pooled_output"]
            return head(dropout(pooled, training=True))

    optimizer.build(variables)

    @tf.function(jit_compile=jit_compile)
    def infer(features):
        return encoder(features, training=False)["pooled_output"]

    @tf.function(jit_compile=jit_compile)
    def train(features, labels):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(
                    labels, logits_of(features)
                )
            )
        grads = tape.gradient(loss, variables)
        optimizer.apply(grads, variables)
        return loss

    data = make_batch(infer_batch, SEQ)
    infer_features = {k: tf.constant(v) for k, v in data.items() if k != "labels"}
    data = make_batch(train_batch, SEQ)
    features = {k: tf.constant(v) for k, v in data.items() if k != "labels"}
    labels = tf.constant(data["labels"])
    return (
        (lambda: infer(infer_features).numpy(), infer_batch),
        (lambda: train(features, labels).numpy(), train_batch),
    )


def bench_keras_hub(size, jit_compile):
    import keras
    import keras_hub
    import tensorflow as tf

    layers, hidden, heads, inter, infer_batch, train_batch = SIZES[size]
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=VOCAB,
        num_layers=layers,
        num_heads=heads,
        hidden_dim=hidden,
        intermediate_dim=inter,
        max_sequence_length=512,
    )
    head = keras.layers.Dense(2)
    head.build((None, hidden))
    dropout = keras.layers.Dropout(0.1)
    variables = backbone.trainable_variables + head.trainable_variables
    optimizer = keras.optimizers.AdamW(1e-5)
    optimizer.build(variables)

    def inputs(data):
        return {
            "token_ids": tf.constant(data["input_ids"]),
            "segment_ids": tf.constant(data["segment_ids"]),
            "padding_mask": tf.constant(data["input_mask"]),
        }

    @tf.function(jit_compile=jit_compile)
    def infer(features):
        return backbone(features, training=False)["pooled_output"]

    @tf.function(jit_compile=jit_compile)
    def train(features, labels):
        with tf.GradientTape() as tape:
            pooled = backbone(features, training=True)["pooled_output"]
            logits = head(dropout(pooled, training=True))
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
            )
        grads = tape.gradient(loss, variables)
        optimizer.apply(grads, variables)
        return loss

    infer_features = inputs(make_batch(infer_batch, SEQ))
    data = make_batch(train_batch, SEQ)
    features = inputs(data)
    labels = tf.constant(data["labels"])
    return (
        (lambda: infer(infer_features).numpy(), infer_batch),
        (lambda: train(features, labels).numpy(), train_batch),
    )


def bench_torch(size, dtype):
    import contextlib

    import torch
    import transformers

    def autocast():
        if dtype == "float32":
            return contextlib.nullcontext()
        torch_dtype = torch.bfloat16 if dtype == "mixed_bfloat16" else torch.float16
        return torch.autocast("cpu", dtype=torch_dtype)

    layers, hidden, heads, inter, infer_batch, train_batch = SIZES[size]
    config = transformers.BertConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=inter,
        num_labels=2,
    )
    model = transformers.BertForSequenceClassification(config)

    def inputs(data):
        return {
            "input_ids": torch.tensor(data["input_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(data["input_mask"], dtype=torch.long),
            "token_type_ids": torch.tensor(data["segment_ids"], dtype=torch.long),
        }

    infer_features = inputs(make_batch(infer_batch, SEQ))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5)
    data = make_batch(train_batch, SEQ)
    features = inputs(data)
    labels = torch.tensor(data["labels"], dtype=torch.long)

    def infer():
        model.eval()
        with torch.no_grad(), autocast():
            model.bert(**infer_features).pooler_output.sum().item()

    def train():
        model.train()
        optimizer.zero_grad()
        with autocast():
            loss = model(**features, labels=labels).loss
        loss.backward()
        optimizer.step()
        loss.item()

    return (infer, infer_batch), (train, train_batch)


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="minilm,base")
    parser.add_argument(
        "--seconds", type=float, default=6.0, help="timed seconds per figure and round"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--frameworks",
        default="bert_tf,bert_tf_classifier,bert_tf_xla,keras_hub,keras_hub_xla,torch",
    )
    parser.add_argument(
        "--dtype",
        default="float32",
        choices=DTYPES,
        help="Keras dtype policy for the bert_tf and KerasHub rows (PyTorch rows "
        "run under torch.autocast with the matching dtype)",
    )
    parser.add_argument(
        "--plot", default=None, help="also draw the figures as bars (a PNG path)"
    )
    args = parser.parse_args()

    import importlib.util

    import keras

    keras.mixed_precision.set_global_policy(args.dtype)
    builders = {
        "bert_tf": lambda s: bench_bert_tf(s, jit_compile=False),
        "bert_tf_xla": lambda s: bench_bert_tf(s, jit_compile=True),
        "bert_tf_classifier": lambda s: bench_bert_tf(
            s, jit_compile=False, as_run_classifier=True
        ),
        "keras_hub": lambda s: bench_keras_hub(s, jit_compile=False),
        "keras_hub_xla": lambda s: bench_keras_hub(s, jit_compile=True),
        "torch": lambda s: bench_torch(s, args.dtype),
    }
    needs = {
        "keras_hub": "keras_hub",
        "keras_hub_xla": "keras_hub",
        "torch": "transformers",
    }
    print(
        f"cores: {os.cpu_count()}, seq {SEQ}, {args.dtype}; examples/s, median of "
        f"{args.rounds} interleaved rounds (higher is better)"
    )
    print(f"{'size':8} {'framework':19} {'inference':>10} {'train step':>11}")
    groups = {}
    for size in args.sizes.split(","):
        infer_steps, train_steps = {}, {}
        for name in args.frameworks.split(","):
            module = needs.get(name)
            if module and importlib.util.find_spec(module) is None:
                print(f"{size:8} {name:19} {'(not installed)':>22}")
                continue
            infer_steps[name], train_steps[name] = builders[name](size)
        infer = interleaved_rates(infer_steps, args.seconds, args.rounds)
        train = interleaved_rates(train_steps, args.seconds, args.rounds)
        for name in infer_steps:
            print(f"{size:8} {name:19} {infer[name]:10.1f} {train[name]:11.1f}")
        groups[f"{size} inference"] = infer
        groups[f"{size} training step"] = train
        if "bert_tf" in train and "keras_hub" in train:
            print(
                f"{size:8} bert_tf / keras_hub: inference "
                f"{infer['bert_tf'] / infer['keras_hub']:.2f}x, train step "
                f"{train['bert_tf'] / train['keras_hub']:.2f}x",
                flush=True,
            )
    if args.plot:
        from plots import bar_chart

        bar_chart(
            args.plot,
            f"Encoder throughput, seq {SEQ}, {args.dtype} (median of "
            f"{args.rounds} interleaved rounds)",
            groups,
            "examples/s (higher is better)",
        )


if __name__ == "__main__":
    main()
