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
  vector store (Milvus at ``milvus_uri``): only passages that are new or
  whose text changed are embedded; passages no longer in the corpus are
  deleted; each batch is written (durably) as it is embedded, so a killed
  run resumes where it stopped and a rerun adds no duplicates.
- ``do_eval``: the queries of ``qrels/<eval_split>.tsv`` searched in the
  store, passages folded back to documents: ``eval_results.txt`` (``name =
  value``: recall@1/5/10/100, mrr@10, ndcg@10, num_queries) and ``run.tsv``
  (TREC run format: ``qid Q0 docid rank score run_name``).
- ``export``: the retrieval SavedModel over the vectors of the store: a
  `CorpusIndex`, exported by the serving registry (`RetrievalSignatures`);
  with ``rerank_checkpoint``, a cross-encoder re-orders each query's
  ``rerank_top_k`` best passages in the same graph. export_saved_model.py
  --model_type=retrieval builds the same index from a BEIR corpus
  (`export_from_checkpoint`).

The encoder is the one trained in ``output_dir`` when there is one, else
``init_checkpoint`` (--do_train starts from ``init_checkpoint`` when given).
"""

import hashlib
import json
import os
import random
import time

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.metrics.retrieval import DEFAULT_METRIC_NAMES
from bert_tf.metrics.retrieval import retrieval_metrics
from bert_tf.retrieval.dual_encoder import DualEncoder
from bert_tf.retrieval.dual_encoder_model import DualEncoderModel
from bert_tf.retrieval.vector_store import StoredPassage
from bert_tf.tasks.runner import run_task
from bert_tf.tasks.task import Task
from bert_tf.tasks.training_data import TrainingData
from bert_tf.text.tokenization import FullTokenizer

EVAL_RESULTS_FILE = "eval_results.txt"
RUN_FILE = "run.tsv"
RUN_NAME = "bert_tf"
SETTINGS_FILE = "retrieval_settings.json"
# Passages embedded and written per step of --do_index (what a kill can lose).
INDEX_CHUNK = 256

__all__ = [
    "RetrievalTask",
    "corpus_index",
    "evaluate",
    "export_corpus_index",
    "export_from_checkpoint",
    "index_corpus",
    "load_dual_encoder",
    "open_store",
    "passages_of",
    "run",
    "search_documents",
    "towers_at",
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
            "--init_checkpoint: required (a sentence-transformers directory or a "
            f"BERT checkpoint) until {run.output_dir} holds a trained encoder"
        )
    if options.pooling:
        kwargs["pooling"] = options.pooling
    return DualEncoder.from_checkpoint(
        run.init_checkpoint, shared=options.shared_towers, **kwargs
    )


def passages_of(corpus, towers, options):
    """The corpus's `beir.Passage`s, cut by the document tower's tokenizer.

    Default --passage_length: the tower's max_seq_length - 2 (what it reads
    of one passage, without the title); default --passage_stride: half of it.
    """
    preprocessor = towers.document_encoder.preprocessor
    tokenizer = FullTokenizer(preprocessor.vocab_file, preprocessor.do_lower_case)
    reads = preprocessor.seq_length - 2  # [CLS] passage [SEP]
    if options.passage_length and options.passage_length > reads:
        # Longer passages would be stored, and cut to `reads` when embedded.
        raise UserInputError(
            f"--passage_length={options.passage_length}: the document tower "
            f"reads {reads} word pieces of a passage (max_seq_length "
            f"{preprocessor.seq_length} - 2); pass at most {reads}"
        )
    length = options.passage_length or reads
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


def open_store(options, towers, output_dir):
    """The Milvus collection of --milvus_uri / --milvus_collection."""
    from bert_tf.retrieval.milvus_store import MilvusStore

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
    Passages go longest first over the whole corpus, not chunk by chunk, so
    each encoder batch holds passages of about one length and pads little.
    """
    stored = store.stored_passages()
    wanted = {p.id: StoredPassage(p.id, p.doc_id, _text_hash(p.text)) for p in passages}
    removed = [pid for pid in stored if pid not in wanted]
    if removed:
        logging.info("Removing %d passages no longer in the corpus", len(removed))
        store.delete(removed)
    todo = [p for p in passages if stored.get(p.id) != wanted[p.id]]
    todo.sort(key=lambda p: -len(p.text))
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


def searched_for_evaluation(store):
    """The store an evaluation searches: a Milvus Lite FLAT collection's rows
    copied into an `ExactStore`, else `store` itself.

    FLAT is exact search, so the copy returns what the collection returns
    (tested equal), but Milvus Lite's server is Python and answers about five
    queries a second at the depth an evaluation asks (the top 100 documents:
    several hundred passages); SQuAD's 10,570 questions took over half an
    hour. Approximate indexes and servers are searched as they are."""
    from bert_tf.retrieval.exact_store import ExactStore
    from bert_tf.retrieval.milvus_store import MilvusStore

    if isinstance(store, MilvusStore) and store.embedded and store.index_type == "FLAT":
        logging.info(
            "Searching exactly over a copy of the FLAT collection's %d rows "
            "(what FLAT returns; Milvus Lite would take minutes)",
            len(store),
        )
        return ExactStore.copy_of(store)
    return store


