r"""Create masked LM/next sentence masked_lm TF examples for BERT.

The original create_pretraining_data.py: every flag keeps its name, default
and meaning, and with the default ``--num_workers=1`` (and no
``--shard_size_mb``) the records are those of the original for the same inputs
and seed. ``--num_workers=N`` / ``--shard_size_mb`` add sharded, streaming
generation (shards of whole documents, memory bounded by the shard size, not by
the corpus); ``--num_tasks=N --task_index=i`` writes task i's part of that
sharded output, so N machines together write, byte for byte, what one machine
writes (see ``data_prep/pretraining/sharded.py``). TensorFlow is not imported
for local files.

    python create_pretraining_data.py \
      --input_file=./sample_text.txt --output_file=/tmp/tf_examples.tfrecord \
      --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True \
      --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
      --random_seed=12345 --dupe_factor=5

Installed as `bert-tf-create-pretraining-data`; also
`python -m bert_tf.cli.create_pretraining_data` and `python create_pretraining_data.py`.
"""

from absl import flags

from bert_tf.cli import flags as common_flags
from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.data_prep import pretraining
from bert_tf.options.run_options import RunOptions

ORIGINAL_FLAGS = (
    "input_file",
    "output_file",
    "vocab_file",
    "do_lower_case",
    "do_whole_word_mask",
    "max_seq_length",
    "max_predictions_per_seq",
    "random_seed",
    "dupe_factor",
    "masked_lm_prob",
    "short_seq_prob",
)


def define_flags():
    """The original create_pretraining_data.py flags, then the sharded mode's."""
    flags.DEFINE_string(
        "input_file",
        None,
        "Input raw text file (or comma-separated list of files).",
    )
    flags.DEFINE_string(
        "output_file",
        None,
        "Output TF example file (or comma-separated list of files).",
    )
    OptionFlags(RunOptions, layout=("vocab_file", "do_lower_case")).define(__name__)
    flags.DEFINE_bool(
        "do_whole_word_mask",
        False,
        "Whether to use whole word masking rather than per-WordPiece masking.",
    )
    flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
    flags.DEFINE_integer(
        "max_predictions_per_seq",
        20,
        "Maximum number of masked LM predictions per sequence.",
    )
    flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
    flags.DEFINE_integer(
        "dupe_factor",
        10,
        "Number of times to duplicate the input data (with different masks).",
    )
    flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
    flags.DEFINE_float(
        "short_seq_prob",
        0.1,
        "Probability of creating sequences which are shorter than the maximum length.",
    )
    flags.DEFINE_integer(
        "num_workers",
        1,
        "Worker processes. 1 (without --shard_size_mb) = the original's algorithm "
        "over the whole corpus, held in memory, same records as the original. >1 = "
        "sharded and streaming: the input is cut into shards of whole documents "
        "(see --shard_size_mb), each processed on its own in a worker with an RNG "
        "derived from (random_seed, shard index); random next segments and the "
        "shuffle stay within a shard; at most num_workers shards are in memory, "
        "so memory does not grow with the corpus. The records do not depend on "
        "the number of workers.",
        lower_bound=1,
    )
    flags.DEFINE_float(
        "shard_size_mb",
        None,
        "Sharded mode: a shard ends at the first document end after this many MiB "
        "of input text (a document is never split; each input file starts a new "
        f"shard). Default: {pretraining.DEFAULT_SHARD_SIZE_MB:g} when "
        "--num_workers>1. Giving it selects the sharded mode even with "
        "--num_workers=1 (bounded memory on one core). The records depend on it "
        "(and on random_seed and the input), not on num_workers.",
        lower_bound=0.0,
    )
    flags.DEFINE_integer(
        "num_tasks",
        1,
        "Divide the sharded run between this many machines (Slurm array tasks, "
        "Kubernetes indexed jobs, ...), each started with its own --task_index and "
        "the same other flags. Task i writes the shards that start in the i-th "
        "num_tasks-th of the input bytes to each --output_file path suffixed "
        "'-<i:05d>-of-<num_tasks:05d>'; the tasks' files concatenated in task "
        "order equal the one-machine sharded output, and '<output_file>-*' globs "
        "them for run_pretraining.py --input_file. Implies the sharded mode.",
        lower_bound=1,
    )
    flags.DEFINE_integer(
        "task_index",
        0,
        "This machine's task, 0 <= task_index < num_tasks (e.g. "
        "$SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX).",
        lower_bound=0,
    )
    # --- flags added for issue 44 ---
    common_flags.define_beam_flags()


def run(flags_obj):
    """Writes the pre-training records (TensorFlow only for non-local paths)."""
    beam = common_flags.beam_options(flags_obj)
    if beam.uses_beam:
        return _run_beam(flags_obj, beam)
    pretraining.release_large_blocks_to_os()
    pretraining.create_pretraining_data(
        input_files=pretraining.expand_input_files(flags_obj.input_file),
        output_files=flags_obj.output_file.split(","),
        vocab_file=flags_obj.vocab_file,
        do_lower_case=flags_obj.do_lower_case,
        **_generation_flags(flags_obj),
        num_workers=flags_obj.num_workers,
        shard_size_mb=flags_obj.shard_size_mb,
        num_tasks=flags_obj.num_tasks,
        task_index=flags_obj.task_index,
    )


def _generation_flags(flags_obj):
    """The original's generation flags: `GenerationOptions`' fields."""
    return {
        name: flags_obj[name].value
        for name in pretraining.GenerationOptions.__dataclass_fields__
    }


def _run_beam(flags_obj, beam):
    """The sharded mode as a Beam pipeline (bert_tf.beam.pretraining_data)."""
    from absl import logging

    from bert_tf.beam import pretraining_data
    from bert_tf.errors import UserInputError

    if flags_obj.num_tasks != 1 or flags_obj.num_workers != 1:
        raise UserInputError(
            "--runner: the runner divides the work; give its workers in "
            "--beam_options instead of --num_workers/--num_tasks"
        )
    if "," in flags_obj.output_file:
        raise UserInputError(
            f"--output_file={flags_obj.output_file}: with --runner one path, the "
            "prefix of the output shards (<output_file>-SSSSS-of-NNNNN)"
        )
    stats = pretraining_data.run_pipeline(
        input_files=pretraining.expand_input_files(flags_obj.input_file),
        output_file=flags_obj.output_file,
        vocab_file=flags_obj.vocab_file,
        do_lower_case=flags_obj.do_lower_case,
        options=pretraining.GenerationOptions(**_generation_flags(flags_obj)),
        runner=beam.runner,
        beam_options=beam.beam_options,
        shard_size_mb=flags_obj.shard_size_mb,
    )
    logging.info(
        "Read %d documents (%d empty documents dropped) in %d shards; wrote %d "
        "total instances to %s-*",
        stats.documents,
        stats.empty_documents,
        stats.shards,
        stats.records,
        flags_obj.output_file,
    )
    return stats.records


COMMAND = Command(
    "create_pretraining_data",
    __doc__,
    define_flags,
    run,
    ORIGINAL_FLAGS,
    required=("input_file", "output_file", "vocab_file"),
    # TensorFlow is imported only for gs:// and other non-local paths.
    uses_tensorflow=False,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
