"""prepare_corpus in one process: read, clean, deduplicate, shard, summarise.

The per-document work is `document_stage.prepare_document`, the duplicate
rules `dedup`'s and the shard layout `shards`'s, shared with the Beam
pipeline (`bert_tf.beam.corpus_preparation`), which writes the same bytes.
The cleaned documents are held in memory until they are written (a few
hundred MB per GB of extracted text); the Beam pipeline has no such bound.
"""

import os
import time

from absl import logging

from bert_tf.data_prep.corpus.cleaning import CleaningRules
from bert_tf.data_prep.corpus.dedup import NearDuplicateBands
from bert_tf.data_prep.corpus.dedup import near_duplicates
from bert_tf.data_prep.corpus.document_stage import prepare_document
from bert_tf.data_prep.corpus.readers import input_names
from bert_tf.data_prep.corpus.readers import iter_raw_documents
from bert_tf.data_prep.corpus.readers import resolve_format
from bert_tf.data_prep.corpus.shards import SUMMARY_FILE
from bert_tf.data_prep.corpus.shards import order_in_shard
from bert_tf.data_prep.corpus.shards import remove_stale_shards
from bert_tf.data_prep.corpus.shards import shard_of
from bert_tf.data_prep.corpus.shards import shard_paths
from bert_tf.data_prep.corpus.shards import write_atomically
from bert_tf.data_prep.corpus.summary import CorpusSummary
from bert_tf.errors import UserInputError
from bert_tf.options.input_overwrite_check import check_outputs_are_not_inputs

# At most this long between two progress lines.
PROGRESS_SECONDS = 30.0


def check_output_dir(output_dir, input_files, num_shards):
    """Refuses an output that is an input, or inputs inside `output_dir`
    (a later run's glob would read the shards back as corpus)."""
    outputs = [("output_dir", p) for p in shard_paths(output_dir, num_shards)]
    outputs.append(("output_dir", os.path.join(output_dir, SUMMARY_FILE)))
    check_outputs_are_not_inputs(outputs, [("input_file", input_files)])
    root = os.path.realpath(output_dir)
    for path in input_files:
        if os.path.realpath(path).startswith(root + os.sep):
            raise UserInputError(
                f"output_dir={output_dir} holds the input {path} (input_file): "
                "its shards would be read back as corpus; choose an output_dir "
                "outside the inputs",
                argument=("output_dir", "input_file"),
            )
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        raise UserInputError(
            f"output_dir={output_dir} is a file, not a directory", argument="output_dir"
        )


def start_run(input_files, output_dir, num_shards, rules, dedup_threshold):
    """The checks before a run (one process or Beam): returns the rules (the
    defaults for None), the `NearDuplicateBands` and the summary so far."""
    if num_shards < 1:
        raise UserInputError(
            f"num_shards must be >= 1, got {num_shards}", argument="num_shards"
        )
    bands = NearDuplicateBands(dedup_threshold)
    check_output_dir(output_dir, input_files, num_shards)
    summary = CorpusSummary(
        {
            "input_files": len(input_files),
            "input_bytes": sum(os.path.getsize(p) for p in input_files),
        }
    )
    return rules or CleaningRules(), bands, summary


def input_jobs(input_files, input_format="auto"):
    """(path, name in keys, resolved format) of each input file."""
    names = input_names(input_files)
    return [
        (path, name, resolve_format(path, input_format))
        for path, name in zip(input_files, names, strict=True)
    ]


def empty_corpus_error(input_files, summary):
    return UserInputError(
        f"no document left after filtering {', '.join(input_files)} "
        f"({summary['pages_read']} pages and {summary['records_read']} records "
        f"read, {summary['dropped_too_short']} shorter than min_document_chars): "
        "nothing written",
        argument=("min_document_chars",),
    )


