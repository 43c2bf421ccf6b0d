"""TensorFlow Datasets (TFDS) as the input of run_classifier, run_squad and run_ner.

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

import collections
import dataclasses
import json
import os
import pathlib
import urllib.parse
from unittest import mock

import numpy as np
from absl import logging

from bert_tf.data_prep import glue
from bert_tf.errors import UserInputError

__all__ = [
    "GLUE_CONFIGS",
    "SQUAD_CONFIGS",
    "TfdsGlueProcessor",
    "conll2003_sentences",
    "import_tfds",
    "load_builder",
    "prepare_from_local_files",
    "squad_json",
    "write_conll2003_file",
    "write_conll_file",
    "write_squad_json",
]

_INSTALL_HINT = (
    "reading TFDS datasets (--tfds_name) needs the optional package "
    "tensorflow-datasets: pip install 'bert_tf[tfds]' (or pip install "
    "tensorflow-datasets importlib_resources)"
)


def import_tfds():
    """Returns the `tensorflow_datasets` module, or an ImportError saying how to
    install it."""
    try:
        import tensorflow_datasets
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return tensorflow_datasets


@dataclasses.dataclass(frozen=True)
class _GlueConfig:
    """How one TFDS GLUE config maps onto a bert_tf classification task.

    `labels` maps TFDS class names to the task's label strings (None: a float
    regression label); `splits` are the default (train, eval, predict) splits,
    None where the config has none.
    """

    task: str
    text_a: str
    text_b: str | None
    labels: dict | None
    splits: tuple = ("train", "validation", "test")
    mismatched_eval: str | None = None


_BINARY = {"0": "0", "1": "1"}
_NLI = {name: name for name in ("entailment", "neutral", "contradiction")}
_QNLI = {name: name for name in ("entailment", "not_entailment")}
_MNLI_EVAL_ONLY = (None, "validation", "test")

# TFDS GLUE config -> task. The 0/1 tasks' TFDS class names are the files'
# labels in order (TFDS parses "0"/"1" as class ids).
GLUE_CONFIGS = {
    "glue/cola": _GlueConfig(
        "cola", "sentence", None, {"unacceptable": "0", "acceptable": "1"}
    ),
    "glue/sst2": _GlueConfig(
        "sst-2", "sentence", None, {"negative": "0", "positive": "1"}
    ),
    "glue/mrpc": _GlueConfig(
        "mrpc",
        "sentence1",
        "sentence2",
        {"not_equivalent": "0", "equivalent": "1"},
    ),
    "glue/qqp": _GlueConfig(
        "qqp",
        "question1",
        "question2",
        {"not_duplicate": "0", "duplicate": "1"},
    ),
    "glue/stsb": _GlueConfig("sts-b", "sentence1", "sentence2", None),
    "glue/mnli": _GlueConfig(
        "mnli",
        "premise",
        "hypothesis",
        _NLI,
        splits=("train", "validation_matched", "test_matched"),
        mismatched_eval="validation_mismatched",
    ),
    "glue/mnli_matched": _GlueConfig(
        "mnli", "premise", "hypothesis", _NLI, splits=_MNLI_EVAL_ONLY
    ),
    "glue/mnli_mismatched": _GlueConfig(
        "mnli-mm", "premise", "hypothesis", _NLI, splits=_MNLI_EVAL_ONLY
    ),
    "glue/qnli": _GlueConfig("qnli", "question", "sentence", _QNLI),
    "glue/rte": _GlueConfig("rte", "sentence1", "sentence2", _QNLI),
    "glue/wnli": _GlueConfig(
        "wnli",
        "sentence1",
        "sentence2",
        {"not_entailment": "0", "entailment": "1"},
    ),
    # The diagnostic set: MNLI-style pairs, a test split only.
    "glue/ax": _GlueConfig(
        "mnli", "premise", "hypothesis", _NLI, splits=(None, None, "test")
    ),
}

# TFDS SQuAD config -> whether it is SQuAD 2.0 (impossible questions).
SQUAD_CONFIGS = {"squad/v1.1": False, "squad/v2.0": True}
SQUAD_SPLITS = ("train", "validation")

CONLL_CONFIGS = ("conll2003",)
CONLL_SPLITS = ("train", "dev", "test")


def config_key(tfds_name):
    """`glue/mrpc:2.0.0` -> `glue/mrpc` (lower case, no version)."""
    return tfds_name.split(":")[0].strip().lower()


def check_supported(tfds_name, supported, flag="--tfds_name"):
    """Raises a ValueError listing `supported` when `tfds_name` is not one."""
    if config_key(tfds_name) not in supported:
        raise UserInputError(
            f"{flag}={tfds_name!r} is not supported here; supported: "
            f"{', '.join(sorted(supported))}"
        )


def load_builder(tfds_name, data_dir=None, download=True):
    """The prepared `tfds` builder of `tfds_name` (downloading it if allowed).

    Raises:
      ImportError: tensorflow-datasets is not installed.
      ValueError: the dataset is not prepared in `data_dir` and `download` is
        False.
    """
    tfds = import_tfds()
    builder = tfds.builder(tfds_name, data_dir=data_dir)
    if not builder.is_prepared():
        if not download:
            raise UserInputError(
                f"TFDS dataset {tfds_name} is not prepared in {builder.data_dir} "
                "(--tfds_data_dir); allow the download (--tfds_download=true) or "
                "prepare it with `tfds build`"
            )
        logging.info("Downloading and preparing TFDS %s", tfds_name)
        builder.download_and_prepare()
    return builder


def _check_split(builder, tfds_name, split, flag):
    """A clear error for an unknown split name (`split` may use TFDS's slicing
    syntax, `train[:10%]+validation`); a builder without split metadata is
    left to TFDS."""
    known = builder.info.splits
    names = [part.split("[")[0].strip() for part in split.split("+")]
    if known and any(name not in known for name in names):
        raise UserInputError(
            f"TFDS {tfds_name} has no split {split!r} ({flag}); its splits: "
            f"{', '.join(sorted(builder.info.splits.keys()))}"
        )


def _rows(builder, split):
    """The split's rows as dicts of numpy values, in stored order."""
    tfds = import_tfds()
    return tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False))


