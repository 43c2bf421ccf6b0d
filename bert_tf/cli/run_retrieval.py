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
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.errors import UserInputError
from bert_tf.options.beam_options import BeamOptions
from bert_tf.options.retrieval_options import RETRIEVAL_SERVING_DTYPES
from bert_tf.options.retrieval_options import RetrievalOptions
from bert_tf.options.run_options import RunOptions


def work(run, retrieval, beam):
    """--do_index on a Beam runner (--runner), or the task in this process."""
    if beam.uses_beam and (run.do_train or run.do_eval or run.export):
        raise UserInputError(
            "--runner: runs --do_index only; train, evaluate or export in a run "
            "without --runner (it reads the index the pipeline wrote)"
        )
    if beam.uses_beam and not run.do_predict:
        raise UserInputError("--runner needs --do_index")
    if beam.uses_beam and (
        retrieval.retrieval_mode != "dense" or retrieval.vector_type != "float32"
    ):
        # BM25 weights need the whole corpus's statistics, int8 codes a scale
        # fitted on it: what the one-process --do_index computes first.
        raise UserInputError(
            f"--runner: indexes --retrieval_mode=dense --vector_type=float32 only "
            f"(got --retrieval_mode={retrieval.retrieval_mode} "
            f"--vector_type={retrieval.vector_type}); index without --runner"
        )
    if retrieval.corpus_file and not beam.uses_beam:
        raise UserInputError("--corpus_file needs --runner (the Beam indexing)")
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
        "%d removed, %d stored from an interrupted run's staging files",
        counts["documents"],
        counts["embedded"],
        counts["kept"],
        counts["removed"],
        counts["staged"],
    )
    return counts


COMMAND = Command(
    "run_retrieval",
    __doc__,
    OptionFlags(
        RunOptions,
        RetrievalOptions,
        BeamOptions,
        # Only these of the run's options are flags here; the rest keep their
        # defaults (no lower-casing flag: the checkpoint's own).
        layout=(
            "data_dir",
            Flag(
                "output_dir", help="Where the trained encoder, index.db and results go."
            ),
            Flag(
                "init_checkpoint",
                help="A sentence-transformers directory (e.g. all-MiniLM-L6-v2) or a "
                "BERT checkpoint (with --pooling); not needed once output_dir holds "
                "a trained encoder.",
            ),
            Flag("do_train", help="Fine-tune the dual encoder on --train_split."),
            # The run's predict phase: the corpus into the vector store.
            Flag(
                "do_predict",
                name="do_index",
                help="Embed the corpus into the vector store.",
            ),
            Flag(
                "do_eval",
                help="Search the --eval_split queries in the index and score them "
                "(see --eval_backend).",
            ),
            "train_split",
            "eval_split",
            "pooling",
            Flag(
                "max_seq_length",
                default=None,
                help="Longest input in word pieces (default: the model's).",
            ),
            "passage_length",
            "passage_stride",
            "shared_towers",
            "hard_negatives",
            Flag("train_batch_size", help="Queries per training batch."),
            Flag("learning_rate", default=2e-5, help="Peak learning rate of AdamW."),
            Flag(
                "num_train_epochs", default=1.0, help="Epochs over the training pairs."
            ),
            Flag("warmup_proportion", help="Linear warmup, as a fraction."),
            RetrievalOptions,
            Flag(
                "export_dir",
                help="Write the retrieval SavedModel (query strings -> document ids, "
                "scores) here.",
            ),
            Flag(
                "serving_dtype",
                help="How the SavedModel stores the corpus embeddings.",
                choices=RETRIEVAL_SERVING_DTYPES,
            ),
            "rerank_checkpoint",
            "rerank_top_k",
            "rerank_even_if_worse",
            Flag("seed", help="Random seed (shuffling, initialisation)."),
            Flag(
                "save_checkpoints_steps",
                help="--do_train: checkpoint every this many steps (a killed run "
                "resumes from the last one).",
            ),
            "overwrite_output_dir",
            Flag(
                "distribution_strategy",
                help="tf.distribute strategy of --do_train (in-batch negatives per "
                "replica). Default: multi_worker_mirrored when TF_CONFIG names "
                "several workers, mirrored with several GPUs, else one_device.",
            ),
            "num_gpus",
            BeamOptions,
        ),
        fixed={"optimizer": "adamw"},
    ),
    work,
    required=("data_dir", "output_dir"),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