def evaluate(towers, store, queries, qrels, passages, output_dir, options):
    """Searches the qrels' queries; writes eval_results.txt and run.tsv; returns
    the metrics."""
    query_ids = list(qrels)
    logging.info("Embedding %d queries", len(query_ids))
    vectors = towers.encode_queries(
        [queries[q].text for q in query_ids], options.encode_batch_size
    )
    start = time.perf_counter()
    results = search_documents(
        searched_for_evaluation(store), vectors, passages, options.eval_top_k
    )
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


# --- training data ------------------------------------------------------------


def training_pairs(qrels, passages):
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


def mine(towers, pairs, queries, qrels, passages, hard_negatives, batch_size=64):
    """Per pair: the positive passage (the document's best for the query) and
    up to `hard_negatives` passages of non-relevant documents, ranked by
    `towers`. Without hard negatives and one passage per document: the
    document's passage, nothing embedded."""
    from bert_tf.retrieval.exact_store import ExactStore

    by_doc = {}
    for index, p in enumerate(passages):
        by_doc.setdefault(p.doc_id, []).append(index)
    if not hard_negatives and all(len(v) == 1 for v in by_doc.values()):
        return [(by_doc[d][0], []) for _, d in pairs]
    logging.info(
        "Mining with the starting encoder: embedding %d passages", len(passages)
    )
    store = ExactStore(towers.embedding_dim, metric="IP")
    store.upsert(
        [StoredPassage(str(i), p.doc_id, "") for i, p in enumerate(passages)],
        towers.encode_documents([p.text for p in passages], batch_size),
    )
    query_ids = sorted({q for q, _ in pairs})
    query_vectors = towers.encode_queries(
        [queries[q].text for q in query_ids], batch_size
    )
    depth = min(len(passages), hard_negatives * 4 + 32 + max(map(len, by_doc.values())))
    found = store.search(query_vectors, depth)
    ranked = dict(zip(query_ids, found.ids, strict=True))
    mined = []
    for query_id, doc_id in pairs:
        rows = [int(r) for r in ranked[query_id]]
        own = set(by_doc[doc_id])
        positive = next((r for r in rows if r in own), by_doc[doc_id][0])
        relevant = {d for d, s in qrels[query_id].items() if s >= 1}
        negatives = [r for r in rows if passages[r].doc_id not in relevant]
        mined.append((positive, negatives[:hard_negatives]))
    return mined


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


def in_batch_mask(relevant_docs, column_docs):
    """bool [queries, columns]: which passages are a query's candidates.

    A column is masked out for a query (not used as a negative) when its
    document is relevant to the query, unless it is the query's own
    positive (column = row); padding columns (doc -1) are masked for all.

    Args:
      relevant_docs: int [queries, R], the documents relevant to each query
        (-1 pads).
      column_docs: int [columns], each column's document (-1: padding); the
        first `queries` columns are the queries' positives.
    """
    relevant = tf.reduce_any(
        tf.equal(relevant_docs[:, None, :], column_docs[None, :, None])
        & (column_docs[None, :, None] >= 0),
        axis=-1,
    )
    own = tf.cast(
        tf.one_hot(tf.range(tf.shape(relevant_docs)[0]), tf.shape(column_docs)[0]),
        tf.bool,
    )
    return (own | ~relevant) & (column_docs >= 0)[None, :]


