"""BM25 evaluation speed: Milvus Lite's `search_lexical` against the in-process copy.

SQuAD v1.1 dev as BEIR (2,067 paragraphs, each one passage; 10,570
questions), BM25-indexed in a Milvus Lite file; each side searches at the
depth an evaluation of --eval_top_k=100 asks. Milvus Lite searches a sample
of the questions (it answers a few a second), the in-process copy
(`ExactLexicalStore`, what --do_eval searches) all of them; the two agree on
the sample.

    BERT_TF_DATA=/path/to/data python benchmarks/bm25_eval_speed.py
"""

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from cpu_flags import cpu_description  # noqa: E402

from bert_tf.data_prep import beir  # noqa: E402
from bert_tf.data_prep.beir_conversion import squad_to_beir  # noqa: E402
from bert_tf.retrieval.bm25 import query_vector  # noqa: E402
from bert_tf.retrieval.exact_lexical import ExactLexicalStore  # noqa: E402
from bert_tf.retrieval.indexing import index_corpus  # noqa: E402
from bert_tf.retrieval.milvus_store import MilvusStore  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--squad_file",
        default=os.path.join(
            os.environ.get("BERT_TF_DATA", "data"), "squad/dev-v1.1.json"
        ),
    )
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--milvus_queries", type=int, default=200)
    args = parser.parse_args()
    print(cpu_description())
    with open("/proc/cpuinfo") as f:
        print(next((line.strip() for line in f if line.startswith("flags")), "?"))
    with tempfile.TemporaryDirectory() as tmp:
        squad_to_beir(args.squad_file, os.path.join(tmp, "beir"))
        corpus = beir.read_corpus(os.path.join(tmp, "beir"))
        queries = beir.read_queries(os.path.join(tmp, "beir"))
        passages = beir.split_passages(corpus, lambda word: 1, 10**6, 10**6)
        lexical = [query_vector(q.text) for q in queries.values()]
        store = MilvusStore(
            os.path.join(tmp, "i.db"), "bm25", 8, "none", dense=False, lexical=True
        )
        with store:
            start = time.perf_counter()
            index_corpus(None, passages, store)
            print(
                f"indexed {len(passages)} passages: {time.perf_counter() - start:.1f} s"
            )
            sample = lexical[: args.milvus_queries]
            start = time.perf_counter()
            milvus = store.search_lexical(sample, args.depth)
            lite = len(sample) / (time.perf_counter() - start)
            start = time.perf_counter()
            exact = ExactLexicalStore.copy_of(store)
            copied = time.perf_counter() - start
        start = time.perf_counter()
        found = exact.search_lexical(lexical, args.depth)
        ours = len(lexical) / (time.perf_counter() - start)
    same_best = sum(
        a[:1] == b[:1] for a, b in zip(found.ids, milvus.ids, strict=False)
    ) / len(sample)
    print(
        f"Milvus Lite search_lexical: {lite:.1f} queries/s "
        f"({len(sample)} queries, depth {args.depth}; "
        f"{len(lexical) / lite / 60:.0f} min for all {len(lexical)})"
    )
    print(
        f"in-process (ExactLexicalStore): {ours:.0f} queries/s "
        f"({len(lexical)} queries, depth {args.depth}; copy {copied:.1f} s); "
        f"same best passage on the sample: {same_best:.3f}"
    )


if __name__ == "__main__":
    main()
