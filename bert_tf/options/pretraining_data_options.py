"""What create_pretraining_data is asked to write: from which text, how, where."""

import dataclasses

from bert_tf.data_prep import pretraining
from bert_tf.options.beam_options import BeamOptions
from bert_tf.options.option import fields_by_name
from bert_tf.options.option import option
from bert_tf.options.option import same_as
from bert_tf.options.run_options import RunOptions

_GENERATION = fields_by_name(pretraining.GenerationOptions)


def _generation_option(name, help):  # noqa: A002  (absl's name for it)
    """`GenerationOptions.name` as a flag: its default, this help."""
    return option(_GENERATION[name].default, help)


@dataclasses.dataclass(frozen=True)
class PretrainingDataOptions:
    """create_pretraining_data's flags (the original's, then the sharded mode's).

    Args:
      input_file, output_file: comma-separated lists of files.
      vocab_file, do_lower_case: the tokenizer.
      do_whole_word_mask ... short_seq_prob: `pretraining.GenerationOptions`.
      num_workers, shard_size_mb, num_tasks, task_index: the sharded mode.
      beam: the Beam runner, if any (`BeamOptions`).

    Example:

    ```python
    PretrainingDataOptions("sample_text.txt", "/tmp/out.tfrecord", "vocab.txt")
    ```
    """

    input_file: str = option(
        help="Input raw text file (or comma-separated list of files)."
    )
    output_file: str = option(
        help="Output TF example file (or comma-separated list of files)."
    )
    vocab_file: str | None = same_as(RunOptions, "vocab_file")
    do_lower_case: bool | None = same_as(RunOptions, "do_lower_case")
    do_whole_word_mask: bool = _generation_option(
        "do_whole_word_mask",
        "Whether to use whole word masking rather than per-WordPiece masking.",
    )
    max_seq_length: int = _generation_option(
        "max_seq_length", "Maximum sequence length."
    )
    max_predictions_per_seq: int = _generation_option(
        "max_predictions_per_seq",
        "Maximum number of masked LM predictions per sequence.",
    )
    random_seed: int = _generation_option(
        "random_seed", "Random seed for data generation."
    )
    dupe_factor: int = _generation_option(
        "dupe_factor",
        "Number of times to duplicate the input data (with different masks).",
    )
    masked_lm_prob: float = _generation_option(
        "masked_lm_prob", "Masked LM probability."
    )
    short_seq_prob: float = _generation_option(
        "short_seq_prob",
        "Probability of creating sequences which are shorter than the maximum length.",
    )
    num_workers: int = option(
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
    shard_size_mb: float | None = option(
        None,
        "Sharded mode: a shard ends at the first document end after this many MiB "
        "of input text (a document is never split; each input file starts a new "
        f"shard). Default: {pretraining.DEFAULT_SHARD_SIZE_MB:g} when "
        "--num_workers>1. Giving it selects the sharded mode even with "
        "--num_workers=1 (bounded memory on one core). The records depend on it "
        "(and on random_seed and the input), not on num_workers.",
        lower_bound=0.0,
    )
    num_tasks: int = option(
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
    task_index: int = option(
        0,
        "This machine's task, 0 <= task_index < num_tasks (e.g. "
        "$SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX).",
        lower_bound=0,
    )
    beam: BeamOptions = BeamOptions()

    def generation(self):
        """The generation settings (`pretraining.GenerationOptions`), checked."""
        return pretraining.GenerationOptions(
            **{name: getattr(self, name) for name in _GENERATION}
        )
