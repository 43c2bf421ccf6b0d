r"""Re-ranking: a cross-encoder trained on hard negatives, evaluated as a second stage.

On BEIR data (the flags of run_retrieval.py): --do_train fine-tunes a
cross-encoder (`BertReranker`) on qrels/<train_split>.tsv, each judged
(query, document) with --hard_negatives passages the first-stage dual encoder
(--retrieval_checkpoint) ranks best among documents not relevant to the query;
--do_eval re-orders the dual encoder's top --rerank_top_k documents of every
qrels/<eval_split>.tsv query and writes both stages' metrics side by side.

    python run_reranker.py --data_dir=/tmp/squad_beir \
      --retrieval_checkpoint=$MINILM_DIR --init_checkpoint=$MINILM_DIR \
      --do_train --do_eval --rerank_top_k=20 \
      --output_dir=/tmp/reranker_output
"""

from bert_tf.cli.command import Command
from bert_tf.cli.flags import BATCHING
from bert_tf.cli.flags import STEP_SCHEDULE
from bert_tf.cli.flags import Flag
from bert_tf.cli.flags import OptionFlags
from bert_tf.options.reranker_options import RerankerOptions
from bert_tf.options.run_options import RunOptions

COMMAND = Command(
    "run_reranker",
    __doc__,
    OptionFlags(
        RunOptions,
        RerankerOptions,
        layout=(RerankerOptions, RunOptions),
        without=(*BATCHING, *STEP_SCHEDULE, "do_predict", "predict_batch_size"),
        changed=(
            Flag("do_eval", help="Evaluate both stages on --eval_split."),
            Flag(
                "eval_batch_size",
                default=32,
                help="(query, passage) pairs per cross-encoder pass.",
            ),
            # The recipe measured in docs/guides/reranking.md (listwise, 3 hard negatives,
            # 8 questions a batch, lr 1e-4: +10.5 points mrr@10 on SQuAD); at
            # 2e-5 and 7 negatives 25 steps made the ranking worse.
            Flag("max_seq_length", default=256),
            Flag("train_batch_size", default=8, help="Questions per training batch."),
            Flag("learning_rate", default=1e-4),
            Flag(
                "num_train_epochs", default=1.0, help="Epochs over the training groups."
            ),
            Flag(
                "warmup_proportion", help="Linear learning-rate warmup, as a fraction."
            ),
        ),
    ),
    "bert_tf.tasks.reranking:run",
    required=("output_dir",),
)


main = COMMAND.main


if __name__ == "__main__":
    main()
