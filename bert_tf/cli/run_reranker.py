r"""Re-ranking: a cross-encoder trained on hard negatives, evaluated as a second stage.

On BEIR data (the flags of run_retrieval.py): --do_train fine-tunes a
cross-encoder (`BertReranker`) on qrels/<train_split>.tsv, each judged
(query, document) with --hard_negatives passages the first-stage dual encoder
(--retrieval_checkpoint) ranks best among documents not relevant to the query;
--do_eval re-orders the dual encoder's top --rerank_top_k documents of every
qrels/<eval_split>.tsv query and writes both stages' metrics side by side.

    python run_reranker.py --data_dir=/tmp/squad_beir \
      --retrieval_checkpoint=$MINILM_DIR --init_checkpoint=$MINILM_DIR \
      --do_train --do_eval --rerank_loss=listwise --rerank_top_k=20 \
      --output_dir=/tmp/reranker_output

Installed as `bert-tf-run-reranker`; also `python -m bert_tf.cli.run_reranker`
and `python run_reranker.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.options.reranker_options import RERANK_LOSSES
from bert_tf.options.reranker_options import RerankerOptions


def define_flags():
    """run_reranker.py's flags: BEIR data, first stage, loss; the shared ones."""
    flags.DEFINE_string(
        "data_dir",
        None,
        "BEIR directory: corpus.jsonl, queries.jsonl, qrels/<split>.tsv.",
    )
    flags.DEFINE_string(
        "retrieval_checkpoint",
        None,
        "The first stage (a dual encoder): a run_retrieval --output_dir with "
        "trained towers, or a sentence-transformers directory.",
    )
    flags.DEFINE_string("train_split", "train", "qrels/<this>.tsv for --do_train.")
    flags.DEFINE_string("eval_split", "test", "qrels/<this>.tsv for --do_eval.")
    flags.DEFINE_integer(
        "passage_length",
        None,
        "Word pieces of text per passage (default: the dual encoder's "
        "max_seq_length - 2); longer documents are cut into several passages.",
    )
    flags.DEFINE_integer(
        "passage_stride",
        None,
        "Word pieces between passage starts (default: half of --passage_length).",
    )
    flags.DEFINE_integer(
        "hard_negatives",
        7,
        "Negatives per training query: the first stage's best passages of "
        "documents not relevant to it (its top k minus the positives).",
    )
    flags.DEFINE_enum(
        "rerank_loss",
        "bce",
        list(RERANK_LOSSES),
        "bce: binary cross-entropy of every (query, passage) pair against 1 for "
        "the positive, 0 for a negative; listwise: softmax cross-entropy over "
        "the positive and its negatives.",
    )
    flags.DEFINE_integer(
        "rerank_top_k",
        20,
        "--do_eval: documents of the first stage the cross-encoder re-orders.",
    )
    flags.DEFINE_integer(
        "eval_top_k",
        100,
        "--do_eval: documents per query in the runs (>= rerank_top_k).",
    )
    flags.DEFINE_integer(
        "encode_batch_size", 64, "Batch of the dual encoder's embedding passes."
    )
    flags.DEFINE_bool("do_eval", False, "Evaluate both stages on --eval_split.")
    flags.DEFINE_integer(
        "eval_batch_size", 32, "(query, passage) pairs per cross-encoder pass."
    )
    common_flags.define_common_flags(max_seq_length=256, learning_rate=2e-5)
    common_flags.define_vocab_flags()
    flags.DEFINE_float("num_train_epochs", 1.0, "Epochs over the training groups.")
    flags.DEFINE_float(
        "warmup_proportion", 0.1, "Linear learning-rate warmup, as a fraction."
    )


def options(flags_obj):
    """(RunOptions, RerankerOptions) of the parsed flags, checked (no TensorFlow)."""
    f = flags_obj
    reranker = RerankerOptions(
        data_dir=f.data_dir,
        retrieval_checkpoint=f.retrieval_checkpoint,
        train_split=f.train_split,
        eval_split=f.eval_split,
        passage_length=f.passage_length,
        passage_stride=f.passage_stride,
        hard_negatives=f.hard_negatives,
        rerank_loss=f.rerank_loss,
        rerank_top_k=f.rerank_top_k,
        eval_top_k=f.eval_top_k,
        encode_batch_size=f.encode_batch_size,
    )
    run = common_flags.run_options(f, batching=False)
    reranker.check(run)
    return run, reranker


COMMAND = Command(
    "run_reranker",
    __doc__,
    define_flags,
    "bert_tf.tasks.reranking:run",
    required=("output_dir",),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
