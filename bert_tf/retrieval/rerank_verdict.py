"""The re-ranker's verdict: whether a run_reranker output_dir re-ranks worse than its first stage.

run_reranker --do_eval measures both stages on its --eval_split and records
the outcome in the output_dir (`VERDICT_FILE`, beside eval_results.txt): the
guard metric (`GUARD_METRIC`, mrr@10) of the first stage and of the
re-ranked order, and whether the re-ranked figure is lower. A cross-encoder
trained too little can undo a good first stage (30 steps took SQuAD's
mrr@10 from 0.748 to 0.128), and a printed warning is easily missed; so
every later consumer of that directory as a second stage (bert-tf-search
--rerank_checkpoint, run_retrieval --rerank_checkpoint with --do_eval or
--export_dir, export_saved_model --model_type=retrieval --rerank_checkpoint)
asks `second_stage` first and keeps the first stage's order, saying so in
one log line, unless told --rerank_even_if_worse. A rerun that evaluates
again rewrites the verdict.

Example:

```python
checkpoint = second_stage(options.rerank_checkpoint, options.rerank_even_if_worse,
                          "bert-tf-search")
if checkpoint is None:
    ...  # the first stage's order
```
"""

import json
import os

from absl import logging

from bert_tf.errors import UserInputError

# Beside eval_results.txt in a run_reranker output_dir.
VERDICT_FILE = "rerank_verdict.json"
# The metric the verdict compares; recall@1 when a run is too shallow for it
# (--eval_top_k below 10 reports no mrr@10).
GUARD_METRIC = "mrr@10"
FALLBACK_METRIC = "recall@1"
OVERRIDE_FLAG = "--rerank_even_if_worse"

__all__ = [
    "GUARD_METRIC",
    "OVERRIDE_FLAG",
    "VERDICT_FILE",
    "read_verdict",
    "record_verdict",
    "second_stage",
]


def record_verdict(output_dir, first, second, eval_split, global_step, num_queries):
    """Writes `VERDICT_FILE` in `output_dir` (replacing an older one) and
    returns it: the guard metric of both stages and ``keep_first_stage``,
    whether re-ranking lowered it. When it did, one warning says that the
    consumers will keep the first-stage order, and how to override.

    Args:
      output_dir: the run_reranker output_dir (its final checkpoint).
      first, second: {metric name: value} of the first stage and of the
        re-ranked order over the same queries.
      eval_split: the qrels split they were measured on.
      global_step: the training step of the evaluated weights.
      num_queries: the queries measured.
    """
    metric = GUARD_METRIC if GUARD_METRIC in first else FALLBACK_METRIC
    verdict = {
        "keep_first_stage": bool(second[metric] < first[metric]),
        "metric": metric,
        "retrieval": float(first[metric]),
        "reranked": float(second[metric]),
        "eval_split": eval_split,
        "num_queries": int(num_queries),
        "global_step": int(global_step),
    }
    path = os.path.join(output_dir, VERDICT_FILE)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(verdict, f, indent=2)
        f.write("\n")
    if verdict["keep_first_stage"]:
        logging.warning(
            "Re-ranking lowered %s on %s from %.4f to %.4f: recorded in %s, so "
            "bert-tf-search, run_retrieval and the two-stage export will keep the "
            "first-stage order with this cross-encoder (%s re-ranks anyway; a "
            "rerun with --do_eval judges again).",
            metric,
            eval_split,
            verdict["retrieval"],
            verdict["reranked"],
            path,
            OVERRIDE_FLAG,
        )
    return verdict


def read_verdict(checkpoint):
    """The verdict recorded for the cross-encoder at `checkpoint` (a
    run_reranker output_dir, or a checkpoint prefix in one), or None (none
    recorded: e.g. a CrossEncoder directory).

    Raises:
      UserInputError: the file is not a verdict (naming it).
    """
    checkpoint = os.fspath(checkpoint)
    directory = checkpoint if os.path.isdir(checkpoint) else os.path.dirname(checkpoint)
    path = os.path.join(directory, VERDICT_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            verdict = json.load(f)
        keep = verdict["keep_first_stage"]
        if not isinstance(keep, bool):
            raise TypeError("keep_first_stage is not true or false")
    except (ValueError, KeyError, TypeError) as error:
        raise UserInputError(
            f"rerank_checkpoint: {path}: not a re-ranking verdict ({error}); "
            "rerun run_reranker with --do_eval to write it again, or delete it",
            argument="rerank_checkpoint",
        ) from None
    verdict["path"] = path
    return verdict


def second_stage(checkpoint, even_if_worse, consumer):
    """The cross-encoder `consumer` should re-rank with: `checkpoint`, or
    None (keep the first stage's order) when its recorded verdict says it
    re-ranked worse and `even_if_worse` is not set. Either way a verdict
    against it is said in one log line.

    Args:
      checkpoint: --rerank_checkpoint (None: no second stage).
      even_if_worse: --rerank_even_if_worse.
      consumer: what re-ranks, for the log line (e.g. "bert-tf-search").
    """
    if not checkpoint:
        return None
    verdict = read_verdict(checkpoint)
    if verdict is None or not verdict["keep_first_stage"]:
        return checkpoint
    figures = (
        f"{verdict.get('metric')} {verdict.get('retrieval', float('nan')):.4f} -> "
        f"{verdict.get('reranked', float('nan')):.4f} on "
        f"{verdict.get('eval_split')} at step {verdict.get('global_step')}"
    )
    if even_if_worse:
        logging.warning(
            "%s: re-ranking with %s although %s records that it re-ranked worse "
            "(%s): %s",
            consumer,
            checkpoint,
            verdict["path"],
            figures,
            OVERRIDE_FLAG,
        )
        return checkpoint
    logging.warning(
        "%s: kept the retrieval order, not re-ranking with %s: %s records that "
        "it re-ranked worse than the first stage (%s); %s re-ranks anyway",
        consumer,
        checkpoint,
        verdict["path"],
        figures,
        OVERRIDE_FLAG,
    )
    return None
