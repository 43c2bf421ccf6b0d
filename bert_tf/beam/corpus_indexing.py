"""run_retrieval.py --do_index as a Beam pipeline: a BEIR corpus into Milvus.

Stages: the corpus files (``data_dir/corpus.jsonl``, or ``corpus_file``:
globs of JSON-lines files, ``.gz`` read as gzip, on any file system Beam
knows) are read in parallel, each document cut into passages by the
one-process path's `PassageSplitter` (the document tower's tokenizer and
settings) and written as its `write_passages` writes them; passages are joined by id with the rows the store already
has (read before the pipeline), and only the new or changed ones go through
``RunInference`` with a ``DualEncoderHandler``; passages no longer in the
corpus are deleted. Rows are upserted by passage id into the collection that
carries the towers' fingerprint, so a rerun embeds only what changed and
nothing is stored twice.

Writers: a Milvus server or cluster (``http://...``) gets one writer per
batch of passages, in parallel; a Milvus Lite file can be opened by one
process only (and stays held by it until it exits), so every row goes
through one single-key GroupByKey to one writer, and the rows stored before
the pipeline are read in a short-lived child process. A Lite run therefore
writes at its end; a killed server run keeps every batch already written.
"""

import dataclasses
import gzip
import multiprocessing
import os

from bert_tf.beam.dual_encoder_handler import INDEX_CHUNK
from bert_tf.beam.dual_encoder_handler import DualEncoderHandler
from bert_tf.beam.runner_options import import_beam
from bert_tf.beam.runner_options import pipeline_options
from bert_tf.data_prep import beir
from bert_tf.errors import UserInputError
from bert_tf.retrieval.indexing import PassageSplitter
from bert_tf.retrieval.indexing import stored_passages_of
from bert_tf.retrieval.indexing import write_passages

beam = import_beam()

_COUNTERS = ("documents", "embedded", "kept", "removed")


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
    with gzip.GzipFile(fileobj=raw) if path.endswith(".gz") else raw as f:
        for number, obj in beir.json_objects(f, path):
            document = beir.corpus_document(obj, f"{path}:{number}")
            if not document.id:
                raise UserInputError(f"{path}:{number}: empty '_id'")
            yield document


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
    """(id, {corpus: passages, stored: rows}) → the passage to embed, or the
    id to delete (tagged "removed"); unchanged passages are only counted."""

    def __init__(self):
        self._kept = _counter("kept")
        self._removed = _counter("removed")

    def process(self, joined):
        passage_id, groups = joined
        passages, stored = list(groups["corpus"]), list(groups["stored"])
        if len(passages) > 1:
            raise UserInputError(
                f"corpus: passage id {passage_id!r} comes from {len(passages)} "
                "documents (a document id given twice?)"
            )
        if not passages:
            self._removed.inc()
            yield beam.pvalue.TaggedOutput("removed", passage_id)
        elif stored and stored[0] == stored_passages_of(passages)[0]:
            self._kept.inc()
        else:
            yield passages[0]


class _StoreWriter(beam.DoFn):
    """Writes to the collection: upserts (passage, vector) pairs and deletes ids."""

    def __init__(self, options, facts, output_dir):
        # The driver created or emptied the collection already.
        self._options = dataclasses.replace(options, overwrite_index=False)
        self._facts = facts
        self._output_dir = output_dir
        self._embedded = _counter("embedded")

    def _open(self):
        from bert_tf.tasks.retrieval import open_store

        return open_store(self._options, self._facts, self._output_dir)

    def _write(self, store, upserts, deletes):
        if deletes:
            store.delete(deletes)
        for start in range(0, len(upserts), INDEX_CHUNK):
            chunk = upserts[start : start + INDEX_CHUNK]
            write_passages(store, [p for p, _ in chunk], [v for _, v in chunk])
            self._embedded.inc(len(chunk))


