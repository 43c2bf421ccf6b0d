"""Retrieval with a dual encoder: fine-tune, index a BEIR corpus into a vector store, evaluate.

`RetrievalTask` is run_retrieval.py on the task protocol (`bert_tf.tasks.runner`
drives it: output_dir lock and identity, strategy, resumable training). What
`RunOptions` and `RetrievalOptions` ask, in the runner's order:

- ``do_train``: fine-tunes the towers (`DualEncoderModel`) on
  ``qrels/<train_split>.tsv`` (query, relevant passage) pairs with in-batch
  negatives (sentence-transformers' MultipleNegativesRankingLoss:
  cross-entropy over ``similarity_scale`` x cosine(query, passage) against
  every passage of the micro-batch), plus ``hard_negatives`` passages per
  query mined once, by the starting encoder, before training (the
  best-ranked passages of documents not relevant to it). Other passages of
  the batch relevant to the query are masked out, never used as negatives.
  The data order is a function of --seed alone, so a killed run resumes
  from its last checkpoint (output_dir/checkpoints) on the batches it would
  have seen, and --distribution_strategy applies (in-batch negatives per
  replica). The trained towers are saved in ``output_dir`` as
  sentence-transformers directories (`DualEncoder.save`); TensorBoard logs
  in ``output_dir/tensorboard/train``.
- ``do_predict`` (the --do_index flag): the corpus's passages into the
  vector store (Milvus at ``milvus_uri``; `bert_tf.retrieval.indexing`):
  only passages that are new or whose text changed are embedded; passages
  no longer in the corpus are deleted; each batch is written (durably) as it
  is embedded, so a killed run resumes where it stopped and a rerun adds no
  duplicates. ``retrieval_mode`` bm25 / hybrid also stores BM25 vectors
  (rewritten when the corpus statistics change); ``vector_type`` int8 /
  binary stores quantized vectors.
- ``do_eval``: the queries of ``qrels/<eval_split>.tsv`` searched in the
  store by ``retrieval_mode`` (dense, BM25 or Milvus's hybrid_search),
  passages folded back to documents: ``eval_results.txt`` (``name =
  value``: recall@1/5/10/100, mrr@10, ndcg@10, num_queries) and ``run.tsv``
  (TREC run format: ``qid Q0 docid rank score run_name``); with
  ``rerank_checkpoint``, the cross-encoder's order of each query's
  ``rerank_top_k`` best documents too (``<metric>_reranked``,
  ``run_reranked.tsv``).
- ``export``: the retrieval SavedModel over the vectors of the store: a
  `CorpusIndex`, exported by the serving registry (`RetrievalSignatures`);
  with ``rerank_checkpoint``, a cross-encoder re-orders each query's
  ``rerank_top_k`` best passages in the same graph. export_saved_model.py
  --model_type=retrieval builds the same index from a BEIR corpus
  (`export_from_checkpoint`).

The encoder is the one trained in ``output_dir`` when there is one, else
``init_checkpoint`` (--do_train starts from ``init_checkpoint`` when given).
"""

import json
import os
import random
import time

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.metrics.retrieval import DEFAULT_METRIC_NAMES
from bert_tf.metrics.retrieval import metric_names_within
from bert_tf.metrics.retrieval import rank_documents
from bert_tf.metrics.retrieval import retrieval_metrics
from bert_tf.options.checks import check_once
from bert_tf.retrieval.corpus_index import CorpusIndex
from bert_tf.retrieval.document_search import RUN_FILE
from bert_tf.retrieval.document_search import rerank_documents
from bert_tf.retrieval.document_search import retrieve_documents
from bert_tf.retrieval.document_search import searched_for_evaluation
from bert_tf.retrieval.document_search import warn_if_reranking_hurts
from bert_tf.retrieval.document_search import write_run
from bert_tf.retrieval.dual_encoder import DualEncoder
from bert_tf.retrieval.dual_encoder_model import DualEncoderModel
from bert_tf.retrieval.in_batch_loss import in_batch_mask
from bert_tf.retrieval.in_batch_loss import in_batch_negatives_loss
from bert_tf.retrieval.indexing import index_corpus
from bert_tf.retrieval.indexing import passages_of
from bert_tf.retrieval.indexing import stored_passages_of
from bert_tf.retrieval.indexing import text_hash
from bert_tf.retrieval.indexing import towers_at
from bert_tf.retrieval.mining import mine
from bert_tf.retrieval.mining import training_pairs
from bert_tf.retrieval.rerank_verdict import second_stage
from bert_tf.retrieval.search_index import DEFAULT_COLLECTION
from bert_tf.retrieval.search_index import DEFAULT_INDEX_FILE
from bert_tf.retrieval.search_index import record_index
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.training_data import TrainingData
from bert_tf.tasks.training_data import pipeline_share
from bert_tf.tasks.training_data import repeated_batches

