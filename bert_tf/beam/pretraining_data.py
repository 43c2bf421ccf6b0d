"""create_pretraining_data's sharded mode as a Beam pipeline.

The input is cut into the shards of the sharded mode (``iter_shard_spans``: runs
of whole documents of one file) and each shard becomes records with
``ShardProcessor``, seeded by ``shard_seed(random_seed, shard index)``: the
functions ``--num_workers`` and ``--num_tasks`` use. The records are therefore
those of the one-machine sharded run for the same flags and seed, whatever the
runner and the number of its workers; only their order over the output shards
differs (a TFRecord reader shuffles them anyway).

Stages: each input file is read once to count its shards (in parallel over
files), then again to emit its shards with their global index (the shards of
the files before it, from the counts, plus its own position); shards are
redistributed over the workers, turned into records, and written as
``<output_file>-SSSSS-of-NNNNN``.
"""

import dataclasses

from bert_tf.beam.runner_options import import_beam
from bert_tf.beam.runner_options import new_pipeline
from bert_tf.beam.runner_options import run_to_end
from bert_tf.beam.sharded_output import ReplaceShards
from bert_tf.beam.sharded_output import check_writable
from bert_tf.data_prep.pretraining.documents import checked_tokenizer
from bert_tf.data_prep.pretraining.documents import iter_shard_spans
from bert_tf.data_prep.pretraining.sharded import DEFAULT_SHARD_SIZE_MB
from bert_tf.data_prep.pretraining.sharded import ShardProcessor
from bert_tf.errors import UserInputError
from bert_tf.options.input_overwrite_check import check_outputs_are_not_inputs

beam = import_beam()

# Names of the pipeline's counters (namespace: this module).
_COUNTERS = ("shards", "documents", "empty_documents", "records")


def _shard_count(indexed_path, shard_size_mb):
    file_index, path = indexed_path
    return file_index, sum(1 for _ in iter_shard_spans([path], shard_size_mb))


def _indexed_shards(indexed_path, shard_size_mb, counts):
    """(global shard index, lines) of one file's shards.

    A file's shards are those of ``iter_shard_spans`` over all files (each
    file starts a new shard), numbered after the shards of the files before it.
    """
    file_index, path = indexed_path
    first = sum(count for index, count in counts.items() if index < file_index)
    for local_index, (_, lines) in enumerate(iter_shard_spans([path], shard_size_mb)):
        yield first + local_index, lines


class _ShardRecords(beam.DoFn):
    """(shard index, lines) → the shard's serialized records."""

    def __init__(self, vocab_file, do_lower_case, options):
        self._args = (vocab_file, do_lower_case, options)
        self._counters = {
            name: beam.metrics.Metrics.counter(__name__, name) for name in _COUNTERS
        }

    def setup(self):
        self._process = ShardProcessor(*self._args)

    def process(self, shard):
        shard_index, lines = shard
        records, num_documents, num_dropped = self._process.records(shard_index, lines)
        self._counters["shards"].inc()
        self._counters["documents"].inc(num_documents)
        self._counters["empty_documents"].inc(num_dropped)
        self._counters["records"].inc(len(records))
        yield from records


@dataclasses.dataclass
class PipelineStats:
    """What the pipeline did (its counters).

    Attributes:
      shards, documents, empty_documents, records: as ``ShardedRunStats``.
    """

    shards: int = 0
    documents: int = 0
    empty_documents: int = 0
    records: int = 0


def build(
    pipeline,
    input_files,
    output_file,
    vocab_file,
    do_lower_case,
    options,
    shard_size_mb=DEFAULT_SHARD_SIZE_MB,
    num_output_shards=0,
):
    """Adds the pipeline's stages to `pipeline` (see the module doc)."""
    files = pipeline | "InputFiles" >> beam.Create(list(enumerate(input_files)))
    counts = files | "CountShards" >> beam.Map(_shard_count, shard_size_mb)
    shards = (
        files
        | "CutShards"
        >> beam.FlatMap(
            _indexed_shards, shard_size_mb, counts=beam.pvalue.AsDict(counts)
        )
        # One file's shards come from one reader: spread them over the workers.
        | "SpreadShards" >> beam.Reshuffle()
    )
    written = (
        shards
        | "Records" >> beam.ParDo(_ShardRecords(vocab_file, do_lower_case, options))
        | "Write" >> beam.io.WriteToTFRecord(output_file, num_shards=num_output_shards)
    )
    written | "OnlyTheseShards" >> ReplaceShards(output_file)
    return written


def run_pipeline(
    input_files,
    output_file,
    vocab_file,
    do_lower_case,
    options,
    runner,
    beam_options="",
    shard_size_mb=None,
    num_output_shards=0,
):
    """Runs the pipeline to the end; returns ``PipelineStats``.

    Args:
      input_files: list of text files (see ``expand_input_files``).
      output_file: prefix of the output shards (``-SSSSS-of-NNNNN`` added).
      vocab_file, do_lower_case: as ``create_pretraining_data``; the vocab
        file must be readable by the workers (e.g. on gs:// for Dataflow).
      options: a ``GenerationOptions``.
      runner, beam_options: see ``runner_options.pipeline_options``.
      shard_size_mb: the sharded mode's shard size (default
        ``DEFAULT_SHARD_SIZE_MB``); the records depend on it, as there.
      num_output_shards: output files (0: the runner decides).

    Raises:
      UserInputError: no document in the input, or a bad vocabulary.
    """
    if shard_size_mb is None:
        shard_size_mb = DEFAULT_SHARD_SIZE_MB
    if not shard_size_mb > 0:
        raise UserInputError(f"shard_size_mb must be > 0, got {shard_size_mb}")
    if num_output_shards < 0:
        raise UserInputError(f"num_output_shards must be >= 0, got {num_output_shards}")
    check_outputs_are_not_inputs(
        [("output_file", output_file)],
        [("input_file", input_files), ("vocab_file", [vocab_file])],
    )
    checked_tokenizer(vocab_file, do_lower_case)  # the workers build their own
    check_writable("output_file", output_file)
    pipeline = new_pipeline(runner, beam_options)
    build(
        pipeline,
        input_files,
        output_file,
        vocab_file,
        do_lower_case,
        options,
        shard_size_mb,
        num_output_shards,
    )
    result = run_to_end(pipeline, output_file)
    stats = PipelineStats(**_counter_values(result))
    if stats.documents == 0:
        raise UserInputError(
            f"no document with any token in the input: {', '.join(input_files)}"
        )
    return stats


def _counter_values(result):
    from apache_beam.metrics.metric import MetricsFilter

    values = dict.fromkeys(_COUNTERS, 0)
    query = result.metrics().query(MetricsFilter().with_namespace(__name__))
    for counter in query["counters"]:
        values[counter.key.metric.name] += counter.committed or 0
    return values