class _WriteBatch(_StoreWriter):
    """A server's parallel writers: one batch of ("upsert"|"delete", item)."""

    def setup(self):
        self._store = self._open()

    def process(self, batch):
        upserts = [item for kind, item in batch if kind == "upsert"]
        deletes = [item for kind, item in batch if kind == "delete"]
        self._write(self._store, upserts, deletes)

    def teardown(self):
        store = getattr(self, "_store", None)
        if store is not None:
            store.close()


class _WriteAll(_StoreWriter):
    """A Milvus Lite file's one writer: every change, after one GroupByKey."""

    def process(self, keyed):
        _, items = keyed
        upserts, deletes = [], []
        for kind, item in items:
            (upserts if kind == "upsert" else deletes).append(item)
        with self._open() as store:
            self._write(store, upserts, deletes)


def _upsert(result):
    return "upsert", (result.example, result.inference)


def build(pipeline, files, run, options, facts, stored, split):
    """Adds the stages to `pipeline` (see the module doc).

    Args:
      files: the corpus files.
      run, options: `RunOptions`, `RetrievalOptions`.
      facts: the towers' `TowerFacts`.
      stored: {passage id: `StoredPassage`} already in the store.
      split: the `PassageSplitter` of the document tower.
    """
    from apache_beam.ml.inference.base import RunInference

    from bert_tf.retrieval.milvus_store import _is_server

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
    changes = (
        {"corpus": passages, "stored": rows}
        | "JoinById" >> beam.CoGroupByKey()
        | "Changes" >> beam.ParDo(_Changes()).with_outputs("removed", main="embed")
    )
    upserts = (
        changes.embed
        | "Embed" >> RunInference(DualEncoderHandler(run, options))
        | "Rows" >> beam.Map(_upsert)
    )
    deletes = changes.removed | "Deletes" >> beam.Map(lambda pid: ("delete", pid))
    writes = (upserts, deletes) | "AllChanges" >> beam.Flatten()
    writer_args = (options, facts, run.output_dir)
    if _is_server(options.uri(run.output_dir)):
        return (
            writes
            | "WriteBatches" >> beam.BatchElements(max_batch_size=INDEX_CHUNK)
            | "ParallelWriters" >> beam.ParDo(_WriteBatch(*writer_args))
        )
    return (
        writes
        | "OneKey" >> beam.Map(lambda item: (0, item))
        | "ToOneWriter" >> beam.GroupByKey()
        | "LiteWriter" >> beam.ParDo(_WriteAll(*writer_args))
    )


def _prepare_store(options, facts, output_dir):
    """Opens (creates, or empties with overwrite_index) the collection, checks
    its model and index, and returns its stored passages."""
    from bert_tf.tasks.retrieval import open_store

    with open_store(options, facts, output_dir) as store:
        return store.stored_passages()


def run_pipeline(run, options, runner, beam_options=""):
    """--do_index on a Beam runner; returns {"embedded", "kept", "removed",
    "documents"} counts.

    Args:
      run, options: `RunOptions` (output_dir, init_checkpoint,
        max_seq_length) and `RetrievalOptions` (data_dir or corpus_file,
        passages, Milvus), as run_retrieval.py makes them.
      runner, beam_options: see ``runner_options.pipeline_options``.
    """
    from bert_tf.retrieval.milvus_store import _is_server
    from bert_tf.tasks.retrieval import load_dual_encoder

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
    if _is_server(options.uri(run.output_dir)):
        stored = _prepare_store(options, facts, run.output_dir)
    else:
        # This process must not hold the Lite file: the pipeline's writer opens it.
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            stored = pool.apply(_prepare_store, (options, facts, run.output_dir))
    pipeline = beam.Pipeline(options=pipeline_options(runner, beam_options))
    build(pipeline, files, run, options, facts, stored, split)
    result = pipeline.run()
    result.wait_until_finish()
    from apache_beam.metrics.metric import MetricsFilter

    counts = dict.fromkeys(_COUNTERS, 0)
    query = result.metrics().query(MetricsFilter().with_namespace(__name__))
    for counter in query["counters"]:
        counts[counter.key.metric.name] += counter.committed or 0
    return counts