EVAL_RESULTS_FILE = "eval_results.txt"
RERANKED_RUN_FILE = "run_reranked.tsv"
SETTINGS_FILE = "retrieval_settings.json"

__all__ = [
    "RetrievalTask",
    "epoch_order",
    "evaluate",
    "export_corpus_index",
    "export_from_checkpoint",
    "index_settings",
    "load_dual_encoder",
    "open_store",
    "run",
]


def load_dual_encoder(run, options):
    """The towers trained in run.output_dir, else those of --init_checkpoint
    (--do_train: --init_checkpoint first, the run starts from it)."""
    kwargs = {}
    if run.max_seq_length:
        kwargs["max_seq_length"] = run.max_seq_length
    trained = DualEncoder.saved_in(run.output_dir)
    if trained and not (run.do_train and run.init_checkpoint):
        logging.info("Dual encoder: the one trained in %s", run.output_dir)
        return DualEncoder.load(run.output_dir, **kwargs)
    if not run.init_checkpoint:
        raise UserInputError(
            "init_checkpoint: required (a sentence-transformers directory or a "
            f"BERT checkpoint) until {run.output_dir} holds a trained encoder",
            argument="init_checkpoint",
        )
    if options.pooling:
        kwargs["pooling"] = options.pooling
    return DualEncoder.from_checkpoint(
        run.init_checkpoint, shared=options.shared_towers, **kwargs
    )


def open_store(options, towers, output_dir, splade_fingerprint=None):
    """The Milvus collection of --milvus_uri / --milvus_collection: dense
    vectors (--vector_type), BM25 vectors and SPLADE vectors (of the model
    of `splade_fingerprint`) where the mode searches them (a new collection
    holds only what the mode needs)."""
    from bert_tf.retrieval.milvus_store import MilvusStore

    sides = options.sides
    return MilvusStore(
        options.uri(output_dir),
        options.milvus_collection,
        towers.embedding_dim,
        towers.fingerprint(),
        metric=options.metric_type,
        index_type=options.index_type,
        index_params=options.index_params(),
        search_params=options.search_params(),
        overwrite=options.overwrite_index,
        # What the mode searches must be there; what else an existing
        # collection holds is kept up to date (e.g. dense runs on a hybrid one).
        dense=True if "dense" in sides else None,
        lexical=True if "bm25" in sides else None,
        splade=True if "splade" in sides else None,
        splade_fingerprint=splade_fingerprint,
        vector_type=options.vector_type,
        rescore_k=options.rescore_k,
        bm25_function=options.bm25_function,
        bm25_k1=options.bm25_k1,
        bm25_b=options.bm25_b,
    )


def index_settings(run, options, fingerprint):
    """What a search of the index reads (`bert_tf.retrieval.search_index`):
    the towers that filled it, how they were loaded, where the collection
    is, how it is searched, and how the corpus was cut."""
    model = run.init_checkpoint
    if DualEncoder.saved_in(run.output_dir):
        model = run.output_dir  # trained by this run or an earlier one
    return {
        "model": model,
        "pooling": options.pooling,
        "max_seq_length": run.max_seq_length,
        "shared_towers": options.shared_towers,
        "fingerprint": fingerprint,
        "milvus_uri": options.uri(run.output_dir),
        "milvus_collection": options.milvus_collection,
        "retrieval_mode": options.retrieval_mode,
        "metric_type": options.metric_type,
        "index_type": options.index_type,
        "vector_type": options.vector_type,
        "rescore_k": options.rescore_k,
        "search_params": options.search_params(),
        "fusion": options.fusion,
        "rrf_k": options.rrf_k,
        "dense_weight": options.dense_weight,
        "bm25_weight": options.bm25_weight,
        "bm25_function": options.bm25_function,
        "splade_checkpoint": options.splade_checkpoint
        and os.path.abspath(options.splade_checkpoint),
        "hybrid_sides": ",".join(options.sides) if len(options.sides) > 1 else None,
        "splade_weight": options.splade_weight,
        "data_dir": options.data_dir and os.path.abspath(options.data_dir),
        "passage_length": options.passage_length,
        "passage_stride": options.passage_stride,
    }