def _scalar_rows(builder, split, batch_size=4096):
    """As `_rows`, for datasets whose features are all scalars (GLUE): read in
    batches, which is several times faster than one element at a time."""
    tfds = import_tfds()
    dataset = builder.as_dataset(split=split, shuffle_files=False).batch(batch_size)
    for batch in tfds.as_numpy(dataset):
        names = list(batch)
        for values in zip(*(batch[name] for name in names), strict=True):
            yield dict(zip(names, values, strict=True))


def _text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


class TfdsGlueProcessor(glue.DataProcessor):
    """GLUE examples from TFDS, with the interface of the GLUE file processors.

    `data_dir` arguments of the get_* methods are ignored (the TFDS data
    directory is given once, to the constructor).

    Args:
      tfds_name: a key of GLUE_CONFIGS, optionally with a version
        (`glue/mrpc:2.0.0`).
      data_dir: TFDS data directory (TFDS's default, ~/tensorflow_datasets,
        when None).
      train_split, eval_split, predict_split: TFDS split names (TFDS slicing
        such as `train[:10%]` works); by default the config's train,
        validation (MNLI: validation_matched) and test splits.
      text_a_feature, text_b_feature, label_feature: feature names; by default
        the config's. `text_b_feature=""` makes a single-sentence task.
      download: download and prepare the dataset when it is not in
        `data_dir`.
      skip_bad_rows: skip labelled-split rows without a label (label -1),
        recorded in `skipped` and logged, instead of raising.
      allow_single_class: see `glue.DataProcessor`.

    Example:
      >>> processor = TfdsGlueProcessor("glue/mrpc", data_dir="/data/tfds")
      >>> examples = processor.get_train_examples()
      >>> examples[0].label in processor.get_labels()
      True
    """

    def __init__(
        self,
        tfds_name,
        data_dir=None,
        train_split=None,
        eval_split=None,
        predict_split=None,
        text_a_feature=None,
        text_b_feature=None,
        label_feature=None,
        download=True,
        skip_bad_rows=False,
        allow_single_class=False,
    ):
        super().__init__(skip_bad_rows, allow_single_class)
        check_supported(tfds_name, GLUE_CONFIGS)
        self.tfds_name = tfds_name
        self.data_dir = data_dir
        config = GLUE_CONFIGS[config_key(tfds_name)]
        self.task_name = config.task
        self.train_split = train_split or config.splits[0]
        self.eval_split = eval_split or config.splits[1]
        self.predict_split = predict_split or config.splits[2]
        self.text_a_feature = text_a_feature or config.text_a
        self.text_b_feature = (
            config.text_b if text_b_feature is None else text_b_feature or None
        )
        self.label_feature = label_feature or "label"
        self.download = download
        self.text_pair = self.text_b_feature is not None
        self.is_regression = config.labels is None
        self._class_names = config.labels
        self._mismatched_split = config.mismatched_eval
        # As MnliProcessor: run_classifier also evaluates the mismatched dev
        # set when the matched one is the eval split.
        self.matched = bool(config.mismatched_eval) and eval_split in (
            None,
            config.splits[1],
        )
        self._label_list = glue.get_processor(config.task).get_labels()
        self._builder = None

    def get_labels(self, data_dir=None):
        return list(self._label_list)

    def get_train_examples(self, data_dir=None):
        return self._checked_training_set(
            f"TFDS {self.tfds_name}[{self.train_split}]",
            self._examples(self.train_split, "train", "--tfds_split_train"),
        )

    def get_dev_examples(self, data_dir=None, matched=None):
        """The eval split; with matched=False (MNLI), validation_mismatched."""
        if matched is False:
            if not self._mismatched_split:
                raise UserInputError(f"{self.tfds_name} has no mismatched dev set")
            return self._examples(self._mismatched_split, "dev_mismatched", None)
        return self._examples(self.eval_split, "dev", "--tfds_split_eval")

    def get_test_examples(self, data_dir=None):
        return self._examples(
            self.predict_split, "test", "--tfds_split_predict", unlabelled=True
        )

    def builder(self):
        """The TFDS builder (prepared on first use)."""
        if self._builder is None:
            self._builder = load_builder(self.tfds_name, self.data_dir, self.download)
            self._check_features(self._builder)
        return self._builder

    def _check_features(self, builder):
        features = builder.info.features
        wanted = {
            "--tfds_text_a_feature": self.text_a_feature,
            "--tfds_text_b_feature": self.text_b_feature,
            "--tfds_label_feature": self.label_feature,
        }
        for flag, name in wanted.items():
            if name is not None and name not in features:
                raise UserInputError(
                    f"TFDS {self.tfds_name} has no feature {name!r} ({flag}); its "
                    f"features: {', '.join(sorted(features.keys()))}"
                )
        label = features[self.label_feature]
        names = getattr(label, "names", None)
        if self.is_regression:
            if names is not None:
                raise UserInputError(
                    f"TFDS {self.tfds_name}: {self.label_feature!r} is a class label, "
                    "but the task is a regression"
                )
            self._id_to_label = None
            return
        if names is None or set(names) != set(self._class_names):
            raise UserInputError(
                f"TFDS {self.tfds_name}: label feature {self.label_feature!r} has "
                f"classes {names}, expected {sorted(self._class_names)}"
            )
        # By name: the class's index in TFDS need not be its index here.
        self._id_to_label = [self._class_names[name] for name in names]

    def _examples(self, split, set_type, flag, unlabelled=False):
        if split is None:
            raise UserInputError(
                f"TFDS {self.tfds_name} has no {set_type} split; name one with {flag}"
            )
        builder = self.builder()
        _check_split(builder, self.tfds_name, split, flag)
        has_idx = "idx" in builder.info.features
        rows = []
        for row in _scalar_rows(builder, split):
            index = int(row["idx"]) if has_idx else len(rows)
            rows.append((index, row))
        # idx is the row's index in the source file: file order.
        rows.sort(key=lambda item: item[0])
        examples, skipped = [], []
        for index, row in rows:
            label = self._label(row[self.label_feature], unlabelled)
            if label is None:
                self._bad_row(
                    f"TFDS {self.tfds_name}[{split}]",
                    f"idx {index}",
                    "no label (-1) in a labelled split",
                    skipped,
                )
                continue
            text_b = None
            if self.text_b_feature is not None:
                text_b = _text(row[self.text_b_feature])
            examples.append(
                glue.InputExample(
                    guid=f"{set_type}-{index}",
                    text_a=_text(row[self.text_a_feature]),
                    text_b=text_b,
                    label=label,
                )
            )
        self._log_skipped(f"TFDS {self.tfds_name}[{split}]", skipped)
        logging.info("TFDS %s[%s]: %d examples", self.tfds_name, split, len(examples))
        return examples

    def _label(self, value, unlabelled):
        """The task's label of a TFDS label value; None for a missing label in a
        labelled split."""
        if self.is_regression:
            # TFDS stores float32: its shortest decimal form is the file's
            # score (e.g. 3.8, not 3.799999952316284), as the file path reads it.
            value = float(str(np.float32(value)))
            if value == -1.0:
                return 0.0 if unlabelled else None
            return value
        value = int(value)
        if value == -1:
            return self._label_list[0] if unlabelled else None
        return self._id_to_label[value]


