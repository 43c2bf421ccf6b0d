"""run_retrieval.py --do_index as a Beam pipeline: a BEIR corpus into Milvus.

Stages: the corpus files (``data_dir/corpus.jsonl``, or ``corpus_file``:
globs of JSON-lines files, ``.gz`` read as gzip, on any file system Beam
knows) are read in parallel, each document cut into passages by the
one-process path's `PassageSplitter` (the document tower's tokenizer and
settings); passages are joined by id with the rows the store already has
(read before the pipeline), and only the new or changed ones go through
``RunInference`` with a ``DualEncoderHandler``; passages no longer in the
corpus are deleted. Rows are written by the one-process path's
`write_passages`, upserted by passage id into the collection that carries
the towers' fingerprint, so a rerun embeds only what changed and nothing is
stored twice.

Writers: a Milvus server or cluster (``http://...``) gets one writer per
batch of passages, in parallel, claimed for the run (`IndexLock`: a second
run at once is refused); the writers do not flush (the server keeps what it
acknowledged, and concurrent flushes fail on ``milvus-lite server``: see
`MilvusRows`), the driver flushes once at the end and checks that every
passage is stored. A killed run keeps every batch written. A
Milvus Lite file can be opened by one process only (and stays held by it
until it exits): the rows stored before the pipeline are read in a
short-lived child process, the workers write each embedded batch to a
staging file (`bert_tf.beam.staging`), and one writer, after a single-key
GroupByKey, stores them at the end. A killed Lite run keeps its staging
files; the rerun embeds only the passages neither stored nor staged.
"""

import contextlib
import dataclasses
import gzip
import importlib
import multiprocessing
import os
import zlib

from bert_tf.beam import staging
from bert_tf.beam.dual_encoder_handler import DualEncoderHandler
from bert_tf.beam.runner_options import import_beam
from bert_tf.beam.runner_options import new_pipeline
from bert_tf.beam.runner_options import run_to_end
from bert_tf.beam.sharded_output import check_writable
from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.retrieval.indexing import INDEX_CHUNK
from bert_tf.retrieval.indexing import PassageSplitter
from bert_tf.retrieval.indexing import stored_passages_of
from bert_tf.retrieval.indexing import write_passages

beam = import_beam()

# Characters of passage text per length group (the embedding's batches).
LENGTH_BUCKET = 128
_COUNTERS = ("documents", "embedded", "kept", "removed", "staged")


@dataclasses.dataclass(frozen=True)
class TowerFacts:
    """What the store checks of the towers: dimension and fingerprint."""

    embedding_dim: int
    model_fingerprint: str

    def fingerprint(self):
        return self.model_fingerprint


def _counter(name):
    return beam.metrics.Metrics.counter(__name__, name)


def corpus_files(data_dir, corpus_file=None):
    """The corpus's files: ``corpus_file``'s globs (comma-separated), or
    ``data_dir/corpus.jsonl``."""
    from apache_beam.io.filesystems import FileSystems

    if not corpus_file:
        return [FileSystems.join(data_dir, beir.CORPUS_FILE)]
    files = []
    for pattern in corpus_file.split(","):
        if not pattern:
            continue
        matches = [m.path for m in FileSystems.match([pattern])[0].metadata_list]
        if not matches:
            raise UserInputError(f"corpus_file={pattern}: matches no file")
        files.extend(sorted(matches))
    return files


def _documents(path):
    """The `beir.Document`s of one JSON-lines file (gzip when it ends in .gz);
    a bad line is an error naming file:line, as ``read_corpus``."""
    from apache_beam.io.filesystems import FileSystems

    raw = FileSystems.open(path, compression_type="uncompressed")
    number = 0
    try:
        with gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw as f:
            for number, obj in beir.json_objects(f, path):
                document = beir.corpus_document(obj, f"{path}:{number}")
                if not document.id:
                    raise UserInputError(f"{path}:{number}: empty '_id'")
                yield document
    except (EOFError, gzip.BadGzipFile, zlib.error) as error:
        raise UserInputError(
            f"{path}: not a whole gzip file, cut or corrupt after line {number} "
            f"({error})"
        ) from None


class _Passages(beam.DoFn):
    """Document → its passages, cut by the one-process `PassageSplitter`;
    the side input: the corpus's ids a passage id could equal."""

    def __init__(self, split):
        self._split = split
        self._documents = _counter("documents")

    def process(self, document, taken):
        self._documents.inc()
        yield from self._split({document.id: document}, taken)


