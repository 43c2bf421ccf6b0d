"""TensorFlow Datasets (TFDS) as the input of run_classifier, run_squad and run_ner.

One module per data family (glue.py, squad.py, conll.py) over builders.py;
their public names are importable from here.

`--tfds_name=glue/mrpc` (or another GLUE config), `squad/v1.1`, `squad/v2.0` or
`conll2003` reads the rows of a TFDS dataset instead of the original's files and
turns them into the objects the file readers produce, so everything after that
(tokenization, truncation, windows, records, training) is the file path's code:

- GLUE: `TfdsGlueProcessor` has the GLUE processors' interface (`get_labels`,
  `get_train_examples`, `get_dev_examples`, `get_test_examples`, `text_pair`)
  and returns `glue.InputExample`s. Labels are mapped by class NAME onto the
  label list of the task's file processor (MRPC's TFDS classes
  `not_equivalent`/`equivalent` are the files' "0"/"1"; MNLI's TFDS order
  entailment/neutral/contradiction becomes the original's
  contradiction/entailment/neutral ids). Unlabelled rows (TFDS writes label -1,
  or -1.0 for STS-B, in the test splits) get the task's first label (0.0 for
  regression), as the original does for test files. Rows are sorted by TFDS's
  `idx` feature, the row's index in the source file, so examples come in file
  order (TFDS shuffles rows when it writes a dataset).
- SQuAD: `write_squad_json` writes a split back as SQuAD JSON (articles and
  paragraphs regrouped by title and context), which `squad.read_squad_examples`
  reads with every rule of the file path; the file is also what `--do_eval`
  scores against. TFDS keeps no position of a question in the original file,
  so questions come in TFDS's stored order (deterministic, a permutation of the
  file's), grouped by article and paragraph.
- CoNLL-2003: `conll2003_sentences` yields `(tokens, tags)` with IOB2 tag
  names; `write_conll2003_file` writes a split as a `token<TAB>tag` file for
  the NER file reader (`--tag_scheme=iob2`).

`tensorflow-datasets` is an optional dependency (`pip install bert_tf[tfds]`);
without it these functions raise an ImportError that says so.
"""

from bert_tf.data_prep.tfds_input.builders import check_supported
from bert_tf.data_prep.tfds_input.builders import config_key
from bert_tf.data_prep.tfds_input.builders import import_tfds
from bert_tf.data_prep.tfds_input.builders import load_builder
from bert_tf.data_prep.tfds_input.conll import CONLL_CONFIGS
from bert_tf.data_prep.tfds_input.conll import CONLL_SPLITS
from bert_tf.data_prep.tfds_input.conll import conll2003_sentences
from bert_tf.data_prep.tfds_input.conll import write_conll2003_file
from bert_tf.data_prep.tfds_input.conll import write_conll_file
from bert_tf.data_prep.tfds_input.glue import GLUE_CONFIGS
from bert_tf.data_prep.tfds_input.glue import TfdsGlueProcessor
from bert_tf.data_prep.tfds_input.squad import SQUAD_CONFIGS
from bert_tf.data_prep.tfds_input.squad import SQUAD_SPLITS
from bert_tf.data_prep.tfds_input.squad import squad_json
from bert_tf.data_prep.tfds_input.squad import write_squad_json

__all__ = [
    "CONLL_CONFIGS",
    "CONLL_SPLITS",
    "GLUE_CONFIGS",
    "SQUAD_CONFIGS",
    "SQUAD_SPLITS",
    "TfdsGlueProcessor",
    "check_supported",
    "config_key",
    "conll2003_sentences",
    "import_tfds",
    "load_builder",
    "squad_json",
    "write_conll2003_file",
    "write_conll_file",
    "write_squad_json",
]