# ---------------------------------------------------------------------------
# SQuAD


def squad_json(tfds_name, split, data_dir=None, download=True):
    """A TFDS SQuAD split as a SQuAD JSON dict (`{"version", "data"}`).

    Questions are grouped into articles by title and into paragraphs by
    context, in the order TFDS stores them.
    """
    check_supported(tfds_name, SQUAD_CONFIGS)
    version_2 = SQUAD_CONFIGS[config_key(tfds_name)]
    builder = load_builder(tfds_name, data_dir, download)
    _check_split(builder, tfds_name, split, "--tfds_split_train/--tfds_split_predict")
    articles = collections.OrderedDict()
    num_questions = 0
    for row in _rows(builder, split):
        title = _text(row["title"])
        paragraphs = articles.setdefault(title, collections.OrderedDict())
        qas = paragraphs.setdefault(_text(row["context"]), [])
        qa = {
            "id": _text(row["id"]),
            "question": _text(row["question"]),
            "answers": _answers(row["answers"]),
        }
        if version_2:
            qa["is_impossible"] = bool(row["is_impossible"])
            qa["plausible_answers"] = _answers(row["plausible_answers"])
        qas.append(qa)
        num_questions += 1
    logging.info(
        "TFDS %s[%s]: %d questions in %d articles",
        tfds_name,
        split,
        num_questions,
        len(articles),
    )
    return {
        "version": "v2.0" if version_2 else "1.1",
        "data": [
            {
                "title": title,
                "paragraphs": [
                    {"context": context, "qas": qas}
                    for context, qas in paragraphs.items()
                ],
            }
            for title, paragraphs in articles.items()
        ],
    }