class _Changes(beam.DoFn):
    """(id, {corpus: passages, stored: rows, staged: rows}) → the passage to
    embed; the id to delete (tagged "removed"); the row to store from a
    staging file (tagged "staged"). Unchanged passages are only counted."""

    def __init__(self, corpus):
        self._corpus = corpus
        self._kept = _counter("kept")
        self._removed = _counter("removed")
        self._staged = _counter("staged")

    def process(self, joined):
        passage_id, groups = joined
        passages, stored = list(groups["corpus"]), list(groups["stored"])
        if len(passages) > 1:
            raise UserInputError(
                f"{self._corpus}: passage id {passage_id!r} comes from "
                f"{len(passages)} documents (a document id given twice?)"
            )
        if not passages:
            if stored:
                self._removed.inc()
                yield beam.pvalue.TaggedOutput("removed", passage_id)
            return
        row = stored_passages_of(passages)[0]
        if stored and stored[0].key == row.key:
            self._kept.inc()
        elif row in groups["staged"]:
            self._staged.inc()
            yield beam.pvalue.TaggedOutput("staged", row)
        else:
            yield passages[0]


class _StoreWriter(beam.DoFn):
    """Opens the collection the driver created or emptied."""

    def __init__(self, options, facts, output_dir):
        self._options = dataclasses.replace(options, overwrite_index=False)
        self._facts = facts
        self._output_dir = output_dir
        self._embedded = _counter("embedded")

    def _open(self):
        from bert_tf.tasks.retrieval import open_store

        return open_store(self._options, self._facts, self._output_dir)


class _WriteBatch(_StoreWriter):
    """A server's parallel writers: one batch of ("upsert", (passage,
    vector)) | ("delete", id); not flushed (the driver flushes at the end)."""

    def setup(self):
        self._store = self._open()

    def process(self, batch):
        upserts = [item for kind, item in batch if kind == "upsert"]
        deletes = [item for kind, item in batch if kind == "delete"]
        if deletes:
            self._store.delete(deletes)
        if upserts:
            write_passages(self._store, *zip(*upserts, strict=True))
            self._embedded.inc(len(upserts))

    def teardown(self):
        store = getattr(self, "_store", None)
        if store is not None:
            store.close()


class _Stage(beam.DoFn):
    """A batch of embedded passages → one staging file; yields ("file", path)."""

    def __init__(self, directory, fingerprint):
        self._directory = directory
        self._fingerprint = fingerprint
        self._embedded = _counter("embedded")

    def process(self, results):
        passages = [result.example for result in results]
        vectors = [result.inference for result in results]
        path = staging.write_staged(
            self._directory, self._fingerprint, passages, vectors
        )
        self._embedded.inc(len(passages))
        yield "file", path


class _WriteStaged(_StoreWriter):
    """A Milvus Lite file's one writer, after one GroupByKey of ("file",
    path) | ("staged", row) | ("delete", id): deletes the ids, stores every
    passage of this run's staging files and the staged rows of earlier runs'
    that the corpus still has, each once; then deletes the staging files."""

    def __init__(self, options, facts, output_dir, directory):
        super().__init__(options, facts, output_dir)
        self._directory = directory

    def process(self, keyed):
        _, items = keyed
        wanted = {"file": set(), "staged": set(), "delete": set()}
        for kind, item in items:
            wanted[kind].add(item)
        written = set()
        with self._open() as store:
            if wanted["delete"]:
                store.delete(sorted(wanted["delete"]))
            for path in staging.staged_files(self._directory):
                passages, vectors = staging.read_staged(path)
                new = path in wanted["file"]
                keep = [
                    i
                    for i, row in enumerate(stored_passages_of(passages))
                    if (new or row in wanted["staged"]) and row.id not in written
                ]
                if keep:
                    write_passages(store, [passages[i] for i in keep], vectors[keep])
                    written.update(passages[i].id for i in keep)
        staging.delete_staged(self._directory)


def _longest_first(keyed):
    return sorted(keyed[1], key=lambda passage: -len(passage.text))


def _upsert(result):
    return "upsert", (result.example, result.inference)


