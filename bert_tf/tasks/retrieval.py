"""Retrieval with a dual encoder: fine-tune, index a BEIR corpus into a vector store, evaluate.

`run_retrieval(options)` does what `RetrievalOptions` asks, in this order:

- ``do_train``: fine-tunes the towers on ``qrels/<train_split>.tsv`` (query,
  relevant passage) pairs with in-batch negatives (sentence-transformers'
  MultipleNegativesRankingLoss: cross-entropy over ``similarity_scale`` x
  query.passage against every passage of the batch), plus
  ``hard_negatives`` passages per query mined by the current encoder at the
  start of every epoch (the best-ranked passages of documents not relevant to
  it). Other passages of the batch relevant to the query are masked out,
  never used as negatives. The towers are saved in ``output_dir`` as
  sentence-transformers directories (`DualEncoder.save`); TensorBoard logs in
  ``output_dir/train``.
- ``do_index``: the corpus's passages into the vector store (Milvus at
  ``milvus_uri``): only passages that are new or whose text changed are
  embedded; passages no longer in the corpus are deleted; each batch is
  written (durably) as it is embedded, so a killed run resumes where it
  stopped and a rerun adds no duplicates.
- ``do_eval``: the queries of ``qrels/<eval_split>.tsv`` searched in the
  store, passages folded back to documents: ``eval_results.txt`` (``name =
  value``: recall@1/5/10/100, mrr@10, ndcg@10) and ``run.tsv`` (TREC run
  format: ``qid Q0 docid rank score run_name``).
- ``export_dir``: the retrieval SavedModel (`bert_tf.retrieval.retrieval_saved_model`)
  over the vectors of the store; with ``rerank_checkpoint``, a cross-encoder
  re-orders each query's ``rerank_top_k`` best passages in the same graph.

The encoder is the one trained in ``output_dir`` when there is one, else
``init_checkpoint``.
"""

import hashlib
import json
import math
import os
import random
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.retrieval.dual_encoder import DualEncoder
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.retrieval_metrics import DEFAULT_METRIC_NAMES
from bert_tf.retrieval_metrics import retrieval_metrics
from bert_tf.tokenization import FullTokenizer

EVAL_RESULTS_FILE = "eval_results.txt"
RUN_FILE = "run.tsv"
RUN_NAME = "bert_tf"
# Passages embedded and written per step of --do_index (what a kill can lose).
INDEX_CHUNK = 256

__all__ = [
    "evaluate",
    "index_corpus",
    "load_dual_encoder",
    "open_store",
    "passages_of",
    "run_retrieval",
    "train_dual_encoder",
]


def load_dual_encoder(options):
    """The towers trained in output_dir, else those of --init_checkpoint."""
    kwargs = {}
    if options.max_seq_length:
        kwargs["max_seq_length"] = options.max_seq_length
    if DualEncoder.saved_in(options.output_dir):
        logging.info("Dual encoder: the one trained in %s", options.output_dir)
        return DualEncoder.load(options.output_dir, **kwargs)
    if not options.init_checkpoint:
        raise UserInputError(
            "--init_checkpoint: required (a sentence-transformers directory or a "
            f"BERT checkpoint) until {options.output_dir} holds a trained encoder"
        )
    if options.pooling:
        kwargs["pooling"] = options.pooling
    return DualEncoder.from_checkpoint(
        options.init_checkpoint, shared=options.shared_towers, **kwargs
    )


