"""`export_saved_model`: SavedModels for TF Serving, raw text in, predictions out.

`export_saved_model` writes `export_dir/<version>/` with two signatures:

* `serving_default` takes strings and tokenizes them in the graph
  (`BertPreprocessor`: tensorflow-text ops that stock TF Serving ships);
* `serve_tokenized` takes int32 `input_ids`, `input_mask`, `segment_ids`
  [batch, length] (length up to the model's max_position_embeddings) for
  clients that tokenize themselves.

Outputs per model (from the `SignatureModule` that `bert_tf.serving.register`
maps the model's class to):

==================  ===========================  =================================
model               serving_default inputs       outputs
==================  ===========================  =================================
`BertClassifier`    `text_a` (+ `text_b`)        `probabilities` [B, C], `label_ids`
                                                 [B] int32, `labels` [B] string;
                                                 regression (1 label): `predictions`
`BertSpanLabeler`   `question`, `context`        `answer_*` [B], `nbest_*` [B, N],
                                                 per context piece `start_logits`,
                                                 `end_logits`, `token_start`,
                                                 `token_end` [B, T] (see
                                                 `DocumentAnswers`); serve_tokenized:
                                                 `start_logits`, `end_logits` [B, L]
`BertEncoder`       `text_a` (+ `text_b`)        `pooled_output` [B, H],
                                                 `sequence_output` [B, L, H]
`BertReranker`      `query` [B], `passages`      `scores`, `logits` [B, N] float32,
                    [B, N] ("" pads)             `ranking` [B, N] int32 (see
                                                 `RerankerSignatures`); serve_tokenized:
                                                 `scores`, `logits` [B]
`CorpusIndex`       `query` [B], `top_k`         `ids` [B, k] document ids, `scores`
(retrieval)                                      [B, k]; `query_embedding`: `embeddings`
                                                 [B, D] (see `RetrievalSignatures`)
`BertSparseEncoder` `text` (also `query`,         `token_ids`, `weights`, `tokens` [B, k]
(SPLADE)            `document` signatures)       (top `top_k`), `num_nonzero` [B] (see
                                                 `SparseEncoderSignatures`)
`BertMultiVector-   `text` (also `query`,        `token_vectors` [B, L, D], `mask` [B, L];
Encoder` (ColBERT)  `document`; `score`: both)   `score`: `scores` [B] MaxSim (see
                                                 `MultiVectorSignatures`)
`BertTokenClassi-   `text`                       `logits`, `tag_ids`, `tags` [B, L];
fier` (tagger)                                   raw text only: `token_start`,
                                                 `token_end`, `entity_type`,
                                                 `entity_text`, `entity_start`,
                                                 `entity_end`, `entity_score`,
                                                 `num_entities` (see
                                                 `TaggerSignatures`)
==================  ===========================  =================================

Raw text is padded per request: each batch (of sentences, or of a span
request's windows) is padded to its longest row, never past `seq_length`, so
a 25-token sentence costs 25 positions, not 128; outputs at real positions are
those of the fixed-length model. Per-position outputs are as long as the
request's longest row. `serve_tokenized` takes any width up to the model's
max_position_embeddings.

Span answers come from the whole context: `bert_tf.serving.DocumentAnswers` cuts it
into `doc_stride` windows as run_squad.py does, scores every window in one
batch, and applies the original's n-best and max-context rules (and the
SQuAD 2.0 null score for a v2 model). `answer_start`/`answer_end` are UTF-8
byte offsets (end exclusive) in the context; `start_logits`/`end_logits` and
`token_start`/`token_end` are given per context word piece (from the window
where it has the most context; -1 offsets past a context's last piece), so a
client can run its own search.

`dtype="bfloat16"` or `"float16"` exports a graph that computes in that
precision (LayerNorm statistics and the outputs stay float32).

The version is an integer: 1 for a new `export_dir`, else one more than the
highest version there. `export_dir/batching_parameters.txt` (written when
absent) is an example `--batching_parameters_file` for the model server's
`--enable_batching`.

The version directory is written under a temporary name and renamed, so a
model server that polls `export_dir` never sees half a model. It also holds
`assets.extra/tf_serving_warmup_requests` (one request per signature, replayed
by the server before it serves) and `assets.extra/bert_tf_export.json` (what
was exported, with labels and signature names); each weight is stored once in
`variables/`. The Keras model (for `keras.saving.load_model` after
`import bert_tf`) goes beside the version directory, `export_dir/<version>.keras`,
so the model server neither loads nor ships it (TF Serving serves only
numeric directories).
"""