def build(pipeline, files, run, options, facts, stored, split, staged=()):
    """Adds the stages to `pipeline` (see the module doc).

    Args:
      files: the corpus files.
      run, options: `RunOptions`, `RetrievalOptions`.
      facts: the towers' `TowerFacts`.
      stored: {passage id: `StoredPassage`} already in the store.
      split: the `PassageSplitter` of the document tower.
      staged: the `StoredPassage` rows of a Milvus Lite run's staging files.
    """
    from apache_beam.ml.inference.base import RunInference

    from bert_tf.retrieval.milvus_connection import is_server

    documents = (
        pipeline
        | "CorpusFiles" >> beam.Create(files)
        | "Documents" >> beam.FlatMap(_documents)
        | "SpreadDocuments" >> beam.Reshuffle()
    )
    # Only a document id with the separator can equal a passage's id.
    taken = (
        documents
        | "IdsWithSeparator" >> beam.Filter(lambda d: beir.PASSAGE_SEPARATOR in d.id)
        | "TakenIds" >> beam.Map(lambda d: d.id)
    )
    passages = (
        documents
        | "Passages" >> beam.ParDo(_Passages(split), beam.pvalue.AsList(taken))
        | "KeyPassages" >> beam.Map(lambda passage: (passage.id, passage))
    )
    rows = pipeline | "StoredRows" >> beam.Create(sorted(stored.items()))
    staged_rows = pipeline | "StagedRows" >> beam.Create([(r.id, r) for r in staged])
    changes = (
        {"corpus": passages, "stored": rows, "staged": staged_rows}
        | "JoinById" >> beam.CoGroupByKey()
        | "Changes"
        >> beam.ParDo(_Changes(",".join(files))).with_outputs(
            "removed", "staged", main="embed"
        )
    )
    embedded = changes.embed | "Embed" >> RunInference(DualEncoderHandler(run, options))
    deletes = changes.removed | "Deletes" >> beam.Map(lambda pid: ("delete", pid))
    writer_args = (options, facts, run.output_dir)
    if is_server(options.uri(run.output_dir)):
        # Written in the stage that embeds them, batch by batch, so a killed
        # run keeps every batch written: a Flatten of the upserts and the
        # deletes made the local runner (FnApiRunner) store nothing until
        # every passage was embedded (its inputs are materialized first).
        written = (
            embedded
            | "Rows" >> beam.Map(_upsert)
            # Whole embedding batches (Beam's adaptive batching would start
            # at one row a request).
            | "WriteBatches"
            >> beam.BatchElements(
                min_batch_size=INDEX_CHUNK, max_batch_size=INDEX_CHUNK
            )
            | "ParallelWriters" >> beam.ParDo(_WriteBatch(*writer_args))
        )
        deleted = (
            deletes
            | "DeleteBatches" >> beam.BatchElements(max_batch_size=INDEX_CHUNK)
            | "Deleters" >> beam.ParDo(_WriteBatch(*writer_args))
        )
        return written, deleted
    directory = _staging_dir(run, options, facts)
    staged_files = (
        embedded
        | "StagingBatches"
        >> beam.BatchElements(min_batch_size=INDEX_CHUNK, max_batch_size=INDEX_CHUNK)
        | "Stage" >> beam.ParDo(_Stage(directory, facts.fingerprint()))
    )
    restaged = changes.staged | "Restaged" >> beam.Map(lambda row: ("staged", row))
    return (
        (staged_files, restaged, deletes)
        | "AllChanges" >> beam.Flatten()
        | "OneKey" >> beam.Map(lambda item: (0, item))
        | "ToOneWriter" >> beam.GroupByKey()
        | "LiteWriter" >> beam.ParDo(_WriteStaged(*writer_args, directory))
    )


def _staging_dir(run, options, facts):
    return staging.staging_dir(
        run.output_dir, options.milvus_collection, facts.fingerprint()
    )


def _prepare_store(options, facts, output_dir):
    """Opens (creates, or empties with overwrite_index) the collection, checks
    its model and index, and returns its stored passages."""
    from bert_tf.tasks.retrieval import open_store

    with open_store(options, facts, output_dir) as store:
        return store.stored_passages()


