r"""Retrieval: a dual encoder over a BEIR corpus, indexed into Milvus, measured on its qrels.

Reads the BEIR layout (--data_dir with corpus.jsonl, queries.jsonl and
qrels/<split>.tsv); long documents are cut into passages of
--passage_length word pieces, and results are folded back to documents.
--do_train fine-tunes on qrels/<train_split>.tsv with in-batch (and
--hard_negatives mined) negatives, resumably (a killed run rerun with the
same command resumes from its last checkpoint); --do_index embeds the corpus into Milvus
(resumable, no duplicates on rerun); --do_eval writes eval_results.txt
(recall@1/5/10/100, mrr@10, ndcg@10) and run.tsv (TREC run format);
--export_dir writes the retrieval SavedModel for TF Serving.

    python run_retrieval.py --data_dir=$BEIR_DIR --init_checkpoint=$MINILM_DIR \
      --do_index --do_eval --output_dir=/tmp/retrieval_output

--milvus_uri defaults to <output_dir>/index.db (Milvus Lite, embedded); give
http://host:19530 for a Milvus server. Needs the extra: pip install '.[retrieval]'.

Installed as `bert-tf-run-retrieval`; also `python -m bert_tf.cli.run_retrieval`
and `python run_retrieval.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.errors import UserInputError
from bert_tf.options.distribution_options import STRATEGIES
from bert_tf.options.distribution_options import DistributionOptions
from bert_tf.options.export_options import ExportOptions
from bert_tf.options.retrieval_options import INDEX_TYPES
from bert_tf.options.retrieval_options import METRICS
from bert_tf.options.retrieval_options import RETRIEVAL_SERVING_DTYPES
from bert_tf.options.retrieval_options import RetrievalOptions
from bert_tf.options.run_options import RunOptions
from bert_tf.options.training_options import TrainingOptions

# The flags that are `RetrievalOptions` fields of the same name.
RETRIEVAL_FLAGS = tuple(RetrievalOptions.__dataclass_fields__)


def define_flags():
    """run_retrieval.py's flags (TensorFlow-free)."""
    flags.DEFINE_string(
        "data_dir",
        None,
        "BEIR directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
    )
    flags.DEFINE_string(
        "output_dir", None, "Where the trained encoder, index.db and results go."
    )
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "A sentence-transformers directory (e.g. all-MiniLM-L6-v2) or a BERT "
        "checkpoint (with --pooling); not needed once output_dir holds a trained "
        "encoder.",
    )
    flags.DEFINE_bool("do_train", False, "Fine-tune the dual encoder on --train_split.")
    flags.DEFINE_bool("do_index", False, "Embed the corpus into the vector store.")
    flags.DEFINE_bool(
        "do_eval", False, "Search the --eval_split queries and score them."
    )
    flags.DEFINE_string("train_split", "train", "qrels/<this>.tsv for --do_train.")
    flags.DEFINE_string("eval_split", "test", "qrels/<this>.tsv for --do_eval.")
    flags.DEFINE_string(
        "pooling", None, "Pooling of a plain BERT --init_checkpoint: mean, cls, max."
    )
    flags.DEFINE_integer(
        "max_seq_length", None, "Longest input in word pieces (default: the model's)."
    )
    flags.DEFINE_integer(
        "passage_length",
        None,
        "Word pieces of text per passage (default: max_seq_length - 2); longer "
        "documents are cut into several passages.",
    )
    flags.DEFINE_integer(
        "passage_stride",
        None,
        "Word pieces between passage starts (default: half of --passage_length).",
    )
    flags.DEFINE_bool(
        "shared_towers",
        True,
        "One encoder for queries and documents; --noshared_towers fine-tunes two.",
    )
    flags.DEFINE_integer(
        "hard_negatives",
        0,
        "Per training query, this many passages of non-relevant documents ranked "
        "highest by the starting encoder (mined once, before training), beside the "
        "in-batch negatives.",
    )
    flags.DEFINE_integer("train_batch_size", 32, "Queries per training batch.")
    flags.DEFINE_float("learning_rate", 2e-5, "Peak learning rate of AdamW.")
    flags.DEFINE_float("num_train_epochs", 1.0, "Epochs over the training pairs.")
    flags.DEFINE_float("warmup_proportion", 0.1, "Linear warmup, as a fraction.")
    flags.DEFINE_float(
        "similarity_scale", 20.0, "Scale of the cosine similarities in the loss."
    )
    flags.DEFINE_integer(
        "encode_batch_size", 64, "Texts per forward pass when embedding."
    )
    flags.DEFINE_integer("eval_top_k", 100, "Documents per query in run.tsv.")
    flags.DEFINE_string(
        "milvus_uri",
        None,
        "Milvus: a file path ending in .db (Milvus Lite, default "
        "<output_dir>/index.db) or http://host:19530 (a server or cluster).",
    )
    flags.DEFINE_string("milvus_collection", "bert_tf", "The Milvus collection.")
    flags.DEFINE_enum(
        "index_type",
        "FLAT",
        list(INDEX_TYPES),
        "FLAT (exact), HNSW or IVF_FLAT (approximate, for large corpora).",
    )
    flags.DEFINE_enum(
        "metric_type", "IP", list(METRICS), "Similarity: inner product, cosine or L2."
    )
    flags.DEFINE_integer("hnsw_m", 16, "HNSW: graph degree M.")
    flags.DEFINE_integer("hnsw_ef_construction", 200, "HNSW: efConstruction.")
    flags.DEFINE_integer("hnsw_ef", 128, "HNSW: ef at search (at least --eval_top_k).")
    flags.DEFINE_integer("ivf_nlist", 128, "IVF_FLAT: clusters (nlist).")
    flags.DEFINE_integer("ivf_nprobe", 16, "IVF_FLAT: clusters searched (nprobe).")
    flags.DEFINE_bool(
        "overwrite_index",
        False,
        "Drop the collection first (e.g. after fine-tuning: the index holds the "
        "old model's vectors).",
    )
    flags.DEFINE_string(
        "export_dir",
        None,
        "Write the retrieval SavedModel (query strings -> document ids, scores) here.",
    )
    flags.DEFINE_enum(
        "serving_dtype",
        "float32",
        list(RETRIEVAL_SERVING_DTYPES),
        "How the SavedModel stores the corpus embeddings.",
    )
    flags.DEFINE_string(
        "rerank_checkpoint",
        None,
        "With --export_dir: a cross-encoder (a CrossEncoder directory or a "
        "run_reranker output_dir) that re-orders each query's --rerank_top_k best passages in "
        "the SavedModel (both stages in one graph).",
    )
    flags.DEFINE_integer(
        "rerank_top_k", 20, "Candidate passages per query for --rerank_checkpoint."
    )
    flags.DEFINE_integer("seed", 12345, "Random seed (shuffling, initialisation).")
    flags.DEFINE_integer(
        "save_checkpoints_steps",
        1000,
        "--do_train: checkpoint every this many steps (a killed run resumes from "
        "the last one).",
    )
    flags.DEFINE_bool(
        "overwrite_output_dir",
        False,
        "With --do_train: delete the checkpoints of a previous run in output_dir "
        "and start over. Without it, a rerun with the same settings resumes and "
        "one with other settings stops, listing the differences.",
    )
    flags.DEFINE_enum(
        "distribution_strategy",
        None,
        list(STRATEGIES),
        "tf.distribute strategy of --do_train (in-batch negatives per replica). "
        "Default: multi_worker_mirrored when TF_CONFIG names several workers, "
        "mirrored with several GPUs, else one_device.",
    )
    flags.DEFINE_integer("num_gpus", None, "GPUs to use (default: all visible).")
    # --- flags added for issue 44 ---
    common_flags.define_beam_flags()
    flags.DEFINE_string(
        "corpus_file",
        None,
        "With --runner: the corpus of --do_index, globs (comma-separated) of "
        "corpus.jsonl-style files, .gz read as gzip, e.g. "
        "'gs://bucket/corpus/part-*.jsonl.gz' (default: <data_dir>/corpus.jsonl).",
    )