def searched_as(options):
    """How the queries were searched, for the log: the mode (hybrid's
    sides), and the stored vectors' type when they are quantized (and their
    rescoring)."""
    mode = options.retrieval_mode
    if mode == "hybrid":
        mode = f"hybrid of {'+'.join(options.sides)}"
    if "dense" not in options.sides or options.vector_type == "float32":
        return mode
    rescored = f", rescoring {options.rescore_k}" if options.rescore_k else ""
    return f"{mode}, {options.vector_type} vectors{rescored}"


def reported_metric_names(eval_top_k):
    """The metrics a run of `eval_top_k` documents a query reports; a log
    line names those it cannot compute."""
    names, left_out = metric_names_within(eval_top_k, DEFAULT_METRIC_NAMES)
    if left_out:
        logging.info(
            "Not reported: %s (eval_top_k=%d ranks fewer documents)",
            ", ".join(left_out),
            eval_top_k,
        )
    return names


def second_stage_reranker(options, what):
    """The --do_eval second stage: a `MaxSimReranker` of
    --rerank_multi_vector, a `BertReranker` of --rerank_checkpoint (unless
    its verdict says it re-ranks worse: `second_stage`), or None."""
    if options.rerank_multi_vector:
        from bert_tf.retrieval.max_sim_reranker import MaxSimReranker

        return MaxSimReranker.from_checkpoint(options.rerank_multi_vector)
    rerank_checkpoint = second_stage(
        options.rerank_checkpoint, options.rerank_even_if_worse, what
    )
    if not rerank_checkpoint:
        return None
    from bert_tf.models.bert_reranker import BertReranker

    return BertReranker.from_checkpoint(rerank_checkpoint)


def evaluate(towers, store, queries, qrels, passages, output_dir, options, splade=None):
    """Searches the qrels' queries (--retrieval_mode; `splade`: the
    `BertSparseEncoder` of --splade_checkpoint); writes eval_results.txt
    and run.tsv; with --rerank_checkpoint (a cross-encoder) or
    --rerank_multi_vector (MaxSim), also the second stage's order of each
    query's --rerank_top_k best (``<metric>_reranked``, run_reranked.tsv);
    returns the metrics."""
    from bert_tf.retrieval.splade_vectors import splade_vectors

    query_ids = list(qrels)
    texts = [queries[q].text for q in query_ids]
    vectors = splade_queries = None
    if "dense" in options.sides:
        logging.info("Embedding %d queries", len(query_ids))
        vectors = towers.encode_queries(texts, options.encode_batch_size)
    if "splade" in options.sides:
        logging.info("SPLADE vectors of %d queries", len(query_ids))
        splade_queries = splade_vectors(
            splade, texts, "query", options.encode_batch_size
        )
    start = time.perf_counter()
    if options.eval_backend == "auto":
        store = searched_for_evaluation(store, options.retrieval_mode)
    results = retrieve_documents(
        store,
        passages,
        options.eval_top_k,
        options.retrieval_mode,
        vectors,
        texts,
        options.fusion,
        options.rrf_k,
        options.weights(),
        splade_queries=splade_queries,
        sides=options.sides,
    )
    logging.info(
        "Searched %d queries (%s) in %.2f s",
        len(query_ids),
        searched_as(options),
        time.perf_counter() - start,
    )
    run = {q: dict(found) for q, found in zip(query_ids, results, strict=True)}
    names = reported_metric_names(options.eval_top_k)
    metrics = retrieval_metrics(qrels, run, names)
    write_run(os.path.join(output_dir, RUN_FILE), query_ids, results)
    reranker = second_stage_reranker(
        options, "run_retrieval --do_eval (no <metric>_reranked, no run_reranked.tsv)"
    )
    if reranker is not None:
        reranked = rerank_documents(
            reranker,
            queries,
            run,
            passages,
            options.rerank_top_k,
        )
        second = retrieval_metrics(qrels, reranked, names)
        warn_if_reranking_hurts({n: metrics[n] for n in names}, second)
        metrics.update({f"{name}_reranked": v for name, v in second.items()})
        write_run(
            os.path.join(output_dir, RERANKED_RUN_FILE),
            query_ids,
            [rank_documents(reranked[q]) for q in query_ids],
        )
    logging.info("***** Eval results (%s) *****", options.eval_split)
    with open(os.path.join(output_dir, EVAL_RESULTS_FILE), "w") as f:
        for name, value in metrics.items():
            logging.info("  %s = %.4f", name, value)
            f.write(f"{name} = {value}\n")
        f.write(f"num_queries = {len(query_ids)}\n")
    return metrics


