"""Command-line flags shared by the run_* scripts, defined once, and the
typed options they become.

The original's flags keep their names, defaults and meanings; each script
defines its own task flags and calls the functions here for the rest.
`run_options` turns the shared ones into `bert_tf.options.RunOptions`, whose
checks name the flag at fault (before TensorFlow loads).
"""

from absl import flags

from bert_tf.options.beam_options import BEAM_RUNNERS
from bert_tf.options.beam_options import BeamOptions
from bert_tf.options.distribution_options import STRATEGIES
from bert_tf.options.distribution_options import DistributionOptions
from bert_tf.options.export_options import ExportOptions
from bert_tf.options.run_options import RunOptions
from bert_tf.options.tfds_options import TfdsOptions
from bert_tf.options.training_options import TrainingOptions


def define_tpu_flags():
    """The original's TPU flags (all three run_* scripts)."""
    flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
    flags.DEFINE_string(
        "tpu_name",
        None,
        "The Cloud TPU to use for training. This should be either the name used when "
        "creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 url.",
    )
    flags.DEFINE_string(
        "tpu_zone",
        None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not specified, we "
        "will attempt to automatically detect the GCE project from metadata.",
    )
    flags.DEFINE_string(
        "gcp_project",
        None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not specified, "
        "we will attempt to automatically detect the GCE project from metadata.",
    )
    flags.DEFINE_string("master", None, "[Optional] TensorFlow master URL.")
    flags.DEFINE_integer(
        "num_tpu_cores",
        8,
        "Accepted for compatibility with the original and ignored: TPUStrategy "
        "uses every core of the TPU that --tpu_name/--master names.",
    )


def define_common_flags(max_seq_length, learning_rate=5e-5, train_batch_size=32):
    """Flags every run_* script has, with the script's original defaults."""
    flags.DEFINE_string(
        "bert_config_file",
        None,
        "The config json file corresponding to the pre-trained BERT model. "
        "This specifies the model architecture.",
    )
    flags.DEFINE_string(
        "output_dir",
        None,
        "The output directory where the model checkpoints will be written.",
    )
    flags.DEFINE_string(
        "init_checkpoint",
        None,
        "Initial checkpoint (usually from a pre-trained BERT model): a Google "
        "checkpoint prefix or directory, or a Hugging Face directory.",
    )
    flags.DEFINE_integer(
        "max_seq_length",
        max_seq_length,
        "The maximum total input sequence length after WordPiece tokenization. "
        "Sequences longer than this will be truncated, and sequences shorter than this "
        "will be padded.",
    )
    flags.DEFINE_bool("do_train", False, "Whether to run training.")
    flags.DEFINE_integer(
        "train_batch_size", train_batch_size, "Total batch size for training."
    )
    flags.DEFINE_float(
        "learning_rate", learning_rate, "The initial learning rate for Adam."
    )
    flags.DEFINE_integer(
        "save_checkpoints_steps", 1000, "How often to save the model checkpoint."
    )
    flags.DEFINE_integer(
        "iterations_per_loop",
        1000,
        "With --use_tpu: optimizer steps run per call of the compiled training loop "
        "(fewer host round trips); checkpoints still land every "
        "--save_checkpoints_steps. Without a TPU the loop runs one step per call.",
    )
    define_tpu_flags()
    define_new_flags()


def define_vocab_flags():
    """The original's --vocab_file and --do_lower_case (every script that tokenizes)."""
    flags.DEFINE_string(
        "vocab_file", None, "The vocabulary file that the BERT model was trained on."
    )
    flags.DEFINE_bool(
        "do_lower_case",
        True,
        "Whether to lower case the input text. Should be True for uncased models and "
        "False for cased models.",
    )


def define_beam_flags(default_runner=None):
    """--runner and --beam_options of the tools that run as Beam pipelines."""
    flags.DEFINE_string(
        "runner",
        default_runner,
        "Run as an Apache Beam pipeline on this runner ("
        + ", ".join(BEAM_RUNNERS)
        + "; needs the [beam] extra)."
        + ("" if default_runner else " Not given: in this process, as before."),
    )
    flags.DEFINE_string(
        "beam_options",
        "",
        "Beam's own pipeline options, one quoted string passed to PipelineOptions "
        "as given, e.g. '--direct_num_workers=2 "
        "--direct_running_mode=multi_processing', or '--project=P --region=R "
        "--temp_location=gs://B/tmp --setup_file=./setup.py' for Dataflow.",
    )


def beam_options(flags_obj):
    """The --runner/--beam_options flags as a `BeamOptions`."""
    return BeamOptions(runner=flags_obj.runner, beam_options=flags_obj.beam_options)


