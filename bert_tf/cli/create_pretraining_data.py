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
"""

import dataclasses

from bert_tf.cli.command import Command
from bert_tf.cli.flags import OptionFlags
from bert_tf.data_prep import pretraining
from bert_tf.options.pretraining_data_options import PretrainingDataOptions


def run(options):
    """Writes the pre-training records (TensorFlow only for non-local paths)."""
    if options.beam.uses_beam:
        return _run_beam(options)
    pretraining.release_large_blocks_to_os()
    pretraining.create_pretraining_data(
        input_files=pretraining.expand_input_files(options.input_file),
        output_files=options.output_file.split(","),
        vocab_file=options.vocab_file,
        do_lower_case=options.do_lower_case,
        **dataclasses.asdict(options.generation()),
        num_workers=options.num_workers,
        shard_size_mb=options.shard_size_mb,
        num_tasks=options.num_tasks,
        task_index=options.task_index,
    )


def _run_beam(options):
    """The sharded mode as a Beam pipeline (bert_tf.beam.pretraining_data)."""
    from absl import logging

    from bert_tf.beam import pretraining_data
    from bert_tf.errors import UserInputError

    if options.num_tasks != 1 or options.num_workers != 1:
        raise UserInputError(
            "--runner: the runner divides the work; give its workers in "
            "--beam_options instead of --num_workers/--num_tasks"
        )
    if "," in options.output_file:
        raise UserInputError(
            f"--output_file={options.output_file}: with --runner one path, the "
            "prefix of the output shards (<output_file>-SSSSS-of-NNNNN)"
        )
    stats = pretraining_data.run_pipeline(
        input_files=pretraining.expand_input_files(options.input_file),
        output_file=options.output_file,
        vocab_file=options.vocab_file,
        do_lower_case=options.do_lower_case,
        options=options.generation(),
        runner=options.beam.runner,
        beam_options=options.beam.beam_options,
        shard_size_mb=options.shard_size_mb,
    )
    logging.info(
        "Read %d documents (%d empty documents dropped) in %d shards; wrote %d "
        "total instances to %s-*",
        stats.documents,
        stats.empty_documents,
        stats.shards,
        stats.records,
        options.output_file,
    )
    return stats.records


COMMAND = Command(
    "create_pretraining_data",
    __doc__,
    OptionFlags(PretrainingDataOptions),
    run,
    required=("input_file", "output_file", "vocab_file"),
    # TensorFlow is imported only for gs:// and other non-local paths.
    uses_tensorflow=False,
)


main = COMMAND.main


if __name__ == "__main__":
    main()
