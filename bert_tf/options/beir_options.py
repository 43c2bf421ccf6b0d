"""`BeirOptions`: what bert-tf-beir converts, and where to."""

import dataclasses

from bert_tf.errors import UserInputError
from bert_tf.options.checks import existing_path
from bert_tf.options.checks import required
from bert_tf.options.option import option


@dataclasses.dataclass(frozen=True)
class BeirOptions:
    """The converter's options (flags of bert-tf-beir, same names); checked when made.

    Args:
      output_dir: where corpus.jsonl, queries.jsonl and qrels/ go.
      squad_file: a SQuAD v1.1/v2.0 JSON file (a document per paragraph).
      pairs_file: or a .tsv/.csv table of (query, passage) pairs with a header.
      query_column, passage_column: the pairs' columns.

    Example:

    ```python
    BeirOptions(output_dir="/tmp/squad_beir", squad_file="dev-v1.1.json")
    ```
    """

    output_dir: str = option(
        help="Where corpus.jsonl, queries.jsonl and qrels/<split>.tsv go."
    )
    squad_file: str | None = option(
        None,
        "SQuAD v1.1/v2.0 JSON: a document per paragraph, a query per answerable "
        "question; qrels/train.tsv holds the first half of the articles, "
        "qrels/test.tsv the rest.",
    )
    pairs_file: str | None = option(
        None,
        "Or a .tsv/.csv of (query, passage) pairs with a header: a document per "
        "distinct passage, a query per distinct query (train: the first half).",
    )
    query_column: str = option("query", "--pairs_file: the query column.")
    passage_column: str = option("passage", "--pairs_file: the passage column.")

    def __post_init__(self):
        required("output_dir", self.output_dir)
        if bool(self.squad_file) == bool(self.pairs_file):
            raise UserInputError("Give one of --squad_file or --pairs_file.")
        existing_path("squad_file", self.squad_file)
        existing_path("pairs_file", self.pairs_file)
        if self.pairs_file and not self.pairs_file.endswith((".tsv", ".csv")):
            raise UserInputError(
                f"--pairs_file={self.pairs_file}: a .tsv or .csv file is expected"
            )