def define_finetuning_flags():
    """Flags run_classifier.py and run_squad.py share (not run_pretraining.py)."""
    define_vocab_flags()
    flags.DEFINE_bool(
        "do_predict", False, "Whether to run the model in inference mode."
    )
    flags.DEFINE_integer("predict_batch_size", 8, "Total batch size for predict.")
    flags.DEFINE_float(
        "num_train_epochs", 3.0, "Total number of training epochs to perform."
    )
    flags.DEFINE_float(
        "warmup_proportion",
        0.1,
        "Proportion of training to perform linear learning rate warmup for. "
        "E.g., 0.1 = 10% of training.",
    )


def define_eval_and_batching_flags():
    """--do_eval, --eval_batch_size and the per-batch padding flags of the
    fine-tuning scripts that batch examples of varying length."""
    flags.DEFINE_bool("do_eval", False, "Whether to run eval on the dev set.")
    flags.DEFINE_integer("eval_batch_size", 8, "Total batch size for eval.")
    flags.DEFINE_bool(
        "pad_to_longest",
        True,
        "Cut each batch to its longest example instead of max_seq_length (same "
        "results, less work).",
    )
    flags.DEFINE_bool(
        "length_bucketing",
        True,
        "Training: group examples of similar length into batches (within pools of "
        "16 batches), so short sentences are not padded to long ones.",
    )


def define_new_flags():
    """Flags the original does not have: distribution, precision, optimizer, export."""
    flags.DEFINE_enum(
        "distribution_strategy",
        None,
        list(STRATEGIES),
        "tf.distribute strategy. Default: tpu with --use_tpu, multi_worker_mirrored "
        "when TF_CONFIG names several workers, mirrored with several GPUs, else "
        "one_device.",
    )
    flags.DEFINE_integer("num_gpus", None, "GPUs to use (default: all visible).")
    flags.DEFINE_enum(
        "dtype",
        "float32",
        ["float32", "mixed_float16", "mixed_bfloat16"],
        "Compute precision (Keras mixed-precision policy); variables stay float32.",
    )
    flags.DEFINE_bool("use_xla", False, "Compile the training step with XLA.")
    flags.DEFINE_enum(
        "optimizer",
        "adamw_original",
        ["adamw_original", "adamw", "lamb"],
        "adamw_original: the original's update (no bias correction); adamw: with bias "
        "correction; lamb: layer-wise adaptive (weight decay inside the trust ratio).",
    )
    flags.DEFINE_integer(
        "gradient_accumulation_steps",
        1,
        "Micro-batches summed per optimizer step; the train batch is split into this "
        "many parts (train_batch_size must be divisible by it).",
    )
    flags.DEFINE_string(
        "export_dir",
        None,
        "If set, export a SavedModel for TF Serving to export_dir/<version>/ at the "
        "end (raw-text `serving_default` and int32 `serve_tokenized` signatures, "
        "plus model.keras).",
    )
    define_serving_flags()
    flags.DEFINE_integer(
        "seed", 12345, "Random seed for initialisation and data order."
    )
    flags.DEFINE_bool(
        "overwrite_output_dir",
        False,
        "With --do_train: delete the checkpoints of a previous run in output_dir "
        "and start over. Without it, a rerun with the same settings resumes and "
        "one with other settings stops, listing the differences.",
    )


def define_serving_flags():
    """How a SavedModel is exported (run_* --export_dir and export_saved_model.py)."""
    flags.DEFINE_enum(
        "serving_tokenizer",
        "bert",
        ["bert", "fast_bert"],
        "In-graph tokenizer of the exported SavedModel: bert (tensorflow-text "
        "BertTokenizer ops, TF Serving >= 2.3, ids equal to the original's) or "
        "fast_bert (FastBertTokenizer, TF Serving >= 2.12, faster, differs on rare "
        "Unicode).",
    )
    flags.DEFINE_enum(
        "serving_dtype",
        "float32",
        ["float32", "bfloat16", "float16"],
        "Precision the exported SavedModel computes in (weights stored in it, "
        "LayerNorm statistics and outputs float32).",
    )
    flags.DEFINE_integer(
        "export_version",
        None,
        "Version directory of the export (export_dir/<export_version>/); default: "
        "1, or one more than the highest version already in export_dir.",
    )


