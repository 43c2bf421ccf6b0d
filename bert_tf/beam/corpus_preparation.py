"""prepare_corpus as a Beam pipeline: the one-process run's shards, byte for byte.

Stages: the input files are read (one reader per file, then the documents are
spread over the workers), each document goes through
`document_stage.prepare_document` (skip, extract, clean, split), exact
duplicates are grouped by their text hash (the smallest key stays), near
duplicates by their LSH buckets (`dedup.NearDuplicateBands`: a document
similar to one with a smaller key in a shared bucket goes), and the kept
documents are grouped by shard (`shards.shard_of`) and each shard is sorted
and written. The rules look at pairs of documents only, so they drop the
documents the one-process run drops, whatever the runner's order.

The shards are written as ``corpus-SSSSS-of-NNNNN.txt.tmp`` by the workers
and renamed by the driver once the pipeline has succeeded, so a failed run
leaves no shard that looks finished. `output_dir` must be a file system the
workers and the driver share (a local disk for the DirectRunner and
PrismRunner, a shared mount on a cluster).
"""

import os
import re

from bert_tf.beam.runner_options import import_beam
from bert_tf.beam.runner_options import pipeline_options
from bert_tf.data_prep.corpus.document_stage import prepare_document
from bert_tf.data_prep.corpus.preparation import empty_corpus_error
from bert_tf.data_prep.corpus.preparation import finish
from bert_tf.data_prep.corpus.preparation import input_jobs
from bert_tf.data_prep.corpus.preparation import start_run
from bert_tf.data_prep.corpus.readers import iter_raw_documents
from bert_tf.data_prep.corpus.shards import order_in_shard
from bert_tf.data_prep.corpus.shards import shard_of
from bert_tf.data_prep.corpus.shards import shard_paths
from bert_tf.data_prep.corpus.shards import write_atomically
from bert_tf.data_prep.corpus.summary import COUNTERS
from bert_tf.data_prep.local_files import remove_partial_output
from bert_tf.errors import UserInputError

beam = import_beam()

_TEMP = ".tmp"
# How a worker's UserInputError reads once the runner has wrapped it.
_WRAPPED_USER_ERROR = re.compile(r"UserInputError: (.+)")
_PARAMETERS = ("input_file", "output_dir", "text_column", "min_document_chars")
_STAGE_NAME = re.compile(r"\s*\[while running '[^']*'\]")


def _counter(name):
    return beam.metrics.Metrics.counter(__name__, name)


def _read(job, text_column):
    path, name, file_format = job
    yield from iter_raw_documents(path, name, file_format, text_column)


class _Prepare(beam.DoFn):
    """RawDocument → PreparedDocument (the skipped and dropped counted)."""

    def __init__(self, rules):
        self._rules = rules
        self._counters = {}

    def process(self, raw):
        document, counts = prepare_document(raw, self._rules)
        for name, value in counts.items():
            if name not in self._counters:
                self._counters[name] = _counter(name)
            self._counters[name].inc(value)
        if document is not None:
            yield document


def _first_of_same_text(keyed):
    """(hash, documents) → the document with the smallest key."""
    _, documents = keyed
    documents = list(documents)
    if len(documents) > 1:
        _counter("exact_duplicates").inc(len(documents) - 1)
    return min(documents, key=lambda d: d.key)


def _bucket_entries(document, bands):
    for bucket in bands.buckets(document.signature):
        yield bucket, (document.key, document.signature)


def _dropped_in_bucket(keyed, bands):
    _, members = keyed
    members = list(members)
    if len(members) > 1:
        yield from bands.dropped_in_bucket(members)


def _unless_dropped(joined):
    """(key, {"document": [d], "dropped": [...]}) → d, unless dropped."""
    _, groups = joined
    documents = list(groups["document"])
    if list(groups["dropped"]):
        _counter("near_duplicates").inc()
        return
    yield from documents


class _WriteShard(beam.DoFn):
    """(shard index, documents) → the shard's temporary file."""

    def __init__(self, output_dir, num_shards, random_seed):
        self._output_dir = output_dir
        self._num_shards = num_shards
        self._random_seed = random_seed

    def process(self, keyed):
        index, documents = keyed
        documents = sorted(
            (d for d in documents if d is not None),
            key=lambda d: order_in_shard(d.key, self._random_seed),
        )
        path = shard_paths(self._output_dir, self._num_shards)[index]
        written = write_atomically(path + _TEMP, (d.text() for d in documents))
        _counter("documents").inc(len(documents))
        _counter("sentences").inc(sum(len(d.sentences) for d in documents))
        _counter("output_bytes").inc(written)
        yield index


