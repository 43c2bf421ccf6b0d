"""The command-line flags, generated from the typed options they become.

Every option is declared once, as a field of a `bert_tf.options` dataclass
(`bert_tf.options.option.option`: help, choices, whether it defines the
run). A tool names the options classes it composes (`OptionFlags`); each
field becomes the absl flag of the same name, type, default, help and
choices, and after parsing the same fields build the option objects, checked
once, before TensorFlow loads. A tool changes a flag only where it really
differs (`Flag`: another name, help or default).

Example:

```python
FLAGS = OptionFlags(ClassifierOptions, RunOptions, without=STEP_SCHEDULE)
FLAGS.define("bert_tf.cli.run_classifier")  # the absl flags
classifier, run = FLAGS.build(flags.FLAGS)  # after parsing; checked
```
"""

import dataclasses

from absl import flags

from bert_tf.options.checks import check_once
from bert_tf.options.option import fields_by_name
from bert_tf.options.option import flag_default
from bert_tf.options.option import metadata
from bert_tf.options.option import nested_options
from bert_tf.options.option import value_type
from bert_tf.options.run_options import RunOptions

_TPU = "use_tpu tpu_name tpu_zone gcp_project master num_tpu_cores"
# The original's TPU flags, shared by run_classifier.py, run_squad.py and
# run_pretraining.py (`DistributionOptions`).
ORIGINAL_TPU_FLAGS = tuple(_TPU.split())
# The flags of each original script, in the order its --help lists them
# (`Command` lists them first, then those bert_tf adds).
ORIGINAL_FLAGS = {
    tool: tuple(names.split())
    for tool, names in {
        "run_classifier": f"data_dir bert_config_file task_name vocab_file output_dir init_checkpoint do_lower_case max_seq_length do_train do_eval do_predict train_batch_size eval_batch_size predict_batch_size learning_rate num_train_epochs warmup_proportion save_checkpoints_steps iterations_per_loop {_TPU}",
        "run_squad": f"bert_config_file vocab_file output_dir train_file predict_file init_checkpoint do_lower_case max_seq_length doc_stride max_query_length do_train do_predict train_batch_size predict_batch_size learning_rate num_train_epochs warmup_proportion save_checkpoints_steps iterations_per_loop n_best_size max_answer_length {_TPU} verbose_logging version_2_with_negative null_score_diff_threshold",
        "run_pretraining": f"bert_config_file input_file output_dir init_checkpoint max_seq_length max_predictions_per_seq do_train do_eval train_batch_size eval_batch_size learning_rate num_train_steps num_warmup_steps save_checkpoints_steps iterations_per_loop max_eval_steps {_TPU}",
        "extract_features": "input_file output_file layers bert_config_file max_seq_length init_checkpoint vocab_file do_lower_case batch_size use_tpu master num_tpu_cores use_one_hot_embeddings",
        "create_pretraining_data": "input_file output_file vocab_file do_lower_case do_whole_word_mask max_seq_length max_predictions_per_seq random_seed dupe_factor masked_lm_prob short_seq_prob",
    }.items()
}
# The flags every run_* tool shares, in the order --help lists them (the
# original's first, then bert_tf's: strategy, precision, optimizer, export).
RUN_FLAGS = (
    "do_eval",
    "eval_batch_size",
    "pad_to_longest",
    "length_bucketing",
    "bert_config_file",
    "output_dir",
    "init_checkpoint",
    "max_seq_length",
    "do_train",
    "train_batch_size",
    "learning_rate",
    "save_checkpoints_steps",
    "iterations_per_loop",
    *ORIGINAL_TPU_FLAGS,
    "distribution_strategy",
    "num_gpus",
    "dtype",
    "use_xla",
    "optimizer",
    "gradient_accumulation_steps",
    "export_dir",
    "serving_tokenizer",
    "serving_dtype",
    "export_version",
    "seed",
    "overwrite_output_dir",
    "vocab_file",
    "do_lower_case",
    "do_predict",
    "predict_batch_size",
    "num_train_epochs",
    "warmup_proportion",
    "num_train_steps",
    "num_warmup_steps",
)
# The exporters' first flags: which model, from where, tokenized how.
EXPORT_FLAGS = (
    "model_type",
    "init_checkpoint",
    "bert_config_file",
    "vocab_file",
    "do_lower_case",
    "max_seq_length",
)
# Options some tools leave out (`OptionFlags(without=...)`).
STEP_SCHEDULE = ("num_train_steps", "num_warmup_steps")
EPOCH_SCHEDULE = ("num_train_epochs", "warmup_proportion")
BATCHING = ("pad_to_longest", "length_bucketing")
TFDS_TEXT_FEATURES = (
    "tfds_text_a_feature",
    "tfds_text_b_feature",
    "tfds_label_feature",
)
# The display order of a class's flags where it is not the fields' order.
_ORDER = {RunOptions: RUN_FLAGS}


@dataclasses.dataclass(frozen=True)
class Flag:
    """A field's flag as one tool shows it, where it differs from the field's.

    Args:
      field: the options field.
      name: the flag's name (None: the field's).
      help: the tool's help text (None: the field's).
      default: the tool's default (none given: the field's).
      choices: the tool's allowed values (None: the field's).

    Example:

    ```python
    Flag("do_predict", name="do_index", help="Embed the corpus into the vector store.")
    ```
    """

    field: str
    name: str | None = None
    help: str | None = None
    default: object = "<the field's>"
    choices: tuple | None = None


