"""What identifies a training run, and a rerun with other settings stopped
before TensorFlow loads.

A --do_train run records its settings in output_dir/run_settings.json
(`bert_tf.training.output_dir.RunSettings`); a rerun with other settings
stops with the differences instead of resuming someone else's run. All of
those settings that the flags and the file system give (the run-defining
options, the vocabulary's and the training files' fingerprints, a
--bert_config_file) are compared here, from the parsed options, in a
fraction of a second; what needs the model (a checkpoint's own config) or
parsed examples (run_classifier's) is compared again after it loads.
"""

from bert_tf.config import BertConfig
from bert_tf.data_prep.fingerprints import file_fingerprint
from bert_tf.options.checks import run_defining
from bert_tf.options.run_options import RunOptions
from bert_tf.training.output_dir import RunSettings

# Tools whose model reads its own config from the checkpoint (a
# sentence-transformers directory): their run records the model's config,
# known only once it loads.
_OWN_CONFIG_SCRIPTS = ("run_similarity", "run_retrieval")


def run_settings(script, run, task_settings, config=None, data=None):
    """What defines a training run, as run_settings.json records it.

    Args:
      script: the tool, e.g. "run_classifier".
      run: the `RunOptions`.
      task_settings: the task's run-defining options (`{name: value}`).
      config: the model's `BertConfig` (None: not part of the result).
      data: the training data's fingerprints (None: not part of the result).

    Example:
    >>> run_settings("run_squad", run, run_defining(squad_options), config, data)
    """
    settings = {"script": script}
    if config is not None:
        settings["bert_config"] = config.to_dict()
    settings.update(run_defining(run))
    settings.update(task_settings)
    if run.vocab_file:
        settings["vocab"] = file_fingerprint(run.vocab_file)
    if data is not None:
        settings["data"] = list(data)
    return settings


def stop_if_other_run(script, run, options=None, *_):
    """Before TensorFlow loads: `UserInputError` with the differences when
    `run` trains in an output_dir whose recorded run has other settings.

    Args:
      script: the tool, e.g. "run_classifier".
      run: the `RunOptions` (anything else: nothing to check).
      options: the task's options; its `training_fingerprints(run)`, where
        it has one, gives the training data's fingerprints.

    Example:
    >>> stop_if_other_run("run_classifier", run, classifier_options)
    """
    if not isinstance(run, RunOptions) or not run.do_train:
        return
    if run.training.overwrite_output_dir:
        return
    if any("://" in str(path or "") for path in (run.output_dir, run.vocab_file)):
        return  # read with TensorFlow: compared after it loads
    record = RunSettings(run.output_dir, {})
    recorded = record.recorded()
    if recorded is None:
        return
    task_settings = run_defining(options) if options is not None else {}
    settings = run_settings(
        script,
        run,
        task_settings,
        config=_flag_config(script, run),
        data=_training_fingerprints(run, options),
    )
    if run.vocab_file is None:
        # The task takes the checkpoint's own vocabulary, named after it loads.
        settings.pop("vocab_file", None)
    compared = {name: recorded[name] for name in settings if name in recorded}
    RunSettings(run.output_dir, settings).stop_if_changed(compared)


def _flag_config(script, run):
    """The --bert_config_file the run reads (None: the checkpoint's own)."""
    path = run.bert_config_file
    if not path or "://" in path or script in _OWN_CONFIG_SCRIPTS:
        return None
    return BertConfig.from_json_file(path)


def _training_fingerprints(run, options):
    fingerprints = getattr(options, "training_fingerprints", None)
    return fingerprints(run) if fingerprints is not None else None