def _claim_server_store(options, facts, output_dir, stack):
    """A server's collection: opened (created, or emptied with
    overwrite_index), claimed for this run until `stack` closes (`IndexLock`:
    a second run at once is refused), and its stored passages read once
    claimed."""
    from bert_tf.retrieval.index_lock import IndexLock
    from bert_tf.tasks.retrieval import open_store

    if options.overwrite_index:
        # Not dropped under another run's writers.
        IndexLock(options.uri(output_dir), options.milvus_collection).check_free()
    with open_store(options, facts, output_dir) as store:
        stack.enter_context(IndexLock.of_store(store))
        return store.stored_passages()


def run_pipeline(run, options, runner, beam_options=""):
    """--do_index on a Beam runner; returns {"embedded", "kept", "removed",
    "staged", "documents"} counts ("staged": stored from an earlier killed
    run's staging files, not embedded again).

    Args:
      run, options: `RunOptions` (output_dir, init_checkpoint,
        max_seq_length) and `RetrievalOptions` (data_dir or corpus_file,
        passages, Milvus), as run_retrieval.py makes them.
      runner, beam_options: see ``runner_options.pipeline_options``.
    """
    from bert_tf.retrieval.milvus_connection import is_server
    from bert_tf.tasks.retrieval import load_dual_encoder

    check_writable("output_dir", os.path.join(run.output_dir, "index"))
    uri = options.uri(run.output_dir)
    # A new Lite file has nothing to read or check: the writer creates it.
    lite = not is_server(uri)
    read_lite = lite and os.path.exists(uri)
    # A server's collection stays claimed from before its rows are read
    # until the last one is checked.
    with contextlib.ExitStack() as claimed:
        with contextlib.ExitStack() as stack:
            if read_lite:
                # This process must not hold the Lite file (the pipeline's
                # writer opens it): a child reads it, and imports what it
                # needs while this process loads the towers.
                reader = stack.enter_context(
                    multiprocessing.get_context("spawn").Pool(
                        1,
                        initializer=importlib.import_module,
                        initargs=("bert_tf.tasks.retrieval",),
                    )
                )
            towers = load_dual_encoder(run, options)
            facts = TowerFacts(int(towers.embedding_dim), towers.fingerprint())
            split = PassageSplitter(
                towers.document_encoder.preprocessor,
                options.passage_length,
                options.passage_stride,
            )
            del towers
            files = corpus_files(options.data_dir, options.corpus_file)
            if "://" not in run.output_dir:
                # Where the default --milvus_uri (<output_dir>/index.db) lives.
                os.makedirs(run.output_dir, exist_ok=True)
            stored, staged = {}, []
            if read_lite:
                stored = reader.apply(_prepare_store, (options, facts, run.output_dir))
            elif not lite:
                stored = _claim_server_store(options, facts, run.output_dir, claimed)
            if lite:
                staged = staging.staged_passages(_staging_dir(run, options, facts))
        pipeline = new_pipeline(runner, beam_options)
        build(pipeline, files, run, options, facts, stored, split, staged)
        result = run_to_end(pipeline, run.output_dir)
        from apache_beam.metrics.metric import MetricsFilter

        counts = dict.fromkeys(_COUNTERS, 0)
        query = result.metrics().query(MetricsFilter().with_namespace(__name__))
        for counter in query["counters"]:
            counts[counter.key.metric.name] += counter.committed or 0
        _record_index(run, options, facts.model_fingerprint, counts)
    return counts


def _record_index(run, options, fingerprint, counts):
    """Seals the rows (a server's writers do not flush: `MilvusRows`), checks
    that the collection holds each of the corpus's passages (kept, embedded
    or staged: nothing lost silently), and records what a search of the
    index reads, as the one-process --do_index records it
    (`bert_tf.retrieval.search_index.record_index`)."""
    from bert_tf.retrieval.milvus_store import MilvusStore
    from bert_tf.retrieval.search_index import record_index
    from bert_tf.tasks.retrieval import index_settings

    uri = options.uri(run.output_dir)
    with MilvusStore.existing(uri, options.milvus_collection) as store:
        store.flush()
        expected = counts["kept"] + counts["embedded"] + counts["staged"]
        rows = len(store)
        if rows != expected:
            raise UserInputError(
                f"milvus_uri={uri} collection {options.milvus_collection!r}: "
                f"holds {rows} rows after the run, the corpus has {expected} "
                "passages (did another writer change the collection meanwhile?); "
                "rerun the same command to store what is missing",
                argument={"milvus_uri": "milvus_uri"},
            )
        record_index(run.output_dir, index_settings(run, options, fingerprint), store)