# --- training data ------------------------------------------------------------


def epoch_order(num_pairs, batch_size, num_epochs, seed):
    """The pair indices in training order: each epoch shuffled (by one
    `random.Random(seed)`), cut to whole batches, the epochs one after the
    other."""
    rng = random.Random(seed)
    order = []
    for _ in range(num_epochs):
        epoch = list(range(num_pairs))
        rng.shuffle(epoch)
        order.extend(epoch[: num_pairs // batch_size * batch_size])
    return np.asarray(order, np.int64)


# --- the task -------------------------------------------------------------------


class RetrievalTask(Task):
    """run_retrieval.py: dual-encoder training, indexing, evaluation and export
    (see the module docstring).

    Args:
      run: the `RunOptions` (init_checkpoint: a sentence-transformers
        directory or a BERT checkpoint with --pooling; max_seq_length None:
        the model's; do_predict: --do_index; export: --export_dir).
      options: the `RetrievalOptions`.

    Example:

    ```python
    results = run_task(RetrievalTask(run_options, RetrievalOptions(
        data_dir="/tmp/squad_beir", hard_negatives=2)))
    results["mrr@10"]
    ```
    """

    script = "run_retrieval"
    model_class = DualEncoderModel
    eval_results_file = None  # evaluate() writes it, metrics in BEIR's order
    copies_vocab = False  # the towers are saved with their vocabularies
    # The model is complete as built: the towers trained in output_dir, or
    # --init_checkpoint (a zero-shot encoder) - nothing to restore.
    restores_trained = False
    # The towers are saved as sentence-transformers directories instead.
    saves_final_checkpoint = False

    def __init__(self, run, options):
        check_once(options, run)
        super().__init__(run, options)
        self.towers = None
        self.splade = None
        self.splade_fingerprint = None

    def load_config(self):
        return None  # the checkpoint's own, read by from_checkpoint

    def prepare(self, config):
        """Reads the BEIR files (a bad line stops the run before TF work)."""
        options = self.options
        self.corpus, self.queries, self.qrels = beir.read_task_files(
            options.data_dir,
            options.train_split if self.run.do_train else None,
            options.eval_split if self.run.do_eval else None,
        )

    def build_model(self, config):
        self.towers = load_dual_encoder(self.run, self.options)
        if "splade" in self.options.sides:
            from bert_tf.retrieval.splade_vectors import load_splade
            from bert_tf.retrieval.splade_vectors import splade_fingerprint

            self.splade = load_splade(self.options.splade_checkpoint)
            self.splade_fingerprint = splade_fingerprint(self.splade)
        self.passages = passages_of(
            self.corpus,
            self.towers,
            self.options.passage_length,
            self.options.passage_stride,
        )
        return DualEncoderModel.of(self.towers)

    def tokenization(self, model):
        preprocessor = self.towers.query_encoder.preprocessor
        return (
            preprocessor.vocab_file,
            preprocessor.do_lower_case,
            preprocessor.seq_length,
        )

    # --- training -----------------------------------------------------------

    def training_data(self):
        options, training = self.options, self.run.training
        try:
            pairs = training_pairs(self.qrels["train"], self.passages)
        except UserInputError:
            raise UserInputError(
                f"train_split={options.train_split}: no relevant (score >= 1) "
                "judgements",
                argument="train_split",
            ) from None
        batch_size = min(training.micro_batch_size, len(pairs))
        num_steps = int(len(pairs) // batch_size * training.num_train_epochs)
        if num_steps < 1:
            raise UserInputError(
                f"{len(pairs)} training pairs / train_batch_size={batch_size} * "
                f"num_train_epochs={training.num_train_epochs} is less than one step",
                argument=("train_batch_size", "num_train_epochs"),
            )
        logging.info(
            "Training: %d pairs, batch %d, %d steps, %d hard negatives, %s towers",
            len(pairs),
            batch_size,
            num_steps,
            options.hard_negatives,
            "shared" if self.towers.shared else "separate",
        )
        mined = mine(
            self.towers,
            pairs,
            self.queries,
            self.qrels["train"],
            self.passages,
            options.hard_negatives,
            options.encode_batch_size,
        )
        doc_index = {}
        for p in self.passages:
            doc_index.setdefault(p.doc_id, len(doc_index))
        relevant = [
            sorted(
                doc_index[d]
                for d, s in self.qrels["train"][q].items()
                if s >= 1 and d in doc_index
            )
            for q, _ in pairs
        ]
        width = max(map(len, relevant))
        arrays = {
            "query_text": np.asarray([self.queries[q].text for q, _ in pairs], object),
            "positive": np.asarray([m[0] for m in mined], np.int64),
            "negatives": np.full((len(pairs), options.hard_negatives), -1, np.int64),
            "relevant": np.full((len(pairs), width), -1, np.int64),
        }
        for i, (_, negatives) in enumerate(mined):
            arrays["negatives"][i, : len(negatives)] = negatives
        for i, docs in enumerate(relevant):
            arrays["relevant"][i, : len(docs)] = docs
        passage_texts = np.asarray([p.text for p in self.passages], object)
        passage_docs = np.asarray(
            [doc_index[p.doc_id] for p in self.passages], np.int64
        )
        num_epochs = -(-num_steps // (len(pairs) // batch_size))
        order = epoch_order(len(pairs), batch_size, num_epochs, self.run.seed)
        query_preprocessor = self.towers.query_encoder.preprocessor
        document_preprocessor = self.towers.document_encoder.preprocessor

        def dataset_fn(input_context, skip_batches):
            texts = tf.constant(arrays["query_text"].astype(str))
            positive = tf.constant(arrays["positive"])
            negatives = tf.constant(arrays["negatives"])
            relevant_docs = tf.constant(arrays["relevant"])
            all_passages = tf.constant(passage_texts.astype(str))
            docs = tf.constant(passage_docs)

            def make_batch(rows):
                columns = tf.concat(
                    [
                        tf.gather(positive, rows),
                        tf.reshape(tf.gather(negatives, rows), [-1]),
                    ],
                    axis=0,
                )
                safe = tf.maximum(columns, 0)
                column_docs = tf.where(
                    columns >= 0, tf.gather(docs, safe), tf.constant(-1, tf.int64)
                )
                return {
                    "query": query_preprocessor(tf.gather(texts, rows)),
                    "passage": document_preprocessor(tf.gather(all_passages, safe)),
                    "mask": in_batch_mask(tf.gather(relevant_docs, rows), column_docs),
                }

            dataset = tf.data.Dataset.from_tensor_slices(order)
            dataset = pipeline_share(dataset, input_context)
            return repeated_batches(dataset, batch_size, skip_batches, make_batch)

        return TrainingData(
            dataset_fn,
            num_steps,
            options.training_fingerprints(self.run),
        )

    def loss(self, batch, outputs):
        return in_batch_negatives_loss(
            outputs["query"],
            outputs["passage"],
            batch["mask"],
            self.options.similarity_scale,
        )

    def after_training(self, model):
        """The towers as sentence-transformers directories, and what they came from."""
        towers = model.dual_encoder
        paths = towers.save(self.output_dir)
        with open(os.path.join(self.output_dir, SETTINGS_FILE), "w") as f:
            json.dump(
                {
                    "init_checkpoint": self.run.init_checkpoint,
                    "shared_towers": towers.shared,
                    "towers": paths,
                },
                f,
                indent=2,
            )
        logging.info("Saved the trained towers: %s", ", ".join(paths))

    # --- the vector store -----------------------------------------------------

    def store(self):
        """The vector store (a context manager); without --do_index it must
        hold the corpus already."""
        options = self.options
        store = open_store(
            options, self.towers, self.output_dir, self.splade_fingerprint
        )
        warning = options.recall_warning(len(self.passages))
        if warning:
            logging.warning("%s", warning)
        if not self.run.do_predict and len(store) == 0:
            store.close()
            raise UserInputError(
                f"milvus_uri={options.uri(self.output_dir)}: collection "
                f"{options.milvus_collection!r} is empty; run with do_predict",
                argument={"milvus_uri": "milvus_uri", "do_predict": "do_index"},
            )
        if not self.run.do_predict:
            # Searching passages the corpus no longer cuts (or texts it
            # changed) would score other text than the corpus says.
            stored = store.stored_passages()
            wanted = {p.id: text_hash(p.text) for p in self.passages}
            stale = [i for i, s in stored.items() if wanted.get(i) != s.text_hash]
            missing = len(wanted.keys() - stored.keys())
            if stale or missing:
                store.close()
                raise UserInputError(
                    f"milvus_uri={options.uri(self.output_dir)}: the index does "
                    f"not match data_dir's corpus cut by passage_length/"
                    f"passage_stride ({len(stale)} stored passages stale, e.g. "
                    f"{stale[:1]}, {missing} missing): update it with do_predict, "
                    "or rebuild it with do_predict overwrite_index",
                    argument={
                        "milvus_uri": "milvus_uri",
                        "data_dir": "data_dir",
                        "passage_length": "passage_length",
                        "passage_stride": "passage_stride",
                        "do_predict": "do_index",
                        "overwrite_index": "overwrite_index",
                    },
                )
        return store

    def predict(self, model, global_step):
        """--do_index: the corpus into the vector store (a server's
        collection claimed for this run: `IndexLock`)."""
        from bert_tf.retrieval.index_lock import IndexLock
        from bert_tf.retrieval.milvus_connection import is_server

        uri = self.options.uri(self.output_dir)
        if self.options.overwrite_index and is_server(uri):
            # Not dropped under another run's writers.
            IndexLock(uri, self.options.milvus_collection).check_free()
        with self.store() as store, IndexLock.of_store(store):
            counts = index_corpus(
                self.towers,
                self.passages,
                store,
                self.options.encode_batch_size,
                self.options.bm25_k1,
                self.options.bm25_b,
                splade=self.splade,
            )
            settings = index_settings(self.run, self.options, store.fingerprint)
            record_index(self.output_dir, settings, store)
        if counts["texts_truncated"]:
            logging.warning(
                "%d passage texts or titles were cut to fit Milvus's VARCHAR "
                "(shown cut by searches; their vectors are of the whole text)",
                counts["texts_truncated"],
            )
        return counts

    def evaluate(self, model, global_step):
        with self.store() as store:
            return evaluate(
                self.towers,
                store,
                self.queries,
                self.qrels["eval"],
                self.passages,
                self.output_dir,
                self.options,
                self.splade,
            )

    def export(self, model):
        """--export_dir: the retrieval SavedModel over the store's vectors."""
        options = self.options
        with self.store() as store:
            stored, vectors = store.vectors()
        index = CorpusIndex.of_towers(
            self.towers,
            stored,
            vectors,
            self.passages,
            options.metric_type,
            second_stage(
                options.rerank_checkpoint,
                options.rerank_even_if_worse,
                "run_retrieval --export_dir (a retrieval-only SavedModel)",
            ),
            options.rerank_top_k,
        )
        return export_corpus_index(index, self.run.export)


# --- the retrieval SavedModel -------------------------------------------------


def export_corpus_index(index, export):
    """Writes the retrieval SavedModel of `index` (`ExportOptions`: the
    version directory, tokenizer; --serving_dtype: how the corpus embeddings
    are stored) with the serving registry's exporter; returns its directory."""
    from bert_tf.serving import export_saved_model

    preprocessor = index.query_encoder.preprocessor
    path = export_saved_model(
        index,
        export.export_dir,
        preprocessor.vocab_file,
        preprocessor.do_lower_case,
        preprocessor.seq_length,
        tokenizer=export.serving_tokenizer,
        version=export.export_version,
        save_keras=False,
        corpus_dtype=export.serving_dtype,
    )
    logging.info(
        "Retrieval SavedModel: %d passages of %d documents, %s",
        len(index.passages),
        len(index.doc_ids),
        path,
    )
    return path


def export_from_checkpoint(options):
    """export_saved_model --model_type=retrieval: the corpus of
    `options.data_dir` cut into passages as run_retrieval cuts them, embedded
    by the document tower of `options.init_checkpoint`, and exported with its
    query tower (and `options.rerank_checkpoint`); returns the version
    directory.

    Args:
      options: a `SavedModelExportOptions` (init_checkpoint, data_dir,
        passage_length, passage_stride, metric_type, pooling,
        rerank_checkpoint, rerank_top_k, export).
    """
    towers = towers_at(
        options.init_checkpoint,
        **({"pooling": options.pooling} if options.pooling else {}),
    )
    passages = passages_of(
        beir.read_corpus(options.data_dir),
        towers,
        options.passage_length,
        options.passage_stride,
    )
    stored, vectors, reason = vectors_in_run_index(
        options.init_checkpoint, towers, passages
    )
    if reason is None:
        logging.info(
            "Using the %d passage vectors of %s (the same model and passages): "
            "not embedding the corpus again",
            len(stored),
            os.path.join(options.init_checkpoint, DEFAULT_INDEX_FILE),
        )
    else:
        logging.info("Embedding %d passages (%s)", len(passages), reason)
        vectors = towers.encode_documents([p.text for p in passages])
        stored = stored_passages_of(passages)
    index = CorpusIndex.of_towers(
        towers,
        stored,
        vectors,
        passages,
        options.metric_type,
        second_stage(
            options.rerank_checkpoint,
            options.rerank_even_if_worse,
            "export_saved_model --model_type=retrieval (a retrieval-only SavedModel)",
        ),
        options.rerank_top_k,
    )
    return export_corpus_index(index, options.export)


def vectors_in_run_index(output_dir, towers, passages):
    """The vectors run_retrieval --do_index stored for `passages` in
    `output_dir`'s Milvus Lite index (its default collection), if they are
    there: `(stored, vectors, None)` when the collection was embedded by
    `towers` (the same fingerprint) and holds exactly `passages` (ids and
    text hashes); else `(None, None, why not)`.

    Example:
    >>> stored, vectors, why_not = vectors_in_run_index(run_dir, towers, passages)
    """
    path = os.path.join(str(output_dir), DEFAULT_INDEX_FILE)
    if not os.path.exists(path):  # Milvus Lite keeps a folder of that name
        return None, None, f"no {DEFAULT_INDEX_FILE} in {output_dir}"
    from bert_tf.retrieval.milvus_store import MilvusStore

    try:
        # As it is: a missing collection (or pymilvus) is a reason, not an
        # error, and no collection is made.
        store = MilvusStore.existing(path, DEFAULT_COLLECTION)
    except UserInputError as error:
        return None, None, str(error)
    with store:
        if store.fingerprint != towers.fingerprint():
            return (
                None,
                None,
                f"{path} collection {DEFAULT_COLLECTION!r} was indexed with another "
                f"model (fingerprint {store.fingerprint}, these towers "
                f"{towers.fingerprint()})",
            )
        if not store.dense:
            return None, None, f"{path} holds no dense vectors"
        stored, vectors = store.vectors()
    kept = {s.id: s.text_hash for s in stored}
    wanted = {p.id: text_hash(p.text) for p in passages}
    if kept != wanted:
        changed = sum(kept.get(i) != h for i, h in wanted.items())
        extra = len(kept.keys() - wanted.keys())
        return (
            None,
            None,
            (
                f"{path} does not hold this corpus: {changed} of {len(wanted)} "
                f"passages missing or changed, {extra} others"
            ),
        )
    return stored, vectors, None


def run(run_options, options):
    """run_retrieval.py: `RetrievalTask` through the runner; returns the eval
    metrics (or None)."""
    return run_task(RetrievalTask(run_options, options))
