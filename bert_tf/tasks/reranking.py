"""Two-stage search on BEIR data: dual-encoder candidates, cross-encoder order.

`RerankingTask` is run_reranker.py on the task protocol: --do_train
fine-tunes a `BertReranker` on groups of one positive and --hard_negatives
mined negatives per judged (query, document) of qrels/<train_split>.tsv;
--do_eval re-orders the first stage's top --rerank_top_k documents of every
qrels/<eval_split>.tsv query and writes both stages' metrics side by side
(`eval_results.txt`: `<metric>_retrieval` and `<metric>_reranked`), the
re-ranked run (`run.tsv`, TREC format) and the verdict
(`bert_tf.retrieval.rerank_verdict`: rerank_verdict.json): when re-ranking
lowered mrr@10, later consumers of the output_dir keep the first stage's
order unless told --rerank_even_if_worse.

The pieces it puts together, each on plain arguments:

- `first_stage`: the dual encoder's top documents per query, by exact inner
  product over every passage (passages folded back to documents by their
  best passage, as run_retrieval's evaluation);
- `training_groups`: per relevant (query, document) judgement, the
  document's best passage (by the first stage) and `num_negatives` hard
  negatives: the best-ranked passages of documents not relevant to the
  query (the first stage's top k minus the positives);
- `rerank_loss`: binary cross-entropy on every pair of a group (label 1 for
  its positive) or listwise softmax cross-entropy over the group (the
  positive is the target class);
- `rerank_documents` and `two_stage_metrics`: the first stage's top N
  re-scored by the cross-encoder (a document scores as its best passage),
  and the BEIR metrics of both stages side by side.
"""

import json
import os

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.data_prep import beir
from bert_tf.metrics.retrieval import DEFAULT_METRIC_NAMES
from bert_tf.metrics.retrieval import metric_names_within
from bert_tf.metrics.retrieval import rank_documents
from bert_tf.metrics.retrieval import retrieval_metrics
from bert_tf.models.bert_reranker import BertReranker
from bert_tf.options.reranker_options import RERANK_LOSSES
from bert_tf.retrieval.document_search import RUN_FILE
from bert_tf.retrieval.document_search import rerank_documents
from bert_tf.retrieval.document_search import search_documents
from bert_tf.retrieval.document_search import warn_if_reranking_hurts
from bert_tf.retrieval.document_search import write_run
from bert_tf.retrieval.exact_store import ExactStore
from bert_tf.retrieval.indexing import passages_of
from bert_tf.retrieval.indexing import towers_at
from bert_tf.retrieval.rerank_verdict import read_verdict
from bert_tf.retrieval.rerank_verdict import record_verdict
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.training_data import TrainingData
from bert_tf.tasks.training_data import pipeline_share
from bert_tf.tasks.training_data import repeated_batches
from bert_tf.training.train_or_restore import training_steps

# Suffixes of the two stages' metrics in eval_results.txt (sorted by name,
# each metric's two values are on adjacent lines).
FIRST_STAGE = "retrieval"
SECOND_STAGE = "reranked"


def passage_store(towers, passages, batch_size=64):
    """An in-memory `ExactStore` of every passage, embedded by the document
    tower (ids: the passage's index in `passages`)."""
    store = ExactStore(towers.embedding_dim, metric="IP")
    vectors = towers.encode_documents([p.text for p in passages], batch_size)
    store.upsert(
        [StoredPassage(str(i), p.doc_id, "") for i, p in enumerate(passages)], vectors
    )
    return store


def first_stage(towers, store, queries, query_ids, passages, top_k, batch_size=64):
    """{query id: {doc id: score}}: the dual encoder's `top_k` documents."""
    vectors = towers.encode_queries([queries[q].text for q in query_ids], batch_size)
    indexed = [p._replace(id=str(i)) for i, p in enumerate(passages)]
    found = search_documents(store, vectors, indexed, top_k)
    return {q: dict(docs) for q, docs in zip(query_ids, found, strict=True)}