import contextlib
import json
import os
import re
import socket
import uuid

import keras
import tensorflow as tf
from absl import logging

from bert_tf.errors import UserInputError
from bert_tf.serving import warmup
from bert_tf.serving.registry import signature_module_for
from bert_tf.text.preprocessing import BertPreprocessor

WARMUP_FILE = os.path.join("assets.extra", "tf_serving_warmup_requests")
METADATA_FILE = os.path.join("assets.extra", "bert_tf_export.json")
# The Keras model is saved under this name, then moved beside the version.
KERAS_FILE = "model.keras"
BATCHING_FILE = "batching_parameters.txt"
SERVING_DTYPES = ("float32", "bfloat16", "float16")
# An example for TF Serving's --enable_batching (see docs/guides/serving.md):
# requests that arrive within 2 ms are merged into batches of up to 32 rows.
# pad_variable_length_inputs lets serve_tokenized requests of different widths
# share a batch (raw strings have no width).
BATCHING_PARAMETERS = """\
max_batch_size { value: 32 }
batch_timeout_micros { value: 2000 }
max_enqueued_batches { value: 100 }
num_batch_threads { value: %d }
pad_variable_length_inputs: true
"""


# The parameters its errors name: the tools' --export_dir, --export_version.
_EXPORT_ARGUMENTS = {"export_dir": "export_dir", "version": "export_version"}