def in_batch_negatives_loss(queries, passages, mask, scale):
    """MultipleNegativesRankingLoss with a candidate mask: the mean
    cross-entropy of `scale` x cosine(query i, every passage), target column i.

    Args:
      queries: float [Q, dim]; passages: float [C, dim], C >= Q, the first Q
        the queries' positives; mask: bool [Q, C] (`in_batch_mask`).
    """
    q = tf.math.l2_normalize(tf.cast(queries, tf.float32), axis=-1)
    p = tf.math.l2_normalize(tf.cast(passages, tf.float32), axis=-1)
    logits = scale * tf.matmul(q, p, transpose_b=True)
    logits = tf.where(mask, logits, tf.constant(-1e9, logits.dtype))
    labels = tf.range(tf.shape(q)[0])
    return tf.reduce_mean(
        tf.nn.sparse_softmax_cross_entropy_with_logits(labels, logits)
    )


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
        options.check(run)
        super().__init__(run, options)
        self.towers = None

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
        self.passages = passages_of(self.corpus, self.towers, self.options)
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
        pairs = training_pairs(self.qrels["train"], self.passages)
        batch_size = min(training.micro_batch_size, len(pairs))
        num_steps = int(len(pairs) // batch_size * training.num_train_epochs)
        if num_steps < 1:
            raise UserInputError(
                f"{len(pairs)} training pairs / --train_batch_size={batch_size} * "
                f"--num_train_epochs={training.num_train_epochs} is less than one step"
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
            if input_context is not None and input_context.num_input_pipelines > 1:
                dataset = dataset.shard(
                    input_context.num_input_pipelines, input_context.input_pipeline_id
                )
            return (
                dataset.repeat()
                .batch(batch_size, drop_remainder=True)
                .skip(skip_batches)
                .map(make_batch, num_parallel_calls=tf.data.AUTOTUNE)
                .prefetch(tf.data.AUTOTUNE)
            )

        return TrainingData(
            dataset_fn,
            num_steps,
            beir.training_fingerprints(options.data_dir, options.train_split),
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
        store = open_store(options, self.towers, self.output_dir)
        warning = options.recall_warning(len(self.passages))
        if warning:
            logging.warning("%s", warning)
        if not self.run.do_predict and len(store) == 0:
            store.close()
            raise UserInputError(
                f"--milvus_uri={options.uri(self.output_dir)}: collection "
                f"{options.milvus_collection!r} is empty; run with --do_index"
            )
        if not self.run.do_predict:
            # Searching passages the corpus no longer cuts (or texts it
            # changed) would score other text than the corpus says.
            stored = store.stored_passages()
            wanted = {p.id: _text_hash(p.text) for p in self.passages}
            stale = [i for i, s in stored.items() if wanted.get(i) != s.text_hash]
            missing = len(wanted.keys() - stored.keys())
            if stale or missing:
                store.close()
                raise UserInputError(
                    f"--milvus_uri={options.uri(self.output_dir)}: the index does "
                    f"not match --data_dir's corpus cut by --passage_length/"
                    f"--passage_stride ({len(stale)} stored passages stale, e.g. "
                    f"{stale[:1]}, {missing} missing): update it with --do_index, "
                    "or rebuild it with --do_index --overwrite_index"
                )
        return store

    def predict(self, model, global_step):
        """--do_index: the corpus into the vector store."""
        with self.store() as store:
            return index_corpus(
                self.towers, self.passages, store, self.options.encode_batch_size
            )

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
            )

    def export(self, model):
        """--export_dir: the retrieval SavedModel over the store's vectors."""
        options = self.options
        with self.store() as store:
            stored, vectors = store.vectors()
        index = corpus_index(
            self.towers,
            stored,
            vectors,
            self.passages,
            options.metric_type,
            options.rerank_checkpoint,
            options.rerank_top_k,
        )
        return export_corpus_index(index, self.run.export)


# --- the retrieval SavedModel -------------------------------------------------


def corpus_index(
    towers,
    stored,
    vectors,
    passages,
    metric="IP",
    rerank_checkpoint=None,
    rerank_top_k=20,
):
    """The `CorpusIndex` the retrieval SavedModel serves: the query tower over
    the `stored` passages' `vectors`; with `rerank_checkpoint`, its
    cross-encoder over each query's `rerank_top_k` best passages (their text
    from `passages`)."""
    from bert_tf.retrieval.corpus_index import CorpusIndex

    second_stage = {}
    if rerank_checkpoint:
        from bert_tf.models.bert_reranker import BertReranker

        text_of = {p.id: p.text for p in passages}
        second_stage = {
            "reranker": BertReranker.from_checkpoint(rerank_checkpoint),
            "passage_texts": [text_of[p.id] for p in stored],
            "rerank_top_k": rerank_top_k,
        }
    return CorpusIndex(towers.query_encoder, stored, vectors, metric, **second_stage)


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


def towers_at(path, **kwargs):
    """The dual encoder at `path`: a run_retrieval output_dir's trained
    towers, or a sentence-transformers directory / BERT checkpoint (shared
    towers; `kwargs` as `BertSentenceEncoder.from_checkpoint`'s)."""
    if DualEncoder.saved_in(path):
        return DualEncoder.load(path)
    return DualEncoder.from_checkpoint(path, **kwargs)


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
    passages = passages_of(beir.read_corpus(options.data_dir), towers, options)
    logging.info("Embedding %d passages", len(passages))
    vectors = towers.encode_documents([p.text for p in passages])
    stored = [StoredPassage(p.id, p.doc_id, _text_hash(p.text)) for p in passages]
    index = corpus_index(
        towers,
        stored,
        vectors,
        passages,
        options.metric_type,
        options.rerank_checkpoint,
        options.rerank_top_k,
    )
    return export_corpus_index(index, options.export)


def run(run_options, options):
    """run_retrieval.py: `RetrievalTask` through the runner; returns the eval
    metrics (or None)."""
    return run_task(RetrievalTask(run_options, options))