def define_tfds_flags(text_features, eval_split=None):
    """Flags reading a TensorFlow Datasets dataset instead of the original's files.

    Args:
      text_features: also define the feature-name flags (run_classifier).
      eval_split: define --tfds_split_eval (default: with text_features;
        run_ner evaluates on a split of its own too).
    """
    flags.DEFINE_string(
        "tfds_name",
        None,
        "Read a TensorFlow Datasets dataset instead of files, e.g. glue/mrpc, "
        "squad/v1.1 (needs the tensorflow-datasets package: bert_tf[tfds]).",
    )
    flags.DEFINE_string(
        "tfds_data_dir",
        None,
        "TFDS data directory (default: TFDS's own, ~/tensorflow_datasets).",
    )
    flags.DEFINE_bool(
        "tfds_download",
        True,
        "Download and prepare the TFDS dataset when it is not in --tfds_data_dir.",
    )
    flags.DEFINE_string(
        "tfds_split_train",
        None,
        "TFDS split to train on (default: the dataset's train split).",
    )
    if text_features if eval_split is None else eval_split:
        flags.DEFINE_string(
            "tfds_split_eval",
            None,
            "TFDS split to evaluate on (default: validation; MNLI: "
            "validation_matched).",
        )
    flags.DEFINE_string(
        "tfds_split_predict",
        None,
        "TFDS split to predict (default: test; SQuAD: validation).",
    )
    if text_features:
        flags.DEFINE_string(
            "tfds_text_a_feature",
            None,
            "TFDS feature of the first text (default: the config's, e.g. sentence1).",
        )
        flags.DEFINE_string(
            "tfds_text_b_feature",
            None,
            "TFDS feature of the second text (default: the config's; an empty "
            "value makes a single-sentence task).",
        )
        flags.DEFINE_string(
            "tfds_label_feature", None, "TFDS label feature (default: label)."
        )


def run_options(flags_obj, *, lower_case=True, batching=True, schedule="epochs"):
    """The `RunOptions` of a run_* tool's parsed flags.

    Args:
      flags_obj: the parsed flags.
      lower_case: the tool has --do_lower_case (tokenizes text).
      batching: the tool has --pad_to_longest and --length_bucketing.
      schedule: "epochs" (--num_train_epochs, --warmup_proportion) or
        "steps" (--num_train_steps, --num_warmup_steps).
    """
    f = flags_obj
    if schedule == "epochs":
        steps = {
            "num_train_epochs": f.num_train_epochs,
            "warmup_proportion": f.warmup_proportion,
        }
    else:
        steps = {
            "num_train_epochs": None,
            "warmup_proportion": None,
            "num_train_steps": f.num_train_steps,
            "num_warmup_steps": f.num_warmup_steps,
        }
    training = TrainingOptions(
        train_batch_size=f.train_batch_size,
        learning_rate=f.learning_rate,
        optimizer=f.optimizer,
        gradient_accumulation_steps=f.gradient_accumulation_steps,
        use_xla=f.use_xla,
        save_checkpoints_steps=f.save_checkpoints_steps,
        iterations_per_loop=f.iterations_per_loop,
        length_bucketing=f.length_bucketing if batching else None,
        overwrite_output_dir=f.overwrite_output_dir,
        **steps,
    )
    distribution = DistributionOptions(
        distribution_strategy=f.distribution_strategy,
        num_gpus=f.num_gpus,
        use_tpu=f.use_tpu,
        tpu_name=f.tpu_name,
        tpu_zone=f.tpu_zone,
        gcp_project=f.gcp_project,
        master=f.master,
        num_tpu_cores=f.num_tpu_cores,
    )
    export = None
    if f.export_dir:
        export = ExportOptions(
            export_dir=f.export_dir,
            serving_tokenizer=f.serving_tokenizer,
            serving_dtype=f.serving_dtype,
            export_version=f.export_version,
        )
    return RunOptions(
        output_dir=f.output_dir,
        bert_config_file=f.bert_config_file,
        init_checkpoint=f.init_checkpoint,
        vocab_file=f.vocab_file,
        do_lower_case=f.do_lower_case if lower_case else None,
        max_seq_length=f.max_seq_length,
        do_train=f.do_train,
        do_eval=getattr(f, "do_eval", False),
        do_predict=getattr(f, "do_predict", False),
        eval_batch_size=getattr(f, "eval_batch_size", 8),
        predict_batch_size=getattr(f, "predict_batch_size", 8),
        pad_to_longest=f.pad_to_longest if batching else None,
        dtype=f.dtype,
        seed=f.seed,
        training=training,
        distribution=distribution,
        export=export,
    )


def tfds_options(flags_obj):
    """The `TfdsOptions` of the --tfds_* flags the tool has."""
    return TfdsOptions(
        **{
            name: getattr(flags_obj, name)
            for name in TfdsOptions.__dataclass_fields__
            if name in flags_obj
        }
    )