def _answers(answers):
    return [
        {"answer_start": int(start), "text": _text(text)}
        for text, start in zip(answers["text"], answers["answer_start"], strict=True)
    ]


def write_squad_json(tfds_name, split, path, data_dir=None, download=True):
    """Writes a TFDS SQuAD split to `path` as SQuAD JSON; returns `path`."""
    dataset = squad_json(tfds_name, split, data_dir, download)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(dataset, f, ensure_ascii=False)
    return path


# ---------------------------------------------------------------------------
# CoNLL-2003


def conll2003_sentences(
    split="train", data_dir=None, download=True, tfds_name="conll2003"
):
    """Yields `(tokens, tags)` of each sentence of a TFDS CoNLL-2003 split.

    `tokens` and `tags` are lists of str of equal length; tags are the
    dataset's NER class names (IOB2: O, B-PER, I-PER, ...). Empty rows (TFDS's
    builder stores one after each file's last sentence) are skipped and their
    number logged.
    """
    check_supported(tfds_name, CONLL_CONFIGS)
    builder = load_builder(tfds_name, data_dir, download)
    _check_split(builder, tfds_name, split, "--tfds_split_*")
    names = builder.info.features["ner"].feature.names
    empty = 0
    for position, row in enumerate(_rows(builder, split)):
        tokens = [_text(token) for token in row["tokens"]]
        tags = [names[int(tag)] for tag in row["ner"]]
        if len(tokens) != len(tags):
            raise UserInputError(
                f"TFDS {tfds_name}[{split}] row {position}: {len(tokens)} tokens "
                f"but {len(tags)} tags"
            )
        if not tokens:
            empty += 1
            continue
        yield tokens, tags
    if empty:
        logging.info(
            "TFDS %s[%s]: skipped %d empty sentence(s)", tfds_name, split, empty
        )


