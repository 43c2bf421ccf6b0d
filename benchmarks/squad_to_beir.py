"""SQuAD v1.1 as a BEIR retrieval dataset: each question's relevant document is its paragraph.

Reads a SQuAD v1.1 file (dev-v1.1.json: 48 articles, 2,067 paragraphs,
10,570 questions) and writes, in ``--output_dir``:

- ``corpus.jsonl``: one document per paragraph, ``_id`` = ``<article
  title>_<paragraph index>``, ``title`` = the article title with spaces,
  ``text`` = the paragraph;
- ``queries.jsonl``: one query per question (``_id`` = the SQuAD question id);
- ``qrels/all.tsv``: every question -> its paragraph (score 1);
- ``qrels/train.tsv``: the questions of the first half of the articles (in
  file order), ``qrels/test.tsv``: those of the second half, for fine-tuning
  on one half and measuring on the other (the corpus is always all of it).

    python benchmarks/squad_to_beir.py \
        --squad_file=$BERT_TF_DATA/squad/dev-v1.1.json --output_dir=/tmp/squad_beir
"""

import argparse
import json
import os


def convert(squad_file, output_dir):
    """Writes the BEIR files; returns (paragraphs, questions, train, test) counts."""
    with open(squad_file, encoding="utf-8") as f:
        articles = json.load(f)["data"]
    half = len(articles) // 2
    os.makedirs(os.path.join(output_dir, "qrels"), exist_ok=True)
    rows = {"all": [], "train": [], "test": []}
    paragraphs = questions = 0
    with (
        open(os.path.join(output_dir, "corpus.jsonl"), "w", encoding="utf-8") as corpus,
        open(
            os.path.join(output_dir, "queries.jsonl"), "w", encoding="utf-8"
        ) as queries,
    ):
        for article_index, article in enumerate(articles):
            split = "train" if article_index < half else "test"
            for paragraph_index, paragraph in enumerate(article["paragraphs"]):
                doc_id = f"{article['title']}_{paragraph_index}"
                title = article["title"].replace("_", " ")
                record = {"_id": doc_id, "title": title, "text": paragraph["context"]}
                corpus.write(json.dumps(record, ensure_ascii=False) + "\n")
                paragraphs += 1
                for qa in paragraph["qas"]:
                    query = {"_id": qa["id"], "text": qa["question"]}
                    queries.write(json.dumps(query, ensure_ascii=False) + "\n")
                    questions += 1
                    rows["all"].append((qa["id"], doc_id))
                    rows[split].append((qa["id"], doc_id))
    for split, pairs in rows.items():
        path = os.path.join(output_dir, "qrels", f"{split}.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            f.writelines(f"{q}\t{d}\t1\n" for q, d in pairs)
    return paragraphs, questions, len(rows["train"]), len(rows["test"])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--squad_file", required=True)
    parser.add_argument("--output_dir", required=True)
    args = parser.parse_args()
    paragraphs, questions, train, test = convert(args.squad_file, args.output_dir)
    print(
        f"{args.output_dir}: {paragraphs} paragraphs, {questions} questions "
        f"({train} train, {test} test)"
    )


if __name__ == "__main__":
    main()