def build(
    pipeline,
    jobs,
    output_dir,
    text_column,
    num_shards,
    random_seed,
    rules,
    bands,
):
    """Adds the pipeline's stages to `pipeline` (see the module doc)."""
    documents = (
        pipeline
        | "InputFiles" >> beam.Create(jobs)
        | "Read" >> beam.FlatMap(_read, text_column)
        # One file's documents come from one reader: spread them out.
        | "Spread" >> beam.Reshuffle()
        | "Prepare" >> beam.ParDo(_Prepare(rules))
    )
    unique = (
        documents
        | "ByTextHash" >> beam.Map(lambda d: (d.text_hash, d))
        | "GroupSameText" >> beam.GroupByKey()
        | "FirstOfSameText" >> beam.Map(_first_of_same_text)
    )
    dropped = (
        unique
        | "Buckets" >> beam.FlatMap(_bucket_entries, bands)
        | "GroupBuckets" >> beam.GroupByKey()
        | "DroppedInBucket" >> beam.FlatMap(_dropped_in_bucket, bands)
        | "DroppedOnce" >> beam.Distinct()
        | "DroppedByKey" >> beam.Map(lambda key: (key, True))
    )
    kept = (
        {
            "document": unique | "ByKey" >> beam.Map(lambda d: (d.key, d)),
            "dropped": dropped,
        }
        | "JoinDropped" >> beam.CoGroupByKey()
        | "Kept" >> beam.FlatMap(_unless_dropped)
    )
    # Every shard is written, an empty one too.
    shard_indexes = (
        pipeline
        | "ShardIndexes" >> beam.Create(range(num_shards))
        | "EmptyShards" >> beam.Map(lambda index: (index, None))
    )
    return (
        (
            kept
            | "ByShard"
            >> beam.Map(lambda d: (shard_of(d.key, random_seed, num_shards), d)),
            shard_indexes,
        )
        | "AllShards" >> beam.Flatten()
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.ParDo(_WriteShard(output_dir, num_shards, random_seed))
    )


def run_pipeline(
    input_files,
    output_dir,
    runner,
    beam_options="",
    input_format="auto",
    text_column="text",
    num_shards=1,
    random_seed=12345,
    rules=None,
    dedup_threshold=0.8,
):
    """Runs the pipeline to the end; returns the `CorpusSummary`.

    Args:
      input_files ... dedup_threshold: as `preparation.prepare_corpus`.
      runner, beam_options: see `runner_options.pipeline_options`.

    Raises:
      UserInputError: bad input (named, also from a worker), or nothing
        left after filtering; no shard is left behind then.

    Example:

    ```python
    summary = run_pipeline(["dump.xml.bz2"], "/tmp/corpus", "DirectRunner",
                           "--direct_num_workers=2", num_shards=10)
    ```
    """
    rules, bands, summary = start_run(
        input_files, output_dir, num_shards, rules, dedup_threshold
    )
    os.makedirs(output_dir, exist_ok=True)
    pipeline = beam.Pipeline(options=pipeline_options(runner, beam_options))
    build(
        pipeline,
        input_jobs(input_files, input_format),
        output_dir,
        text_column,
        num_shards,
        random_seed,
        rules,
        bands,
    )
    temps = [path + _TEMP for path in shard_paths(output_dir, num_shards)]
    try:
        result = pipeline.run()
        result.wait_until_finish()
        summary.add(_counter_values(result))
        if summary["documents"] == 0:
            raise empty_corpus_error(input_files, summary)
    except Exception as error:
        _remove(temps)
        user_error = worker_user_error(error)
        if user_error is None:
            raise
        raise user_error from error
    for temp in temps:
        os.replace(temp, temp[: -len(_TEMP)])
    finish(output_dir, num_shards, summary)
    return summary


def worker_user_error(error):
    """The UserInputError a worker raised, from the runner's wrapped error
    (its cause chain, or the message's ``UserInputError: ...`` line)."""
    seen, found = error, None
    while seen is not None and found is None:
        if isinstance(seen, UserInputError):
            found = seen
        seen = seen.__cause__ or seen.__context__
    if found is not None:
        message, flags = str(found), found.flags
    else:
        match = _WRAPPED_USER_ERROR.search(str(error))
        if match is None:
            return None
        # Reconstructed from text (a worker process): the parameters it
        # names become their flags again.
        message = match.group(1)
        flags = [name for name in _PARAMETERS if re.search(rf"\b{name}\b", message)]
    # The runner appends the stage's name: " [while running 'Read']".
    message = _STAGE_NAME.sub("", message).strip()
    return UserInputError(message, argument=flags)


def _remove(paths):
    for path in paths:
        remove_partial_output(path)


def _counter_values(result):
    from apache_beam.metrics.metric import MetricsFilter

    values = {}
    query = result.metrics().query(MetricsFilter().with_namespace(__name__))
    for counter in query["counters"]:
        name = counter.key.metric.name
        if name in COUNTERS:
            values[name] = values.get(name, 0) + (counter.committed or 0)
    return values
