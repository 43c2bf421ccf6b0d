r"""Fine-tunes a sentence encoder on similarity data; scores it on dev pairs.

Scored pairs (STS-B, SICK; --loss=cosine or cosent) or (anchor, positive[,
negative]) rows (--loss=mnr: in-batch negatives; mnr_symmetric), from
.tsv/.csv/.jsonl files. Saves our checkpoint (model.ckpt-<step>) and a
sentence-transformers directory (output_dir/sentence_transformers) that
PyTorch's SentenceTransformer loads; --do_eval writes the Pearson/Spearman
correlation of cosine and score to eval_results.txt.

    python run_similarity.py --init_checkpoint=all-MiniLM-L6-v2 \
      --train_file=$GLUE_DIR/STS-B/train.tsv --dev_file=$GLUE_DIR/STS-B/dev.tsv \
      --score_scale=5 --loss=cosine --do_train --do_eval \
      --train_batch_size=16 --learning_rate=2e-5 --num_train_epochs=4 \
      --output_dir=/tmp/stsb_output/

Installed as `bert-tf-run-similarity`; also `python -m bert_tf.cli.run_similarity`
and `python run_similarity.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.options.similarity_options import SimilarityOptions

LOSSES = ("cosine", "cosent", "mnr", "mnr_symmetric")


def define_flags():
    flags.DEFINE_string("train_file", None, "Training rows (.tsv, .csv or .jsonl).")
    flags.DEFINE_string("dev_file", None, "Scored dev pairs, for --do_eval.")
    flags.DEFINE_string(
        "text_a_column", "sentence1", "First text (anchor): a column name or index."
    )
    flags.DEFINE_string(
        "text_b_column", "sentence2", "Second text (positive): a column name or index."
    )
    flags.DEFINE_string(
        "score_column", "score", "Gold similarity (scored pairs, and --do_eval)."
    )
    flags.DEFINE_string(
        "negative_column", None, "mnr losses: a hard negative per row (optional)."
    )
    flags.DEFINE_enum(
        "loss",
        "cosine",
        list(LOSSES),
        "cosine: MSE of cosine and score; cosent: CoSENT (score order); mnr: "
        "multiple-negatives ranking (in-batch negatives); mnr_symmetric: both ways.",
    )
    flags.DEFINE_float(
        "score_scale", 1.0, "Scores are divided by this (5 for STS-B's 0-5 scores)."
    )
    flags.DEFINE_float(
        "similarity_scale",
        20.0,
        "cosent/mnr: scale of the cosines (sentence-transformers' 20).",
    )
    flags.DEFINE_string(
        "pooling",
        None,
        "Pooling of a plain BERT checkpoint: mean, cls, max, mean_sqrt_len_tokens "
        "('+' joins several); a sentence-transformers directory says its own.",
    )
    flags.DEFINE_bool(
        "normalize",
        None,
        "L2-normalise the embeddings (default: as the checkpoint says).",
    )
    flags.DEFINE_bool(
        "group_by_length",
        None,
        "Batch training rows of similar length together: less padding, the same "
        "rows each epoch (default: on for cosine/cosent, off for mnr losses).",
    )
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("eval_batch_size", 32, "Texts per batch when evaluating.")
    common_flags.define_common_flags(
        max_seq_length=None, learning_rate=2e-5, train_batch_size=16
    )
    common_flags.define_finetuning_flags()


def options(flags_obj):
    """(RunOptions, SimilarityOptions) of the parsed flags, checked."""
    f = flags_obj
    similarity = SimilarityOptions(
        train_file=f.train_file,
        dev_file=f.dev_file,
        text_a_column=f.text_a_column,
        text_b_column=f.text_b_column,
        score_column=f.score_column or None,
        negative_column=f.negative_column or None,
        loss=f.loss,
        score_scale=f.score_scale,
        similarity_scale=f.similarity_scale,
        pooling=f.pooling,
        normalize=f.normalize,
        group_by_length=f.group_by_length,
    )
    run = common_flags.run_options(f, batching=False)
    similarity.check(run)
    return run, similarity


COMMAND = Command(
    "run_similarity",
    __doc__,
    define_flags,
    "bert_tf.tasks.similarity:run",
    required=("output_dir", "init_checkpoint"),
    options=options,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