def passages_of(corpus, towers, options):
    """The corpus's `beir.Passage`s, cut by the document tower's tokenizer.

    Default --passage_length: the tower's max_seq_length - 2 (what it reads
    of one passage, without the title); default --passage_stride: half of it.
    """
    preprocessor = towers.document_encoder.preprocessor
    tokenizer = FullTokenizer(preprocessor.vocab_file, preprocessor.do_lower_case)
    length = options.passage_length or preprocessor.seq_length - 2
    stride = options.passage_stride or max(length // 2, 1)
    cache = {}

    def count_pieces(word):
        if word not in cache:
            cache[word] = len(tokenizer.tokenize(word)) or 1
        return cache[word]

    passages = beir.split_passages(corpus, count_pieces, length, stride)
    logging.info(
        "%d documents -> %d passages (--passage_length=%d, --passage_stride=%d)",
        len(corpus),
        len(passages),
        length,
        stride,
    )
    return passages


def open_store(options, towers):
    """The Milvus collection of --milvus_uri / --milvus_collection."""
    from bert_tf.retrieval.milvus_store import MilvusStore

    return MilvusStore(
        options.uri,
        options.milvus_collection,
        towers.embedding_dim,
        towers.fingerprint(),
        metric=options.metric_type,
        index_type=options.index_type,
        index_params=options.index_params(),
        search_params=options.search_params(),
        overwrite=options.overwrite_index,
    )


def _text_hash(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _progress_bar(total, unit):
    show = logging.get_verbosity() >= logging.INFO
    return keras.utils.Progbar(total, unit_name=unit, verbose=1 if show else 0)


def index_corpus(towers, passages, store, batch_size=64):
    """Embeds the passages that are new or changed into `store`; removes those
    the corpus no longer has. Returns {"embedded", "kept", "removed"} counts.

    Each chunk of passages is written as soon as it is embedded, so a killed
    run loses at most one chunk and the next run embeds only what is missing.
    """
    stored = store.stored_passages()
    wanted = {p.id: StoredPassage(p.id, p.doc_id, _text_hash(p.text)) for p in passages}
    removed = [pid for pid in stored if pid not in wanted]
    if removed:
        logging.info("Removing %d passages no longer in the corpus", len(removed))
        store.delete(removed)
    todo = [p for p in passages if stored.get(p.id) != wanted[p.id]]
    kept = len(passages) - len(todo)
    logging.info(
        "Indexing: %d passages already in the store, %d to embed", kept, len(todo)
    )
    bar = _progress_bar(len(todo), "passage")
    for start in range(0, len(todo), INDEX_CHUNK):
        chunk = todo[start : start + INDEX_CHUNK]
        vectors = towers.encode_documents([p.text for p in chunk], batch_size)
        store.upsert([wanted[p.id] for p in chunk], vectors)
        bar.update(start + len(chunk))
    return {"embedded": len(todo), "kept": kept, "removed": len(removed)}


def search_documents(store, query_vectors, passages, top_k):
    """Per query, [(doc id, score)] best first: passages searched in `store`,
    each document scored by its best passage.

    Enough passages are searched for the fold to be exact: the k-th best
    document's best passage ranks at most (k - 1) x (most passages of one
    document) + 1.
    """
    doc_of = {p.id: p.doc_id for p in passages}
    per_doc = {}
    for p in passages:
        per_doc[p.doc_id] = per_doc.get(p.doc_id, 0) + 1
    most = max(per_doc.values()) if per_doc else 1
    found = store.search(query_vectors, top_k * most)
    return [
        beir.fold_to_documents(zip(ids, scores, strict=True), doc_of, top_k)
        for ids, scores in zip(found.ids, found.scores, strict=True)
    ]


def evaluate(towers, store, queries, qrels, passages, output_dir, options):
    """Searches the qrels' queries; writes eval_results.txt and run.tsv; returns
    the metrics."""
    query_ids = list(qrels)
    logging.info("Embedding %d queries", len(query_ids))
    vectors = towers.encode_queries(
        [queries[q].text for q in query_ids], options.encode_batch_size
    )
    start = time.perf_counter()
    results = search_documents(store, vectors, passages, options.eval_top_k)
    logging.info(
        "Searched %d queries in %.2f s", len(query_ids), time.perf_counter() - start
    )
    run = {q: dict(found) for q, found in zip(query_ids, results, strict=True)}
    metrics = retrieval_metrics(qrels, run, DEFAULT_METRIC_NAMES)
    with open(os.path.join(output_dir, RUN_FILE), "w", encoding="utf-8") as f:
        for query_id, found in zip(query_ids, results, strict=True):
            for rank, (doc_id, score) in enumerate(found, start=1):
                f.write(f"{query_id} Q0 {doc_id} {rank} {score:.6f} {RUN_NAME}\n")
    logging.info("***** Eval results (%s) *****", options.eval_split)
    with open(os.path.join(output_dir, EVAL_RESULTS_FILE), "w") as f:
        for name, value in metrics.items():
            logging.info("  %s = %.4f", name, value)
            f.write(f"{name} = {value}\n")
        f.write(f"num_queries = {len(query_ids)}\n")
    return metrics


# --- training -----------------------------------------------------------------


def _training_pairs(qrels, queries, passages):
    """[(query id, doc id)] of every relevant judgement, file order."""
    doc_ids = {p.doc_id for p in passages}
    pairs = []
    for query_id, judged in qrels.items():
        for doc_id, score in judged.items():
            if score >= 1 and doc_id in doc_ids:
                pairs.append((query_id, doc_id))
    if not pairs:
        raise UserInputError("--train_split: no relevant (score >= 1) judgements")
    return pairs


def _mine(towers, pairs, queries, qrels, passages, options):
    """Per pair: the positive passage (the document's best for the query) and
    `hard_negatives` passages of non-relevant documents, ranked by the
    current towers. Without hard negatives: the document's first passage."""
    from bert_tf.retrieval.exact_store import ExactStore

    by_doc = {}
    for index, p in enumerate(passages):
        by_doc.setdefault(p.doc_id, []).append(index)
    if not options.hard_negatives and all(len(v) == 1 for v in by_doc.values()):
        return [(by_doc[d][0], []) for _, d in pairs]
    logging.info(
        "Mining with the current encoder: embedding %d passages", len(passages)
    )
    store = ExactStore(towers.embedding_dim, metric="IP")
    store.upsert(
        [StoredPassage(str(i), p.doc_id, "") for i, p in enumerate(passages)],
        towers.encode_documents([p.text for p in passages], options.encode_batch_size),
    )
    query_ids = sorted({q for q, _ in pairs})
    query_vectors = towers.encode_queries(
        [queries[q].text for q in query_ids], options.encode_batch_size
    )
    depth = min(
        len(passages), options.hard_negatives * 4 + 32 + max(map(len, by_doc.values()))
    )
    found = store.search(query_vectors, depth)
    ranked = dict(zip(query_ids, found.ids, strict=True))
    mined = []
    for query_id, doc_id in pairs:
        rows = [int(r) for r in ranked[query_id]]
        mine = set(by_doc[doc_id])
        positive = next((r for r in rows if r in mine), by_doc[doc_id][0])
        relevant = {d for d, s in qrels[query_id].items() if s >= 1}
        negatives = [r for r in rows if passages[r].doc_id not in relevant]
        mined.append((positive, negatives[: options.hard_negatives]))
    return mined


def _batches(pairs, mined, batch_size, rng):
    order = list(range(len(pairs)))
    rng.shuffle(order)
    for start in range(0, len(order) - batch_size + 1, batch_size):
        yield order[start : start + batch_size]


def train_dual_encoder(towers, queries, qrels, passages, options):
    """Fine-tunes `towers` in place (see the module docstring); returns the
    last step's loss."""
    from bert_tf.optimization import create_optimizer

    pairs = _training_pairs(qrels, queries, passages)
    batch_size = min(options.train_batch_size, len(pairs))
    steps_per_epoch = len(pairs) // batch_size
    num_epochs = math.ceil(options.num_train_epochs)
    num_steps = max(int(steps_per_epoch * options.num_train_epochs), 1)
    warmup = int(num_steps * options.warmup_proportion)
    logging.info(
        "Training: %d pairs, batch %d, %d steps (%d warmup), %d hard negatives, "
        "%s towers",
        len(pairs),
        batch_size,
        num_steps,
        warmup,
        options.hard_negatives,
        "shared" if towers.shared else "separate",
    )
    variables = [v for t in towers.towers for v in t.trainable_variables]
    optimizer = create_optimizer("adamw", options.learning_rate, num_steps, warmup)
    scale = options.similarity_scale

    @tf.function(reduce_retracing=True)
    def train_step(query_texts, passage_texts, mask):
        with tf.GradientTape() as tape:
            q = towers.query_encoder(
                towers.query_encoder.preprocessor(query_texts), training=True
            )
            p = towers.document_encoder(
                towers.document_encoder.preprocessor(passage_texts), training=True
            )
            # Cosine similarity, as MultipleNegativesRankingLoss.
            q = tf.math.l2_normalize(q, axis=-1)
            p = tf.math.l2_normalize(p, axis=-1)
            logits = scale * tf.matmul(q, p, transpose_b=True)
            logits = tf.where(mask, logits, tf.constant(-1e9, logits.dtype))
            labels = tf.range(tf.shape(q)[0])
            loss = tf.reduce_mean(
                tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
            )
        grads = tape.gradient(loss, variables)
        grads, _ = tf.clip_by_global_norm(grads, 1.0)
        optimizer.apply_gradients(zip(grads, variables, strict=True))
        return loss

    writer = tf.summary.create_file_writer(os.path.join(options.output_dir, "train"))
    rng = random.Random(options.seed)
    bar = _progress_bar(num_steps, "step")
    step = 0
    loss = float("nan")
    for _ in range(num_epochs):
        mined = _mine(towers, pairs, queries, qrels, passages, options)
        for batch in _batches(pairs, mined, batch_size, rng):
            if step == num_steps:
                break
            query_texts = [queries[pairs[i][0]].text for i in batch]
            columns = [mined[i][0] for i in batch]
            for i in batch:
                columns.extend(mined[i][1])
            passage_texts = [passages[c].text for c in columns]
            # A column relevant to the query is no negative (but its own).
            mask = np.ones((len(batch), len(columns)), bool)
            for row, i in enumerate(batch):
                relevant = {d for d, s in qrels[pairs[i][0]].items() if s >= 1}
                for col, c in enumerate(columns):
                    if col != row and passages[c].doc_id in relevant:
                        mask[row, col] = False
            loss = float(
                train_step(
                    tf.constant(query_texts),
                    tf.constant(passage_texts),
                    tf.constant(mask),
                )
            )
            step += 1
            with writer.as_default(step=step):
                tf.summary.scalar("loss", loss)
                tf.summary.scalar("learning_rate", float(optimizer.learning_rate))
            bar.update(step, values=[("loss", loss)])
    writer.flush()
    logging.info("Trained %d steps, last loss %.4f", step, loss)
    return loss


# --- the run --------------------------------------------------------------------


def _export(options, towers, store, passages):
    from bert_tf.retrieval.retrieval_saved_model import export_retrieval_saved_model

    stored, vectors = store.vectors()
    second_stage = {}
    if options.rerank_checkpoint:
        from bert_tf.models.bert_reranker import BertReranker

        text_of = {p.id: p.text for p in passages}
        second_stage = {
            "reranker": BertReranker.from_checkpoint(options.rerank_checkpoint),
            "passage_texts": [text_of[p.id] for p in stored],
            "rerank_top_k": options.rerank_top_k,
        }
    export_retrieval_saved_model(
        towers.query_encoder,
        stored,
        vectors,
        options.export_dir,
        metric=options.metric_type,
        dtype=options.serving_dtype,
        **second_stage,
    )


def run_retrieval(options):
    """Runs what `options` (a checked `RetrievalOptions`) asks; returns the
    eval metrics (or None)."""
    options.check()
    os.makedirs(options.output_dir, exist_ok=True)
    keras.utils.set_random_seed(options.seed)
    corpus = beir.read_corpus(options.data_dir)
    queries = beir.read_queries(options.data_dir)
    towers = load_dual_encoder(options)
    passages = passages_of(corpus, towers, options)
    if options.do_train:
        train_qrels = beir.read_qrels(
            options.data_dir, options.train_split, queries, corpus
        )
        if DualEncoder.saved_in(options.output_dir):
            logging.info("Continuing from the encoder already in output_dir")
        train_dual_encoder(towers, queries, train_qrels, passages, options)
        paths = towers.save(options.output_dir)
        with open(
            os.path.join(options.output_dir, "retrieval_settings.json"), "w"
        ) as f:
            json.dump(
                {
                    "init_checkpoint": options.init_checkpoint,
                    "shared_towers": towers.shared,
                    "towers": paths,
                },
                f,
                indent=2,
            )
    eval_qrels = None
    if options.do_eval:
        # Read before indexing: a bad qrels line is reported at once.
        eval_qrels = beir.read_qrels(
            options.data_dir, options.eval_split, queries, corpus
        )
    metrics = None
    if options.do_index or options.do_eval or options.export_dir:
        with open_store(options, towers) as store:
            if options.do_index:
                index_corpus(towers, passages, store, options.encode_batch_size)
            elif len(store) == 0:
                raise UserInputError(
                    f"--milvus_uri={options.uri}: collection "
                    f"{options.milvus_collection!r} is empty; run with --do_index"
                )
            if options.do_eval:
                metrics = evaluate(
                    towers,
                    store,
                    queries,
                    eval_qrels,
                    passages,
                    options.output_dir,
                    options,
                )
            if options.export_dir:
                _export(options, towers, store, passages)
    return metrics