class OptionFlags:
    """A tool's flags, generated from the options classes it composes.

    Args:
      *options: the options classes; `build` returns one object of each, in
        this order (made last to first: a task's own flags are checked before
        the run's, as the original's scripts check them).
      layout: what --help lists, in order: field names, `Flag`s and options
        classes (their fields not placed elsewhere in the layout); default:
        `options`. The fields of `options` that are in none get no flag.
      without: fields that get no flag (the field's default, or None for an
        ``absent_when_none`` one: the tool has no such option).
      fixed: `{field: value}` the tool sets without a flag.
      changed: `Flag`s of the tool's own help or default, listed where the
        layout places their fields.
    """

    def __init__(self, *options, layout=None, without=(), fixed=None, changed=()):
        self.options = options
        self.fixed = dict(fixed or {})
        self._fields = {}  # field name -> dataclasses.Field
        for options_class in options:
            self._collect(options_class)
        skipped = set(without) | set(self.fixed)
        layout = options if layout is None else layout
        placed = {
            item.field if isinstance(item, Flag) else item
            for item in layout
            if not isinstance(item, type)
        }
        placed |= {item for item in layout if isinstance(item, type)}
        changed = {flag.field: flag for flag in changed}
        self.flags = []  # Flag per defined flag, in --help order
        for item in layout:
            if isinstance(item, type):
                names = self._class_fields(item, placed - {item})
            else:
                names = [item.field if isinstance(item, Flag) else item]
            for name in names:
                if name in skipped or any(f.field == name for f in self.flags):
                    continue
                if name not in self._fields:
                    raise KeyError(f"{name}: not a field of {options}")
                if isinstance(item, Flag):
                    self.flags.append(item)
                else:
                    self.flags.append(changed.get(name, Flag(name)))
        self._flag_of = {f.field: f.name or f.field for f in self.flags}

    def _collect(self, options_class):
        for field in dataclasses.fields(options_class):
            nested = nested_options(field)
            if nested is not None:
                self._collect(nested)
            elif metadata(field) is not None:
                if field.name in self._fields:
                    raise KeyError(f"{field.name}: two fields of that name")
                self._fields[field.name] = field

    def _class_fields(self, options_class, placed):
        """The flag fields of `options_class` and the classes it holds, in
        display order, leaving out what the layout places elsewhere."""
        names = []
        for field in dataclasses.fields(options_class):
            nested = nested_options(field)
            if nested is not None:
                if nested not in placed:
                    names.extend(self._class_fields(nested, placed))
            elif metadata(field) is not None and field.name not in placed:
                names.append(field.name)
        order = _ORDER.get(options_class)
        if order:
            names.sort(key=lambda n: order.index(n) if n in order else len(order))
        return names

    def define(self, module_name, flag_values=flags.FLAGS):
        """Defines the absl flags (under `module_name` in --helpfull)."""
        for placed in self.flags:
            field = self._fields[placed.field]
            meta = metadata(field)
            name = placed.name or field.name
            help_text = meta["help"] if placed.help is None else placed.help
            default = placed.default
            if default == Flag.default:
                default = flag_default(field)
            kind = value_type(field)
            choices = placed.choices or meta["choices"]
            if choices:
                flags.DEFINE_enum(
                    name,
                    default,
                    list(choices),
                    help_text,
                    flag_values=flag_values,
                    module_name=module_name,
                )
                continue
            define = {
                bool: flags.DEFINE_bool,
                int: flags.DEFINE_integer,
                float: flags.DEFINE_float,
                str: flags.DEFINE_string,
                tuple: flags.DEFINE_list,
            }[kind]
            bounds = {}
            if meta["lower_bound"] is not None:
                bounds["lower_bound"] = meta["lower_bound"]
            define(
                name,
                default,
                help_text,
                flag_values=flag_values,
                module_name=module_name,
                **bounds,
            )

    def build(self, flag_values):
        """The option objects of the parsed flags, checked once (no TensorFlow)."""
        built = {}
        for options_class in reversed(self.options):
            built[options_class] = self._build(options_class, flag_values)
        objects = tuple(built[options_class] for options_class in self.options)
        run = built.get(RunOptions)
        if run is not None:
            for options in objects:
                if options is not run and hasattr(options, "check"):
                    check_once(options, run)
        return objects

    def _build(self, options_class, flag_values):
        values = {}
        for field in dataclasses.fields(options_class):
            name = field.name
            nested = nested_options(field)
            if name in self.fixed:
                values[name] = self.fixed[name]
            elif nested is not None:
                if field.default is None and not self._given(nested, flag_values):
                    values[name] = None  # e.g. no --export_dir: no export
                else:
                    values[name] = self._build(nested, flag_values)
            elif name in self._flag_of:
                flag = flag_values[self._flag_of[name]]
                if not metadata(field)["omitted_is_default"] or flag.present:
                    values[name] = flag.value
            elif metadata(field) and metadata(field)["absent_when_none"]:
                values[name] = None
        return options_class(**values)

    def _given(self, options_class, flag_values):
        """Whether the flags of the required fields of an optional
        `options_class` (e.g. --export_dir) are given."""
        required = [
            name
            for name, field in fields_by_name(options_class).items()
            if field.default is dataclasses.MISSING
            and field.default_factory is dataclasses.MISSING
        ]
        return all(
            name in self._flag_of and flag_values[self._flag_of[name]].value
            for name in required
        )