def export_saved_model(
    model,
    export_dir,
    vocab_file,
    do_lower_case,
    seq_length,
    tokenizer="bert",
    dtype="float32",
    padding="longest",
    version=None,
    save_keras=True,
    strip_accents=None,
    tokenize_chinese_chars=None,
    **family_options,
):
    """Exports `model` for TF Serving; returns the version directory.

    Args:
        model: a model of a registered family (`BertClassifier`,
            `BertSpanLabeler`, `BertTokenClassifier`, `BertEncoder`, ...;
            see `bert_tf.serving.register`).
        export_dir: the model's base directory (TF Serving's `model_base_path`).
        vocab_file, do_lower_case: the tokenization the model was trained with.
        seq_length: the longest packed input of the raw-text signature (the
            span model's window length).
        tokenizer: "bert" (TF Serving >= 2.3) or "fast_bert" (>= 2.12).
        dtype: "float32", "bfloat16" or "float16": the precision the exported
            graph computes in; outputs are float32 either way.
        padding: "longest" (each request padded to its longest row) or
            "max_length" (always `seq_length`, as before).
        version: integer version; default: 1 for a new `export_dir`, else one
            more than the highest existing version.
        strip_accents, tokenize_chinese_chars: the tokenizer's other
            switches (`BertPreprocessor`); default: the original's, or what a
            tokenizer.json `vocab_file` says.
        save_keras: also write the Keras model (as given, float32) beside
            the version directory, as `export_dir/<version>.keras`
            (`keras_path`).
        **family_options: the options of the model's `SignatureModule`:
            classifier `label_list` (label strings in label-id order, default
            "0", "1", ...) and `text_pair`; tagger `label_list` (its IOB2
            tags, required); encoder `text_pair`; span `span_options` (a
            `SpanOptions`) or its fields (`max_query_length`, `doc_stride`,
            ...).

    Example:
    >>> export_saved_model(classifier, "/models/mrpc", "vocab.txt", True, 128,
    ...                    label_list=["0", "1"], text_pair=True)
    '/models/mrpc/1'
    """
    if dtype not in SERVING_DTYPES:
        raise ValueError(f"dtype must be one of {SERVING_DTYPES}, got {dtype!r}")
    check_export_dir(export_dir, version)
    preprocessor = BertPreprocessor(
        vocab_file,
        do_lower_case,
        seq_length,
        tokenizer=tokenizer,
        padding=padding,
        strip_accents=strip_accents,
        tokenize_chinese_chars=tokenize_chinese_chars,
        name="preprocessor",
    )
    serving_model = model if dtype == "float32" else copy_in_dtype(model, dtype)
    module = signature_module_for(serving_model, preprocessor, **family_options)
    module.check_fits_model(vocab_file, seq_length)

    archive = keras.export.ExportArchive()
    # Only the preprocessor (its vocabulary tables) is tracked: tracking the
    # model too would store each weight twice, once per Keras variable and
    # once per tf.Variable the endpoints capture (which alone are saved).
    archive.track(preprocessor)
    for resource in module.trackables():
        archive.track(resource)
    for name, (function, specs) in module.endpoints().items():
        archive.add_endpoint(name, function, specs)

    tf.io.gfile.makedirs(export_dir)
    remove_abandoned_exports(export_dir)
    temp_dir = os.path.join(export_dir, _temp_name(version or 0))
    keras_temp = temp_dir + ".keras"
    try:
        archive.write_out(temp_dir, verbose=False)
        warmup.write_warmup_requests(
            os.path.join(temp_dir, WARMUP_FILE), module.warmup_requests()
        )
        metadata = {
            **module.metadata(),
            "seq_length": seq_length,
            "padding": padding,
            "dtype": dtype,
            "do_lower_case": bool(do_lower_case),
            "tokenizer": tokenizer,
            "vocab_size": preprocessor.vocab_size,
        }
        with tf.io.gfile.GFile(os.path.join(temp_dir, METADATA_FILE), "w") as f:
            json.dump(metadata, f, indent=2)
        if save_keras:
            model.save(os.path.join(temp_dir, KERAS_FILE))
            # Out of the served directory: a model server would load (and a
            # deployment ship) it with the SavedModel.
            tf.io.gfile.rename(os.path.join(temp_dir, KERAS_FILE), keras_temp)
        final_dir = publish_version(
            export_dir, temp_dir, version, keras_temp if save_keras else None
        )
    finally:
        if tf.io.gfile.exists(temp_dir):
            tf.io.gfile.rmtree(temp_dir)
        if tf.io.gfile.exists(keras_temp):
            tf.io.gfile.remove(keras_temp)
    write_batching_parameters(export_dir)
    logging.info("Exported the %s SavedModel to %s", module.family, final_dir)
    return final_dir


def publish_version(export_dir, temp_dir, version=None, keras_file=None):
    """Renames the finished `temp_dir` to `export_dir/<version>` (and
    `keras_file` to its `keras_path`); returns the version directory.

    Exports to one `export_dir` may run at once: the choice of the version
    and the rename happen under a lock on `export_dir`, so two of them never
    take one version. `version` None: the next free one (at
    publishing time); an explicit version another export has published
    meanwhile is a `UserInputError`.
    """
    with _export_dir_lock(export_dir):
        version = _next_version(export_dir, version)
        final_dir = os.path.join(export_dir, str(version))
        if tf.io.gfile.exists(final_dir):
            raise UserInputError(
                f"export_dir={export_dir}: version {version} already exists "
                f"({final_dir}; another export wrote it meanwhile); choose another "
                "version=, or leave it out for the next free one",
                argument=_EXPORT_ARGUMENTS,
            )
        tf.io.gfile.rename(temp_dir, final_dir)
        if keras_file:
            tf.io.gfile.rename(keras_file, keras_path(final_dir), overwrite=True)
    return final_dir


