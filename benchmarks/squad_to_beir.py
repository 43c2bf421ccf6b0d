"""SQuAD v1.1 as a BEIR retrieval dataset (`bert-tf-beir --squad_file`, kept for the
benchmarks and tests that import `convert`).

    python benchmarks/squad_to_beir.py \
        --squad_file=$BERT_TF_DATA/squad/dev-v1.1.json --output_dir=/tmp/squad_beir
"""

import argparse

from bert_tf.data_prep.beir_conversion import squad_to_beir


def convert(squad_file, output_dir):
    """Writes the BEIR files; returns (paragraphs, questions, train, test) counts."""
    counts = squad_to_beir(squad_file, output_dir)
    return counts["documents"], counts["queries"], counts["train"], counts["test"]


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
