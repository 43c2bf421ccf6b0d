"""GLUE / XNLI / custom-file processors and feature conversion of ``run_classifier.py``.

The public face of ``table_reader`` (reading .tsv/.csv/.jsonl rows),
``glue_processors``, ``custom_task`` and ``classifier_features``.

Reproduces the data side of google-research/bert's ``run_classifier.py`` (commit
eedf571): ``InputExample``, ``InputFeatures``, ``PaddingInputExample``, the
processors for ``cola``, ``mnli``, ``mrpc`` and ``xnli`` (same files, header
handling, columns, guids and labels), ``convert_single_example`` and
``convert_examples_to_features``. On every file the original can read, the
examples and features are identical.

Added on top of the original:

* Processors for the rest of GLUE in its standard file layout: ``sst-2``, ``qqp``,
  ``qnli``, ``rte``, ``wnli`` and ``sts-b`` (regression: ``is_regression = True``,
  the label is a float and ``get_labels()`` returns ``[None]``, i.e. one output).
  Test sets get a placeholder label (the first label, 0.0 for regression), as the
  original does for its tasks.
* ``mnli-mm``: MNLI whose dev/test sets are ``dev_mismatched.tsv`` /
  ``test_mismatched.tsv``. ``MnliProcessor.get_dev_examples(data_dir,
  matched=False)`` does the same for one call.
* ``XnliProcessor(language="zh")``: the language was hard-coded in the original.
  ``get_test_examples`` reads ``xnli.test.tsv`` (same layout and filter as the dev
  set, real labels) where the original raised NotImplementedError.
* ``custom``: ``CustomProcessor`` reads .tsv/.csv/.jsonl files with named or
  0-based indexed columns; labels are the sorted set found in the train file.
* Strict input checks. Files are decoded as strict UTF-8 line by line (the
  original dropped undecodable bytes); a UTF-8 byte-order mark at the start of a
  file is removed. A malformed row (undecodable bytes, a column count different
  from the header's, an unknown label, an unparsable regression score, ...)
  raises ``BadRowError`` (a ``ValueError``) whose message starts with
  ``path:line: reason`` (1-based physical line). With ``skip_bad_rows=True`` such
  rows are skipped instead, recorded in the processor's ``skipped`` list as
  ``(path, line, reason)`` and logged (count and first 5). Nothing is dropped
  silently. Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as for ``csv`` with
  ``newline=""``).

Guids of the remaining rows do not depend on skipped rows: they use the row index
in the file, as the original does.
"""

from bert_tf.data_prep.classifier_features import InputExample
from bert_tf.data_prep.classifier_features import InputFeatures
from bert_tf.data_prep.classifier_features import PaddingInputExample
from bert_tf.data_prep.classifier_features import convert_examples_to_features
from bert_tf.data_prep.classifier_features import convert_single_example
from bert_tf.data_prep.classifier_features import is_regression_label_list
from bert_tf.data_prep.custom_task import CustomProcessor
from bert_tf.data_prep.glue_processors import ColaProcessor
from bert_tf.data_prep.glue_processors import DataProcessor
from bert_tf.data_prep.glue_processors import MnliMismatchedProcessor
from bert_tf.data_prep.glue_processors import MnliProcessor
from bert_tf.data_prep.glue_processors import MrpcProcessor
from bert_tf.data_prep.glue_processors import QnliProcessor
from bert_tf.data_prep.glue_processors import QqpProcessor
from bert_tf.data_prep.glue_processors import RteProcessor
from bert_tf.data_prep.glue_processors import Sst2Processor
from bert_tf.data_prep.glue_processors import StsbProcessor
from bert_tf.data_prep.glue_processors import WnliProcessor
from bert_tf.data_prep.glue_processors import XnliProcessor
from bert_tf.data_prep.table_reader import BadRowError
from bert_tf.data_prep.table_reader import read_records
from bert_tf.errors import UserInputError

__all__ = [
    "PROCESSORS",
    "BadRowError",
    "ColaProcessor",
    "CustomProcessor",
    "DataProcessor",
    "InputExample",
    "InputFeatures",
    "MnliMismatchedProcessor",
    "MnliProcessor",
    "MrpcProcessor",
    "PaddingInputExample",
    "QnliProcessor",
    "QqpProcessor",
    "RteProcessor",
    "Sst2Processor",
    "StsbProcessor",
    "WnliProcessor",
    "XnliProcessor",
    "convert_examples_to_features",
    "convert_single_example",
    "get_processor",
    "is_regression_label_list",
    "read_records",
]


# Lower-case task name -> processor class (called with the options).
PROCESSORS = {
    "cola": ColaProcessor,
    "custom": CustomProcessor,
    "mnli": MnliProcessor,
    "mnli-mm": MnliMismatchedProcessor,
    "mrpc": MrpcProcessor,
    "qnli": QnliProcessor,
    "qqp": QqpProcessor,
    "rte": RteProcessor,
    "sst-2": Sst2Processor,
    "sts-b": StsbProcessor,
    "wnli": WnliProcessor,
    "xnli": XnliProcessor,
}


def get_processor(task_name, **options):
    """Returns the processor for `task_name` (case-insensitive).

    Args:
      task_name: a key of PROCESSORS.
      **options: constructor arguments, e.g. skip_bad_rows=True, language="de"
        (xnli), matched=False (mnli), train_file=... (custom).
    """
    key = task_name.lower()
    if key not in PROCESSORS:
        raise UserInputError(
            f"task_name: Task not found: {task_name!r}. Known tasks: "
            f"{', '.join(sorted(PROCESSORS))}",
            argument="task_name",
        )
    return PROCESSORS[key](**options)
