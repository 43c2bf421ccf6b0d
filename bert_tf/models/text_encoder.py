"""`TextEncoderMixin`: what the text-embedding models share.

`BertSentenceEncoder` (one vector per text), `BertMultiVectorEncoder` (one
per token) and `BertSparseEncoder` (one weight per vocabulary entry) all
carry a preprocessor in their config, sentence-transformers' prompts and
`encode`'s rules (its input checks, length-ordered batching, query and
document prompts); the first two also an optional Dense after the encoder
and `truncate_dim`. The pieces here are written once for all.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.loading import check_vocab_matches_config
from bert_tf.checkpoints.loading import checkpoint_vocabulary
from bert_tf.checkpoints.name_map import encoder_variables
from bert_tf.checkpoints.sentence_transformers_checkpoint import DENSE_BIAS
from bert_tf.checkpoints.sentence_transformers_checkpoint import DENSE_KERNEL
from bert_tf.errors import UserInputError
from bert_tf.text.preprocessing import BertPreprocessor

# sentence-transformers' default batch size for encode().
DEFAULT_BATCH_SIZE = 32
# The prompts `encode_document` tries, in sentence-transformers' order.
DOCUMENT_PROMPT_NAMES = ("document", "passage", "corpus")


class TextEncoderMixin:
    """Config, save, prompt and `encode_query`/`encode_document` rules of a
    task model with `preprocessor`, `prompts` and `default_prompt_name`
    (set by `_set_text_config`); its Dense variables and `truncate_dim`
    check for one with `dense` (a Keras Dense or None), `dense_use_bias`
    and `model_dim` (a model without them has its own
    `checkpoint_variables`).

    Listed before `BertTaskModel` among the bases, so its `get_config` adds
    the preprocessors (`preprocessor_keys`) to the task model's.
    `encode_query` and `encode_document` call `encode` with the task's
    prompt, and with `task=` when `encodes_tasks` (the model's `encode`
    then takes it).

    Example:

    ```python
    class BertSomeEncoder(TextEncoderMixin, BertTaskModel): ...
    ```
    """

    # (model, directory) -> directory: the writer of the model's directory.
    directory_writer = None
    # The attributes holding a `BertPreprocessor` (or None), saved in the config.
    preprocessor_keys = ("preprocessor",)
    # Whether `encode` takes `task` ("query"/"document": lengths, routes, ...).
    encodes_tasks = False

    def get_config(self):
        config = super().get_config()
        for key in self.preprocessor_keys:
            if getattr(self, key) is not None:
                config[key] = keras.saving.serialize_keras_object(getattr(self, key))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in cls.preprocessor_keys:
            if config.get(key) is not None:
                config[key] = keras.saving.deserialize_keras_object(config[key])
        return super().from_config(config)

    def _set_text_config(
        self, preprocessor, prompts, default_prompt_name, similarity_fn_name
    ):
        """Sets what every text encoder holds (after `_init_graph`, from
        which Keras tracks the attributes); `encode`'s traced functions
        start empty."""
        self.preprocessor = preprocessor
        self.prompts = prompts
        self.default_prompt_name = default_prompt_name
        self.similarity_fn_name = similarity_fn_name
        self._encode_functions = {}

    def save(self, filepath, *args, **kwargs):
        """A `.keras`/`.h5` path: Keras' `save`; any other path: a
        sentence-transformers directory of the model's kind
        (`save_sentence_transformers`), as sentence-transformers' own
        `save(path)` writes."""
        if str(filepath).endswith((".keras", ".h5")):
            return super().save(filepath, *args, **kwargs)
        return self.save_sentence_transformers(filepath)

    def save_sentence_transformers(self, directory):
        """Writes the model as the sentence-transformers directory of its
        kind (the class's `directory_writer`), which sentence-transformers
        and `from_checkpoint` read back; returns `directory`."""
        if self.preprocessor is None:
            raise ValueError("a model without a preprocessor has no vocabulary to save")
        return type(self).directory_writer(self, directory)

    def checkpoint_variables(self):
        names = encoder_variables(self.encoder)
        if self.dense is not None:
            names[DENSE_KERNEL] = self.dense.kernel
            if self.dense_use_bias:
                names[DENSE_BIAS] = self.dense.bias
        return names

    def _checked_truncate_dim(self, truncate_dim):
        if truncate_dim is None:
            return None
        if isinstance(truncate_dim, bool) or not isinstance(truncate_dim, int):
            raise TypeError(f"truncate_dim must be an int, got {truncate_dim!r}")
        if not 0 < truncate_dim <= self.model_dim:
            raise ValueError(
                f"truncate_dim={truncate_dim} must be in 1..{self.model_dim} (the "
                "model's vector width)"
            )
        return truncate_dim

    def resolve_prompt(self, prompt=None, prompt_name=None):
        """The prompt text `encode` prepends: `prompt`, else
        `prompts[prompt_name]`, else the default prompt's, else ""
        (sentence-transformers' rule)."""
        if prompt is not None:
            if not isinstance(prompt, str):
                raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
            return prompt
        if prompt_name is not None:
            if prompt_name not in self.prompts:
                raise ValueError(
                    f"prompt_name={prompt_name!r} is not one of the model's prompts "
                    f"{sorted(self.prompts)}"
                )
            return self.prompts[prompt_name]
        if self.default_prompt_name is not None:
            return self.prompts.get(self.default_prompt_name) or ""
        return ""

    def _prompted_texts(self, texts, prompt, purpose):
        """`texts` (a string tensor) with `prompt` (a Python str) prepended,
        in the graph; a model without a preprocessor cannot `purpose`."""
        if self.preprocessor is None:
            raise ValueError(
                f"this {type(self).__name__} has no preprocessor: build it with "
                f"preprocessor=BertPreprocessor(...) or from_checkpoint to {purpose}"
            )
        if prompt:
            texts = tf.strings.join([tf.fill(tf.shape(texts), prompt), texts])
        return texts

    def task_prompt_name(self, task, prompt_name=None, prompt=None):
        """The prompt name `encode` gets for `task`: `prompt_name` as given
        when it or `prompt` is, else the model's "query" prompt for a query,
        its "document" (else "passage", else "corpus") prompt for a document,
        else None (sentence-transformers' `encode_query`/`encode_document`)."""
        if prompt_name is not None or prompt is not None:
            return prompt_name
        names = ("query",) if task == "query" else DOCUMENT_PROMPT_NAMES
        return next((name for name in names if name in self.prompts), None)

    def encode_query(self, sentences, prompt_name=None, prompt=None, **kwargs):
        """`encode` of queries: the model's "query" prompt (unless `prompt` or
        `prompt_name` is given), and for a model whose `encode` takes a task
        the query's length, expansion or route."""
        return self._encode_task("query", sentences, prompt_name, prompt, kwargs)

    def encode_document(self, sentences, prompt_name=None, prompt=None, **kwargs):
        """`encode` of documents: the model's "document" (else "passage",
        "corpus") prompt unless `prompt` or `prompt_name` is given, and for a
        model whose `encode` takes a task the document's length, skiplist or
        route."""
        return self._encode_task("document", sentences, prompt_name, prompt, kwargs)

    def _encode_task(self, task, sentences, prompt_name, prompt, kwargs):
        if self.encodes_tasks:
            kwargs = {**kwargs, "task": task}
        return self.encode(
            sentences,
            prompt_name=self.task_prompt_name(task, prompt_name, prompt),
            prompt=prompt,
            **kwargs,
        )


def projection_layers(
    dense_units, activation, use_bias, normalize, normalize_before_dense, names
):
    """`(before, dense, last)`: the layers after the encoder (or pooling)
    that sentence-transformers' Normalize, Dense, Normalize modules are, any
    of the first two None. The normalisations and `last` run in float32
    whatever the policy (as sentence-transformers returns float32).

    Args:
        names: the Keras names of the normalisation before the Dense, of the
            last one, and of `last` without normalisation (a linear
            activation); kept as they are, `.keras` files load by them.

    Raises:
        ValueError: `normalize_before_dense` without `dense_units`.
    """
    if normalize_before_dense and not dense_units:
        raise ValueError("normalize_before_dense needs dense_units")
    before = dense = None
    if normalize_before_dense:
        before = keras.layers.UnitNormalization(dtype="float32", name=names[0])
    if dense_units:
        dense = keras.layers.Dense(
            dense_units, activation=activation, use_bias=use_bias, name="dense"
        )
    if normalize:
        last = keras.layers.UnitNormalization(dtype="float32", name=names[1])
    else:
        last = keras.layers.Activation("linear", dtype="float32", name=names[2])
    return before, dense, last


def check_default_prompt(prompts, default_prompt_name):
    """Raises ValueError unless `default_prompt_name` is None or a key of
    `prompts`."""
    if default_prompt_name is not None and default_prompt_name not in prompts:
        raise ValueError(
            f"default_prompt_name={default_prompt_name!r} is not one of "
            f"prompts {sorted(prompts)}"
        )


def checked_prompts(prompts, default_prompt_name, similarity_fn_name, similarities):
    """`prompts` as a dict (None: {}), checked with the constructor's other
    prompt and scoring arguments.

    Raises:
        ValueError: a `default_prompt_name` that is not one of `prompts`, a
            `similarity_fn_name` not None nor one of `similarities`.
    """
    prompts = dict(prompts or {})
    check_default_prompt(prompts, default_prompt_name)
    if similarity_fn_name not in (None, *similarities):
        raise ValueError(
            f"similarity_fn_name={similarity_fn_name!r}: expected one of {similarities}"
        )
    return prompts


def checked_texts(sentences, batch_size):
    """`(single, texts)` of `encode`'s arguments: whether `sentences` is one
    str, and the list of texts.

    Raises:
        TypeError: `batch_size` not an int, a sentence that is not a str.
        ValueError: `batch_size` not positive.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int):
        raise TypeError(f"batch_size must be an int, got {batch_size!r}")
    if batch_size <= 0:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size}")
    single = isinstance(sentences, str)
    texts = [sentences] if single else list(sentences)
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise TypeError(
                f"sentences[{index}] is {type(text).__name__}, not str "
                "(decode bytes first; None has no text)"
            )
    return single, texts


def length_ordered_batches(texts, batch_size, show_progress_bar=None, progress=None):
    """Yields `(rows, batch)`: the indices of `texts` in a batch of at most
    `batch_size` and those texts as a string tensor, longest first as
    sentence-transformers' `encode` sorts them (so each batch pads to
    little); the progress bar (on stderr when `show_progress_bar`) and
    `progress(done, total)` advance as each batch is done."""
    bar = None
    if show_progress_bar:
        bar = keras.utils.Progbar(len(texts), unit_name="sentence")
    # A prompt prefixes every text alike: it changes no order.
    order = np.argsort([-len(t) for t in texts], kind="stable")
    for start in range(0, len(texts), batch_size):
        rows = order[start : start + batch_size]
        yield rows, tf.constant([texts[i] for i in rows], tf.string)
        done = min(start + batch_size, len(texts))
        if bar is not None:
            bar.update(done)
        if progress is not None:
            progress(done, len(texts))


def encode_in_length_order(
    texts, encode_batch, width, batch_size, show_progress_bar=None, progress=None
):
    """float32 [len(texts), width], the rows in the order given:
    `encode_batch` (a string tensor [batch] to a [batch, width] tensor) over
    `length_ordered_batches` of `texts`."""
    output = np.zeros((len(texts), width), np.float32)
    for rows, batch in length_ordered_batches(
        texts, batch_size, show_progress_bar, progress
    ):
        output[rows] = encode_batch(batch).numpy()
    return output


def checkpoint_preprocessor(
    files, path, config, vocab_file, do_lower_case, max_seq_length, asked_length
):
    """`(config, preprocessor)` of a checkpoint's `files` (found at `path`):
    its `BertConfig` (`config` when given) and a `padding="longest"`
    `BertPreprocessor` with its vocabulary and casing (`vocab_file`,
    `do_lower_case` when given) and `max_seq_length` tokens (default 128,
    at most the model's positions).

    Raises:
        UserInputError: `asked_length` (the caller's own `max_seq_length`)
            outside [3, max_position_embeddings]; a `vocab_file` that is not
            the checkpoint's vocabulary.
    """
    config = files.load_config(config)
    vocab_file, options = checkpoint_vocabulary(files, vocab_file, path)
    # Ids past the embedding table would fail on the first such text.
    check_vocab_matches_config(vocab_file, config)
    if do_lower_case is None:
        do_lower_case = files.do_lower_case is not False
    if asked_length is not None and not (
        3 <= asked_length <= config.max_position_embeddings
    ):
        # Cut to the positions without a word, the asked length was not given.
        raise UserInputError(
            f"max_seq_length={asked_length}: must be in [3, "
            f"{config.max_position_embeddings}] (the model's "
            "max_position_embeddings)",
            argument="max_seq_length",
        )
    max_seq_length = min(max_seq_length or 128, config.max_position_embeddings)
    preprocessor = BertPreprocessor(
        vocab_file, do_lower_case, max_seq_length, padding="longest", **options
    )
    return config, preprocessor