class _Progress:
    def __init__(self):
        self.began = self.last = time.monotonic()

    def maybe_log(self, summary, final=False):
        now = time.monotonic()
        if final or now - self.last >= PROGRESS_SECONDS:
            self.last = now
            logging.info(
                "%d pages and %d records read, %d documents kept, %.0f s",
                summary["pages_read"],
                summary["records_read"],
                summary["documents"],
                now - self.began,
            )


def prepare_corpus(
    input_files,
    output_dir,
    input_format="auto",
    text_column="text",
    num_shards=1,
    random_seed=12345,
    rules=None,
    dedup_threshold=0.8,
):
    """Writes the corpus shards and ``corpus_summary.json``; returns the
    `CorpusSummary`.

    Args:
      input_files: the input files (globs expanded,
        `readers.expand_input_patterns`).
      output_dir: where ``corpus-SSSSS-of-NNNNN.txt`` go.
      input_format: ``auto``, ``wikipedia``, ``jsonl``, ``parquet`` or ``text``.
      text_column: the text field of JSON-lines and Parquet rows.
      num_shards: output shards (a document's shard: a seeded hash of its key).
      random_seed: the seed of that hash (and of the order within a shard).
      rules: the `CleaningRules` (default thresholds if None).
      dedup_threshold: the Jaccard similarity of near duplicates.

    Raises:
      UserInputError: bad input (named), or nothing left after filtering.

    Example:

    ```python
    summary = prepare_corpus(["enwiki-pages-articles1.xml.bz2"], "/tmp/corpus",
                             num_shards=10)
    ```
    """
    rules, bands, summary = start_run(
        input_files, output_dir, num_shards, rules, dedup_threshold
    )
    progress = _Progress()
    documents = []
    for path, name, file_format in input_jobs(input_files, input_format):
        for raw in iter_raw_documents(path, name, file_format, text_column):
            document, counts = prepare_document(raw, rules)
            summary.add(counts)
            if document is not None:
                documents.append(document)
            progress.maybe_log(summary)
    kept = deduplicate(documents, bands, summary)
    if not kept:
        raise empty_corpus_error(input_files, summary)
    write_shards(kept, output_dir, num_shards, random_seed, summary)
    progress.maybe_log(summary, final=True)
    return summary


def deduplicate(documents, bands, summary):
    """The documents the duplicate rules keep (see `dedup`), counted in `summary`."""
    first = {}
    for document in documents:
        held = first.get(document.text_hash)
        if held is None or document.key < held.key:
            first[document.text_hash] = document
    unique = list(first.values())
    summary.add({"exact_duplicates": len(documents) - len(unique)})
    dropped = near_duplicates({d.key: d.signature for d in unique}, bands)
    summary.add({"near_duplicates": len(dropped)})
    return [d for d in unique if d.key not in dropped]


def shard_contents(documents, num_shards, random_seed):
    """Each shard's documents in their order."""
    shards = [[] for _ in range(num_shards)]
    for document in documents:
        shards[shard_of(document.key, random_seed, num_shards)].append(document)
    for shard in shards:
        shard.sort(key=lambda d: order_in_shard(d.key, random_seed))
    return shards


def write_shards(documents, output_dir, num_shards, random_seed, summary):
    """Writes the shards, removes stale ones, then the summary (all atomically)."""
    os.makedirs(output_dir, exist_ok=True)
    paths = shard_paths(output_dir, num_shards)
    for path, shard in zip(
        paths, shard_contents(documents, num_shards, random_seed), strict=True
    ):
        summary.add(
            {
                "documents": len(shard),
                "sentences": sum(len(d.sentences) for d in shard),
                "output_bytes": write_atomically(path, (d.text() for d in shard)),
            }
        )
    finish(output_dir, num_shards, summary)


def finish(output_dir, num_shards, summary):
    """Removes shards of another count and writes ``corpus_summary.json``."""
    for path in remove_stale_shards(output_dir, num_shards):
        logging.info("Removed %s (a shard of an earlier run's other shard count)", path)
    summary.add({"shards": num_shards})
    write_atomically(os.path.join(output_dir, SUMMARY_FILE), [summary.text()])
