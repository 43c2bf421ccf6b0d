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
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import BATCHING
from bert_tf.cli.flags import STEP_SCHEDULE
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.run_options import RunOptions
from bert_tf.options.similarity_options import SimilarityOptions

COMMAND = Command(
    "run_similarity",
    __doc__,
    OptionFlags(
        RunOptions,
        SimilarityOptions,
        layout=(SimilarityOptions, RunOptions),
        without=(*BATCHING, *STEP_SCHEDULE),
        changed=(
            Flag(
                "eval_batch_size", default=32, help="Texts per batch when evaluating."
            ),
            Flag("max_seq_length", default=None),
            Flag("train_batch_size", default=16),
            Flag("learning_rate", default=2e-5),
        ),
    ),
    "bert_tf.tasks.similarity:run",
    required=("output_dir", "init_checkpoint"),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