def write_conll_file(sentences, path):
    """Writes `(tokens, tags)` sentences as `token<TAB>tag` lines, a blank line
    after each sentence; returns the number of sentences written.

    Raises:
      ValueError: a token is empty or holds whitespace (it would not read back
        as one token), or tokens and tags differ in length.
    """
    count = 0
    with open(path, "w", encoding="utf-8") as f:
        for tokens, tags in sentences:
            if len(tokens) != len(tags):
                raise UserInputError(
                    f"sentence {count}: {len(tokens)} tokens but {len(tags)} tags"
                )
            for token, tag in zip(tokens, tags, strict=True):
                if not token or any(c.isspace() for c in token):
                    raise UserInputError(
                        f"sentence {count}: token {token!r} is empty or holds whitespace"
                    )
                f.write(f"{token}\t{tag}\n")
            f.write("\n")
            count += 1
    return count


def write_conll2003_file(
    split, path, data_dir=None, download=True, tfds_name="conll2003"
):
    """Writes a TFDS CoNLL-2003 split to `path` as a `token<TAB>tag` file (IOB2
    tags) for the NER file reader; returns `path`."""
    count = write_conll_file(
        conll2003_sentences(split, data_dir, download, tfds_name), path
    )
    logging.info("TFDS %s[%s]: wrote %d sentences to %s", tfds_name, split, count, path)
    return path


# ---------------------------------------------------------------------------
# Offline preparation


def _file_name(url):
    """The name of the file a download URL points at (query removed, %2F
    decoded: `.../o/data%2Fmrpc_dev_ids.tsv?alt=media` -> `mrpc_dev_ids.tsv`)."""
    path = urllib.parse.unquote(urllib.parse.urlparse(url).path)
    return os.path.basename(path)


def prepare_from_local_files(tfds_name, data_dir, local_files):
    """Builds the official TFDS dataset `tfds_name` into `data_dir` from local
    copies of the files its builder downloads (no network).

    The builder's own code parses the files, so the result is what
    `tfds.load` would build from the downloaded originals.

    Args:
      tfds_name: e.g. "glue/mrpc", "glue/sst2", "squad/v1.1".
      data_dir: TFDS data directory to write.
      local_files: {downloaded file name: local path}; the name is the last
        part of the URL (`SST-2.zip`, `msr_paraphrase_train.txt`,
        `mrpc_dev_ids.tsv`, `dev-v1.1.json`), and for an archive the path is
        the folder it extracts to.

    Returns:
      The prepared builder.
    """
    tfds = import_tfds()

    def local(url):
        name = _file_name(url)
        if name not in local_files:
            raise UserInputError(
                f"TFDS {tfds_name} downloads {url}: give local_files[{name!r}]"
            )
        # A Path: some builders join the extracted folder with `/`.
        return pathlib.Path(local_files[name])

    def resolve(_, urls):
        if isinstance(urls, dict):
            return {key: local(url) for key, url in urls.items()}
        if isinstance(urls, list | tuple):
            return [local(url) for url in urls]
        return local(urls)

    manager = tfds.download.DownloadManager
    with (
        mock.patch.object(manager, "download", resolve),
        mock.patch.object(manager, "download_and_extract", resolve),
    ):
        builder = tfds.builder(tfds_name, data_dir=data_dir)
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(try_download_gcs=False)
        )
    return builder
