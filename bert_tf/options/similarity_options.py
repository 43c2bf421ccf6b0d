"""What run_similarity is asked to train on and score: rows, columns, loss."""

import dataclasses

from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import run_defining
from bert_tf.options.option import option

# Losses of scored pairs (STS-B, SICK) and of (anchor, positive[, negative])
# rows; `bert_tf.tasks.similarity_losses` implements them.
SCORED_LOSSES = ("cosine", "cosent")
RANKING_LOSSES = ("mnr", "mnr_symmetric")
LOSSES = SCORED_LOSSES + RANKING_LOSSES
# sentence-transformers' default scale (inverse temperature) of cosent and mnr.
DEFAULT_SCALE = 20.0


@dataclasses.dataclass(frozen=True)
class SimilarityOptions:
    """run_similarity's task options (flags of the same names).

    Args:
      train_file, dev_file: .tsv/.csv/.jsonl rows.
      text_a_column, text_b_column: the two texts (anchor, positive).
      score_column: the gold similarity (scored pairs).
      negative_column: a hard negative per row (ranking losses), or None.
      loss: one of `LOSSES`.
      score_scale: scores are divided by it (5 for STS-B's 0-5).
      similarity_scale: the scale (inverse temperature) of cosent and mnr.
      pooling: pooling of a plain BERT checkpoint (a sentence-transformers
        directory says its own).
      normalize: L2-normalise the embeddings (None: as the checkpoint says).
      group_by_length: batch rows of similar length together
        (`bert_tf.data_prep.length_grouped_batches`); None: on for the scored
        losses, off for the ranking ones, whose in-batch negatives would then
        all share the anchor's length.

    Example:

    ```python
    options = SimilarityOptions(train_file="stsb/train.tsv", loss="cosent",
                                score_scale=5.0)
    options.check(run_options)
    ```
    """

    train_file: str | None = option(
        None, "Training rows (.tsv, .csv or .jsonl).", run_defining=True
    )
    dev_file: str | None = option(None, "Scored dev pairs, for --do_eval.")
    text_a_column: str = option(
        "sentence1", "First text (anchor): a column name or index.", run_defining=True
    )
    text_b_column: str = option(
        "sentence2",
        "Second text (positive): a column name or index.",
        run_defining=True,
    )
    score_column: str | None = option(
        "score", "Gold similarity (scored pairs, and --do_eval).", run_defining=True
    )
    negative_column: str | None = option(
        None, "mnr losses: a hard negative per row (optional).", run_defining=True
    )
    loss: str = option(
        "cosine",
        "cosine: MSE of cosine and score; cosent: CoSENT (score order); mnr: "
        "multiple-negatives ranking (in-batch negatives); mnr_symmetric: both "
        "ways.",
        choices=LOSSES,
        run_defining=True,
    )
    score_scale: float = option(
        1.0, "Scores are divided by this (5 for STS-B's 0-5 scores).", run_defining=True
    )
    similarity_scale: float = option(
        DEFAULT_SCALE,
        "cosent/mnr: scale of the cosines (sentence-transformers' 20).",
        run_defining=True,
    )
    pooling: str | None = option(
        None,
        "Pooling of a plain BERT checkpoint: mean, cls, max, mean_sqrt_len_tokens "
        "('+' joins several); a sentence-transformers directory says its own.",
        run_defining=True,
    )
    normalize: bool | None = option(
        None,
        "L2-normalise the embeddings (default: as the checkpoint says).",
        run_defining=True,
    )
    group_by_length: bool | None = option(
        None,
        "Batch training rows of similar length together: less padding, the same "
        "rows each epoch (default: on for cosine/cosent, off for mnr losses).",
        run_defining=True,
    )

    def __post_init__(self):
        for name in ("score_column", "negative_column"):
            if getattr(self, name) == "":  # --score_column= : no such column
                object.__setattr__(self, name, None)
        if self.group_by_length is None:
            object.__setattr__(self, "group_by_length", self.loss in SCORED_LOSSES)
        check_choices(self)
        if self.score_scale <= 0:
            raise UserInputError(
                f"--score_scale must be positive, got {self.score_scale}"
            )
        self._check_columns_differ()
        if self.negative_column and self.loss not in RANKING_LOSSES:
            raise UserInputError(
                f"--negative_column needs a ranking loss (mnr, mnr_symmetric), "
                f"not --loss={self.loss}"
            )

    def _check_columns_differ(self):
        """One column read as two texts (or as a text and the score) trains
        every pair to be identical (or the score on itself)."""
        columns = {
            "--text_a_column": self.text_a_column,
            "--text_b_column": self.text_b_column,
            "--negative_column": self.negative_column,
            "--score_column": self.score_column,
        }
        seen = {}
        for flag, column in columns.items():
            if column is None or column == "":
                continue
            if str(column) in seen:
                raise UserInputError(
                    f"{seen[str(column)]} and {flag} both name column "
                    f"{column!r}: each must name its own column"
                )
            seen[str(column)] = flag

    @property
    def scored(self):
        return self.loss in SCORED_LOSSES

    def train_columns(self):
        columns = [self.text_a_column, self.text_b_column]
        if self.negative_column:
            columns.append(self.negative_column)
        return columns

    def training_fingerprints(self, run):
        """What a --do_train run records of its data: `train_file`'s
        fingerprint and these options."""
        return [file_fingerprint(self.train_file), run_defining(self)]

    def check(self, run):
        """The checks that need the `RunOptions`, then the input paths."""
        run.at_least_one("do_train", "do_eval")
        run.check_paths()
        do_train, do_eval = run.do_train, run.do_eval
        if do_train and not self.train_file:
            raise UserInputError("--do_train needs --train_file")
        if do_eval and not self.dev_file:
            raise UserInputError("--do_eval needs --dev_file (scored pairs)")
        if (do_train and self.scored or do_eval) and not self.score_column:
            raise UserInputError(
                f"--score_column is needed (--loss={self.loss} or --do_eval)"
            )
        micro_batch_size = run.training.micro_batch_size
        if (
            do_train
            and not self.scored
            and not self.negative_column
            and micro_batch_size < 2
        ):
            # A row's only candidate is its own positive: the loss is 0.
            raise UserInputError(
                f"--loss={self.loss} learns from the other rows of a batch "
                f"(in-batch negatives), but batches hold {micro_batch_size} row "
                "(--train_batch_size / --gradient_accumulation_steps): use at "
                "least 2, or give --negative_column"
            )
        existing_path("train_file", self.train_file)
        existing_path("dev_file", self.dev_file)