@contextlib.contextmanager
def _export_dir_lock(export_dir):
    """An exclusive `flock` on the `export_dir` directory itself (local
    paths; no lock file is left in the model's base path), held while a
    version is chosen and published; waits for the holder."""
    if "://" in str(export_dir):
        yield
        return
    import fcntl

    descriptor = os.open(export_dir, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def keras_path(version_dir):
    """Where `export_saved_model` writes the Keras model of `version_dir`:
    `export_dir/<version>.keras`, beside the version directory."""
    return os.path.normpath(version_dir) + ".keras"


def copy_in_dtype(model, dtype):
    """A copy of `model` whose weights and computations are in `dtype`
    ("bfloat16" or "float16"); its LayerNorms keep float32 as in mixed
    precision training. Storing the weights in `dtype` (rather than casting
    float32 weights on every call, as a mixed policy does) keeps the cast out
    of each request's latency."""
    # Models (and the encoder inside a task model) keep their dtype policy in
    # their config: serve in `dtype` instead.
    config = _with_dtype_policy(model.get_config(), dtype)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype)
    try:
        copy = type(model).from_config(config)
    finally:
        keras.config.set_dtype_policy(previous)
    copy.set_weights(model.get_weights())
    return copy


def _with_dtype_policy(config, dtype):
    """`config` with every nested "dtype" entry set to `dtype`."""
    if isinstance(config, dict):
        return {
            key: dtype if key == "dtype" else _with_dtype_policy(value, dtype)
            for key, value in config.items()
        }
    if isinstance(config, list):
        return [_with_dtype_policy(value, dtype) for value in config]
    return config


def write_batching_parameters(export_dir):
    """`export_dir/batching_parameters.txt`, unless there is one already
    (which may hold the operator's own settings)."""
    path = os.path.join(export_dir, BATCHING_FILE)
    if tf.io.gfile.exists(path):
        return path
    with tf.io.gfile.GFile(path, "w") as f:
        f.write(BATCHING_PARAMETERS % (os.cpu_count() or 1))
    return path


def check_export_dir(export_dir, version=None):
    """Raises UserInputError if an export to `export_dir` (at `version`) must
    fail: call it before training, so that a run does not end in it.

    `export_dir` must be a directory or not exist; `version`, if given, a
    positive integer (TF Serving loads only those) not already exported.
    """
    if version is not None and (
        isinstance(version, bool) or not isinstance(version, int) or version < 1
    ):
        raise UserInputError(
            f"version={version}: must be a positive integer (TF Serving "
            "loads only version directories named 1, 2, ...)",
            argument=_EXPORT_ARGUMENTS,
        )
    if tf.io.gfile.exists(export_dir) and not tf.io.gfile.isdir(export_dir):
        raise UserInputError(
            f"export_dir={export_dir}: exists and is not a directory",
            argument=_EXPORT_ARGUMENTS,
        )
    if version is not None and tf.io.gfile.exists(
        os.path.join(export_dir, str(version))
    ):
        raise UserInputError(
            f"export_dir={export_dir}: version {version} already exists "
            f"({os.path.join(export_dir, str(version))}); choose another "
            "version=, or leave it out for the next free one",
            argument=_EXPORT_ARGUMENTS,
        )


def remove_abandoned_exports(export_dir):
    """Deletes the temporary folders of exports whose process is gone (on
    this host): a killed export leaves a model-sized `.tmp-…` folder."""
    host = socket.gethostname()
    for name in tf.io.gfile.listdir(export_dir):
        name = name.rstrip("/")
        match = _TEMP_NAME.fullmatch(name)
        if not match or match["host"] != host or _pid_alive(int(match["pid"])):
            continue
        path = os.path.join(export_dir, name)
        logging.warning("Removing %s, left by an export that did not finish", path)
        if tf.io.gfile.isdir(path):
            tf.io.gfile.rmtree(path)
        else:
            tf.io.gfile.remove(path)


# .tmp-<version>-<host>-<pid>-<uuid>: the host and pid tell whether the
# export writing it is still running.
_TEMP_NAME = re.compile(r"\.tmp-\d+-(?P<host>.+)-(?P<pid>\d+)-[0-9a-f]{32}(\.keras)?")


def _temp_name(version):
    return f".tmp-{version}-{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex}"


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def _next_version(export_dir, version):
    existing = [
        int(name)
        for name in tf.io.gfile.listdir(export_dir)
        if name.strip("/").isdigit()
    ]
    if version is None:
        version = max([0, *existing]) + 1
    return int(version)
