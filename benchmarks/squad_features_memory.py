"""Peak memory of building the prediction features of a SQuAD file.

Reads the file, writes its features to a TFRecord as run_squad.py does
(`bert_tf.data_prep.squad.write_features`, prediction mode: the kept features hold
tokens and position maps only) and prints the peak RSS after importing
TensorFlow, after reading the examples and at the end.

    python benchmarks/squad_features_memory.py \
      $BERT_TF_DATA/squad/dev-v1.1.json $BERT_TF_DATA/vocab/bert-base-uncased/vocab.txt
"""

import os
import resource
import sys
import tempfile
import time


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(squad_file, vocab_file):
    from bert_tf.cli.command import import_tensorflow

    import_tensorflow()
    print(f"TensorFlow imported: peak RSS {peak_rss_mib():.0f} MiB")
    from bert_tf import tokenization
    from bert_tf.data_prep import squad

    start = time.time()
    examples = squad.read_squad_examples(squad_file, is_training=False)
    print(f"{len(examples)} examples read: peak RSS {peak_rss_mib():.0f} MiB")
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=True)
    with tempfile.TemporaryDirectory() as folder:
        count, kept = squad.write_features(
            examples,
            tokenizer,
            os.path.join(folder, "eval.tf_record"),
            max_seq_length=384,
            doc_stride=128,
            max_query_length=64,
            is_training=False,
        )
    print(
        f"{count} features written, {len(kept)} kept, {time.time() - start:.1f} s: "
        f"peak RSS {peak_rss_mib():.0f} MiB"
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