def options(flags_obj):
    """(RunOptions, RetrievalOptions) of the parsed flags, checked before
    TensorFlow loads (--do_index is the run's predict phase)."""
    f = flags_obj
    retrieval = RetrievalOptions(**{name: f[name].value for name in RETRIEVAL_FLAGS})
    training = TrainingOptions(
        train_batch_size=f.train_batch_size,
        learning_rate=f.learning_rate,
        num_train_epochs=f.num_train_epochs,
        warmup_proportion=f.warmup_proportion,
        optimizer="adamw",
        save_checkpoints_steps=f.save_checkpoints_steps,
        overwrite_output_dir=f.overwrite_output_dir,
    )
    export = None
    if f.export_dir:
        export = ExportOptions(export_dir=f.export_dir, serving_dtype=f.serving_dtype)
    run = RunOptions(
        output_dir=f.output_dir,
        init_checkpoint=f.init_checkpoint,
        do_lower_case=None,  # the checkpoint's own
        max_seq_length=f.max_seq_length,
        do_train=f.do_train,
        do_eval=f.do_eval,
        do_predict=f.do_index,
        seed=f.seed,
        training=training,
        distribution=DistributionOptions(
            distribution_strategy=f.distribution_strategy, num_gpus=f.num_gpus
        ),
        export=export,
    )
    retrieval.check(run)
    beam = common_flags.beam_options(f)
    if beam.uses_beam and (run.do_train or run.do_eval or run.export):
        raise UserInputError(
            "--runner: runs --do_index only; train, evaluate or export in a run "
            "without --runner (it reads the index the pipeline wrote)"
        )
    if beam.uses_beam and not run.do_predict:
        raise UserInputError("--runner needs --do_index")
    if retrieval.corpus_file and not beam.uses_beam:
        raise UserInputError("--corpus_file needs --runner (the Beam indexing)")
    return run, retrieval, beam


def work(run, retrieval, beam):
    """--do_index on a Beam runner, or the task in this process."""
    if not beam.uses_beam:
        from bert_tf.tasks import retrieval as task

        return task.run(run, retrieval)
    from absl import logging

    from bert_tf.beam import corpus_indexing

    counts = corpus_indexing.run_pipeline(
        run, retrieval, beam.runner, beam.beam_options
    )
    logging.info(
        "Indexed %d documents: %d passages embedded, %d already in the store, "
        "%d removed",
        counts["documents"],
        counts["embedded"],
        counts["kept"],
        counts["removed"],
    )
    return counts


COMMAND = Command(
    "run_retrieval",
    __doc__,
    define_flags,
    work,
    required=("data_dir", "output_dir"),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