def training_groups(
    qrels, store, towers, queries, passages, num_negatives, batch_size=64
):
    """[(query id, positive passage index, [negative passage indices])]: one
    group per relevant judgement (see the module docstring).

    Queries with fewer than `num_negatives` non-relevant passages in the
    whole corpus are skipped (every group has the same size).
    """
    by_doc = {}
    for index, passage in enumerate(passages):
        by_doc.setdefault(passage.doc_id, []).append(index)
    query_ids = [q for q in qrels if any(s >= 1 for s in qrels[q].values())]
    vectors = towers.encode_queries([queries[q].text for q in query_ids], batch_size)
    longest = max(len(v) for v in by_doc.values())
    depth = min(len(passages), num_negatives + 8 + longest * 4)
    found = store.search(vectors, depth)
    groups = []
    skipped = 0
    for query_id, ids in zip(query_ids, found.ids, strict=True):
        ranked = [int(i) for i in ids]
        relevant = {d for d, s in qrels[query_id].items() if s >= 1}
        negatives = [i for i in ranked if passages[i].doc_id not in relevant]
        if len(negatives) < num_negatives:
            skipped += 1
            continue
        for doc_id in sorted(relevant & by_doc.keys()):
            own = set(by_doc[doc_id])
            positive = next((i for i in ranked if i in own), by_doc[doc_id][0])
            groups.append((query_id, positive, negatives[:num_negatives]))
    if skipped:
        logging.warning(
            "%d queries skipped: fewer than %d non-relevant passages found",
            skipped,
            num_negatives,
        )
    return groups


def rerank_loss(kind, logits, group_size):
    """The loss of logits [groups x group_size] (each group: its positive
    first, then its negatives).

    Args:
        kind: "bce" (sigmoid cross-entropy of every pair against 1 for the
            positive, 0 for negatives; CrossEncoder's BinaryCrossEntropyLoss)
            or "listwise" (softmax cross-entropy over each group with the
            positive as the target; a multiple-negatives ranking loss).
        logits: float [groups * group_size].
        group_size: 1 + negatives per group.
    """
    logits = tf.reshape(tf.cast(logits, tf.float32), [-1, group_size])
    if kind == "bce":
        labels = tf.one_hot(tf.zeros(tf.shape(logits)[0], tf.int32), group_size)
        return tf.reduce_mean(
            tf.nn.sigmoid_cross_entropy_with_logits(labels=labels, logits=logits)
        )
    if kind == "listwise":
        targets = tf.zeros(tf.shape(logits)[0], tf.int32)
        return tf.reduce_mean(
            tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
        )
    raise ValueError(f"rerank loss must be one of {RERANK_LOSSES}, got {kind!r}")


def two_stage_metrics(qrels, first_run, reranked_run, names=DEFAULT_METRIC_NAMES):
    """{"<metric>_retrieval": ..., "<metric>_reranked": ...} for `names`; a
    warning names each metric the second stage made worse."""
    first = retrieval_metrics(qrels, first_run, names)
    second = retrieval_metrics(qrels, reranked_run, names)
    warn_if_reranking_hurts(first, second)
    results = {}
    for name in names:
        results[f"{name}_{FIRST_STAGE}"] = first[name]
        results[f"{name}_{SECOND_STAGE}"] = second[name]
    return results


# --- the task ---------------------------------------------------------------


def load_first_stage(path):
    """The dual encoder at `path`: a run_retrieval output_dir's trained
    towers, or a sentence-transformers directory (shared towers)."""
    return towers_at(path)


def has_score_head(path):
    """Whether the checkpoint at `path` holds a cross-encoder's score head."""
    return find_checkpoint(path).reader.lookup("output_weights") is not None


