"""Retrieval data in the BEIR layout, made from SQuAD-style JSON or a table of pairs.

BEIR (`bert_tf.data_prep.beir` reads it) is what run_retrieval.py and
run_reranker.py take: ``corpus.jsonl``, ``queries.jsonl`` and
``qrels/<split>.tsv``. Two sources convert:

- SQuAD v1.1/v2.0 JSON: a document per paragraph (``<title>_<index>``), a
  query per question with its paragraph relevant; v2.0's unanswerable
  questions have no relevant paragraph and are left out (counted).
- A TSV/CSV table of (query, passage) pairs with a header: a document per
  distinct passage, a query per distinct query text, each pair relevant.

Both write ``qrels/all.tsv`` and a ``train``/``test`` split: the first half
of the articles (or of the distinct queries, in file order) and the rest, so
that no test query shares a document with a training query in SQuAD.
"""

import csv
import json
import os

from bert_tf.data_prep.table_reader import BadRowError
from bert_tf.errors import UserInputError

QRELS_HEADER = "query-id\tcorpus-id\tscore\n"
SPLITS = ("all", "train", "test")


def squad_to_beir(squad_file, output_dir):
    """Writes SQuAD JSON `squad_file` as BEIR into `output_dir`.

    Returns:
      {"documents", "queries", "train", "test", "unanswerable"} counts.
    """
    try:
        with open(squad_file, encoding="utf-8") as f:
            articles = json.load(f)["data"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UserInputError(f"{squad_file}: not a SQuAD JSON file ({error})") from None
    half = len(articles) // 2
    documents, queries, qrels = [], [], {split: [] for split in SPLITS}
    unanswerable = 0
    for article_index, article in enumerate(articles):
        split = "train" if article_index < half else "test"
        for paragraph_index, paragraph in enumerate(article["paragraphs"]):
            doc_id = f"{article['title']}_{paragraph_index}"
            title = article["title"].replace("_", " ")
            documents.append(
                {"_id": doc_id, "title": title, "text": paragraph["context"]}
            )
            for qa in paragraph["qas"]:
                if qa.get("is_impossible"):
                    unanswerable += 1
                    continue
                queries.append({"_id": qa["id"], "text": qa["question"]})
                qrels["all"].append((qa["id"], doc_id))
                qrels[split].append((qa["id"], doc_id))
    _write(output_dir, documents, queries, qrels)
    return {
        "documents": len(documents),
        "queries": len(queries),
        "train": len(qrels["train"]),
        "test": len(qrels["test"]),
        "unanswerable": unanswerable,
    }


def pairs_to_beir(
    pairs_file, output_dir, query_column="query", passage_column="passage"
):
    """Writes a TSV/CSV table of (query, passage) pairs as BEIR into `output_dir`.

    Args:
      pairs_file: .tsv or .csv with a header row naming the columns.
      query_column, passage_column: the columns of the query and passage text.

    Returns:
      {"documents", "queries", "train", "test", "pairs"} counts.

    Raises:
      BadRowError: `file:line` of a row without query or passage text.
      UserInputError: a column not in the header, or a file without pairs.
    """
    # TSV as GLUE writes it: tabs only, quotes are text.
    dialect = (
        {"delimiter": "\t", "quoting": csv.QUOTE_NONE}
        if pairs_file.endswith(".tsv")
        else {}
    )
    documents, queries = {}, {}
    pairs = []
    with open(pairs_file, encoding="utf-8", newline="") as f:
        reader = csv.reader(f, **dialect)
        header = next(reader, None) or []
        for name, column in (
            ("query_column", query_column),
            ("passage_column", passage_column),
        ):
            if column not in header:
                raise UserInputError(
                    f"{pairs_file}:1: {name}={column!r} is not in the header {header}"
                )
        at_query, at_passage = header.index(query_column), header.index(passage_column)
        for fields in reader:
            line = reader.line_num
            if len(fields) != len(header):
                raise BadRowError(
                    pairs_file,
                    line,
                    f"{len(fields)} columns, the header has {len(header)}",
                )
            query, passage = fields[at_query].strip(), fields[at_passage].strip()
            if not query or not passage:
                raise BadRowError(pairs_file, line, "empty query or passage")
            query_id = queries.setdefault(query, f"q{len(queries) + 1}")
            doc_id = documents.setdefault(passage, f"d{len(documents) + 1}")
            pairs.append((query_id, doc_id))
    if not pairs:
        raise UserInputError(f"{pairs_file}: no pairs below the header")
    order = {query_id: index for index, query_id in enumerate(queries.values())}
    half = len(queries) // 2
    qrels = {"all": list(dict.fromkeys(pairs))}
    qrels["train"] = [p for p in qrels["all"] if order[p[0]] < half]
    qrels["test"] = [p for p in qrels["all"] if order[p[0]] >= half]
    _write(
        output_dir,
        [{"_id": d, "title": "", "text": text} for text, d in documents.items()],
        [{"_id": q, "text": text} for text, q in queries.items()],
        qrels,
    )
    return {
        "documents": len(documents),
        "queries": len(queries),
        "train": len(qrels["train"]),
        "test": len(qrels["test"]),
        "pairs": len(pairs),
    }


def _write(output_dir, documents, queries, qrels):
    os.makedirs(os.path.join(output_dir, "qrels"), exist_ok=True)
    for name, records in (("corpus.jsonl", documents), ("queries.jsonl", queries)):
        with open(os.path.join(output_dir, name), "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    for split, rows in qrels.items():
        with open(os.path.join(output_dir, "qrels", f"{split}.tsv"), "w") as f:
            f.write(QRELS_HEADER)
            f.writelines(f"{q}\t{d}\t1\n" for q, d in rows)