class RerankingTask(Task):
    """run_reranker.py: a cross-encoder trained on mined hard negatives and
    evaluated as the second stage of a dual encoder (see the module
    docstring).

    Args:
        run: the `RunOptions` (init_checkpoint: a cross-encoder to continue
            from, or a BERT checkpoint to start one on; max_seq_length: the
            longest (query, passage) pair).
        options: the `RerankerOptions`.

    Example:
    >>> run_task(RerankingTask(run_options, RerankerOptions(
    ...     data_dir="/tmp/squad_beir", retrieval_checkpoint=MINILM_DIR)))
    {'mrr@10_reranked': 0.83, 'mrr@10_retrieval': 0.76, ...}
    """

    script = "run_reranker"
    model_class = BertReranker
    copies_vocab = False  # prepare() writes the vocabulary and tokenizer settings

    def reads_sentence_pairs(self):
        return True

    def prepare(self, config):
        options = self.options
        self.corpus, self.queries, self.qrels = beir.read_task_files(
            options.data_dir,
            options.train_split if self.run.do_train else None,
            options.eval_split if self.run.do_eval else None,
        )
        self.towers = load_first_stage(options.retrieval_checkpoint)
        self.passages = passages_of(
            self.corpus, self.towers, options.passage_length, options.passage_stride
        )
        logging.info("First stage: embedding %d passages", len(self.passages))
        self.store = passage_store(
            self.towers, self.passages, options.encode_batch_size
        )
        self._warn_of_an_older_verdict()

    def _warn_of_an_older_verdict(self):
        """Training on without --do_eval keeps the last evaluation's verdict
        (the consumers go on keeping the first stage's order): say so."""
        if not self.run.do_train or self.run.do_eval:
            return
        verdict = read_verdict(self.output_dir)
        if verdict and verdict["keep_first_stage"]:
            logging.warning(
                "%s (step %s: re-ranking lowered %s) stays until a run with "
                "--do_eval judges the trained cross-encoder again",
                verdict["path"],
                verdict["global_step"],
                verdict["metric"],
            )

    def build_model(self, config):
        init = self.run.init_checkpoint
        model = BertReranker.from_checkpoint(
            init,
            config=config,
            vocab_file=self.run.vocab_file,
            do_lower_case=self.run.do_lower_case,
            seq_length=self.run.max_seq_length,
            new_head=not has_score_head(init),
        )
        self._write_tokenizer_files(model.preprocessor)
        self.preprocessor = model.preprocessor
        return model

    def _write_tokenizer_files(self, preprocessor):
        """vocab.txt and tokenizer_config.json beside the final checkpoint, so
        `BertReranker.from_checkpoint(output_dir)` (and the export) tokenize
        as training did."""
        os.makedirs(self.output_dir, exist_ok=True)
        with open(os.path.join(self.output_dir, "vocab.txt"), "wb") as f:
            f.write(preprocessor._require_vocabulary())
        with open(os.path.join(self.output_dir, "tokenizer_config.json"), "w") as f:
            json.dump(
                {
                    "do_lower_case": bool(preprocessor.do_lower_case),
                    "model_max_length": preprocessor.seq_length,
                },
                f,
            )

    @property
    def group_size(self):
        return 1 + self.options.hard_negatives

    def training_data(self):
        options, training = self.options, self.run.training
        groups = training_groups(
            self.qrels["train"],
            self.store,
            self.towers,
            self.queries,
            self.passages,
            options.hard_negatives,
            options.encode_batch_size,
        )
        num_train_steps = training.num_train_steps or training_steps(
            len(groups), training.train_batch_size, training.num_train_epochs
        )
        logging.info(
            "Training: %d groups (1 positive + %d negatives), batch %d groups, "
            "%d steps, %s loss",
            len(groups),
            options.hard_negatives,
            training.train_batch_size,
            num_train_steps,
            options.rerank_loss,
        )
        query_texts = np.array([self.queries[q].text for q, _, _ in groups], object)
        passage_texts = np.array(
            [[self.passages[i].text for i in (p, *n)] for _, p, n in groups], object
        )
        preprocessor = self.preprocessor
        micro_batch_size = training.micro_batch_size
        group_size = self.group_size
        seed = self.run.seed

        def dataset_fn(input_context, skip_batches):
            dataset = tf.data.Dataset.from_tensor_slices(
                (query_texts.astype(str), passage_texts.astype(str))
            )
            dataset = pipeline_share(dataset, input_context)

            def tokenize(queries, passages):
                # [groups] and [groups, group_size] -> group_size pairs per group.
                return preprocessor(
                    (tf.repeat(queries, group_size), tf.reshape(passages, [-1]))
                )

            dataset = dataset.shuffle(
                len(groups), seed=seed, reshuffle_each_iteration=True
            )
            return repeated_batches(dataset, micro_batch_size, skip_batches, tokenize)

        return TrainingData(
            dataset_fn,
            num_train_steps,
            options.training_fingerprints(self.run),
        )

    def loss(self, batch, outputs):
        return rerank_loss(self.options.rerank_loss, outputs, self.group_size)

    def evaluate(self, model, global_step):
        options = self.options
        qrels = self.qrels["eval"]
        query_ids = list(qrels)
        first = first_stage(
            self.towers,
            self.store,
            self.queries,
            query_ids,
            self.passages,
            options.eval_top_k,
            options.encode_batch_size,
        )
        reranked = rerank_documents(
            model,
            self.queries,
            first,
            self.passages,
            options.rerank_top_k,
            batch_size=self.run.eval_batch_size,
        )
        write_run(
            os.path.join(self.output_dir, RUN_FILE),
            query_ids,
            [rank_documents(reranked[q]) for q in query_ids],
        )
        names, _ = metric_names_within(options.eval_top_k)
        results = two_stage_metrics(qrels, first, reranked, names)
        record_verdict(
            self.output_dir,
            {n: results[f"{n}_{FIRST_STAGE}"] for n in names},
            {n: results[f"{n}_{SECOND_STAGE}"] for n in names},
            options.eval_split,
            global_step,
            len(query_ids),
        )
        results.update(
            global_step=global_step,
            num_queries=len(query_ids),
            rerank_top_k=options.rerank_top_k,
        )
        return results


def run(run_options, options):
    """run_reranker.py: `RerankingTask` through the runner; returns the eval
    results (or None)."""
    return run_task(RerankingTask(run_options, options))
