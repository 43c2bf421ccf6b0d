"""`BertSentenceEncoder`: sentences to fixed-size embeddings."""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.checkpoints.sentence_transformers_checkpoint import SIMILARITY_FUNCTIONS
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    read_sentence_transformers,
)
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    save_sentence_transformers,
)
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    sentence_transformers_dir_of,
)
from bert_tf.errors import UserInputError
from bert_tf.layers.sentence_pooling import SentencePooling
from bert_tf.layers.sentence_pooling import pooling_modes
from bert_tf.metrics.similarity import similarity_matrix
from bert_tf.metrics.similarity import similarity_pairwise
from bert_tf.models.bert_encoder import global_dtype_policy
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder
from bert_tf.models.task_model import encode as encode_inputs
from bert_tf.models.text_encoder import DEFAULT_BATCH_SIZE
from bert_tf.models.text_encoder import TextEncoderMixin
from bert_tf.models.text_encoder import checked_prompts
from bert_tf.models.text_encoder import checked_texts
from bert_tf.models.text_encoder import checkpoint_preprocessor
from bert_tf.models.text_encoder import encode_in_length_order
from bert_tf.models.text_encoder import projection_layers


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSentenceEncoder(TextEncoderMixin, BertTaskModel):
    """A sentence-embedding model: encoder, pooling, optional Dense, optional
    L2 normalisation (sentence-transformers' Transformer → Pooling → Dense →
    Normalize).

    The model maps the int32 encoder inputs to float32 embeddings [batch,
    dim]; `encode` takes raw strings. `from_checkpoint` reads a
    sentence-transformers directory as it is (all-MiniLM-L6-v2, ...) or any
    BERT checkpoint with `pooling=` given; `save_sentence_transformers`
    writes one that PyTorch's `SentenceTransformer` loads. A `.keras` file
    carries the vocabulary.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        preprocessor: `BertPreprocessor` (`padding="longest"` is best: each
            batch is padded to its longest sentence), or None (no `encode`).
        pooling: "mean", "cls", "max", "mean_sqrt_len_tokens", or several
            joined by "+" (concatenated, as sentence-transformers does).
        dense_units: int or None. Width of a Dense layer after pooling.
        dense_activation: its activation ("tanh", "linear", "relu", "gelu",
            "sigmoid").
        dense_use_bias: whether it has a bias.
        normalize: bool. L2-normalise the embeddings (cosine = dot product).
        normalize_before_dense: bool. L2-normalise the pooled vector before
            the Dense layer too (sentence-transformers' Pooling, Normalize,
            Dense stack: a projection added to a normalized model).
        dtype: optional dtype policy for every layer; embeddings stay float32.

    Example:
    >>> model = bert_tf.BertSentenceEncoder.from_checkpoint("all-MiniLM-L6-v2")
    >>> model.encode(["A man is playing a guitar.", "Someone plays music."]).shape
    (2, 384)
    """

    default_name = "bert_sentence_encoder"
    directory_writer = staticmethod(save_sentence_transformers)
    # The tanh pooler is not used; a checkpoint without it loads.
    reads_pooled_output = False

    def __init__(
        self,
        encoder,
        preprocessor=None,
        pooling="mean",
        dense_units=None,
        dense_activation="tanh",
        dense_use_bias=True,
        normalize=False,
        include_prompt=True,
        prompts=None,
        default_prompt_name=None,
        similarity_fn_name=None,
        truncate_dim=None,
        normalize_before_dense=False,
        **kwargs,
    ):
        modes = pooling_modes(pooling)
        prompts = checked_prompts(
            prompts, default_prompt_name, similarity_fn_name, SIMILARITY_FUNCTIONS
        )
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder)
            # === Layers ===
            pooling_layer = SentencePooling(
                modes, include_prompt=include_prompt, name="pooling"
            )
            pooled_norm, dense, last = projection_layers(
                dense_units,
                dense_activation,
                dense_use_bias,
                normalize,
                normalize_before_dense,
                ("normalize_pooled", "normalize", "embeddings"),
            )
            # === Functional model ===
            inputs, encoded = encode_inputs(encoder)
            embeddings = pooling_layer(encoded["sequence_output"], inputs["input_mask"])
            if pooled_norm is not None:
                embeddings = pooled_norm(embeddings)
            if dense is not None:
                embeddings = dense(embeddings)
            outputs = last(embeddings)
            self._init_graph(encoder, inputs, outputs, **kwargs)
        # === Config ===
        self._set_text_config(
            preprocessor, prompts, default_prompt_name, similarity_fn_name
        )
        self.pooling = modes
        self.pooling_layer = pooling_layer
        self.dense = dense
        self.pooled_norm = pooled_norm
        self.normalize_before_dense = bool(normalize_before_dense)
        self.dense_units = dense_units
        self.dense_activation = dense_activation
        self.dense_use_bias = dense_use_bias
        self.normalize = normalize
        self.include_prompt = bool(include_prompt)
        self.output_layer = last
        self.truncate_dim = None
        self.truncate_dim = self._checked_truncate_dim(truncate_dim)

    @property
    def model_dim(self):
        """The width of the model's output, before any `truncate_dim`."""
        if self.dense_units:
            return self.dense_units
        return self.encoder.config.hidden_size * len(self.pooling)

    @property
    def embedding_dim(self):
        """The width of `encode`'s vectors (`truncate_dim` when set)."""
        return self.truncate_dim or self.model_dim

    def task_arguments(self):
        arguments = {
            "pooling": "+".join(self.pooling),
            "dense_units": self.dense_units,
            "dense_activation": self.dense_activation,
            "dense_use_bias": self.dense_use_bias,
            "normalize": self.normalize,
        }
        # Only when set: the arguments of older models (and the retrieval
        # fingerprints made from them) stay as they were.
        extra = {
            "include_prompt": self.include_prompt,
            "prompts": self.prompts,
            "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name,
            "truncate_dim": self.truncate_dim,
            "normalize_before_dense": self.normalize_before_dense,
        }
        defaults = {
            "include_prompt": True,
            "prompts": {},
            "normalize_before_dense": False,
        }
        arguments.update({k: v for k, v in extra.items() if v != defaults.get(k, None)})
        return arguments

    # --- raw text -------------------------------------------------------------

    def set_defaults(self, prompt_name=None, truncate_dim=None):
        """Makes `prompt_name` (a key of `prompts`) the default prompt and
        `truncate_dim` the width of `encode`'s vectors and of exports (None
        leaves each as it is): e.g. a query-side export of a model whose
        queries take the "query" prompt.

        Raises:
            UserInputError: naming the parameter: a prompt the model does not
                have, a width outside 1..`model_dim`.

        Example:

        ```python
        model.set_defaults(prompt_name="query", truncate_dim=128)
        model.encode(["who won?"]).shape  # (1, 128), "query" prompt first
        ```
        """
        if prompt_name is not None:
            if prompt_name not in self.prompts:
                raise UserInputError(
                    f"prompt_name={prompt_name}: the model's prompts are "
                    f"{sorted(self.prompts) or 'none'}",
                    argument="prompt_name",
                )
            self.default_prompt_name = prompt_name
        if truncate_dim is not None:
            if not 0 < truncate_dim <= self.model_dim:
                raise UserInputError(
                    f"truncate_dim={truncate_dim}: the model makes "
                    f"{self.model_dim}-dimensional embeddings",
                    argument="truncate_dim",
                )
            self.truncate_dim = self._checked_truncate_dim(truncate_dim)

    def prompt_length(self, prompt):
        """Positions a prompt takes at the start of each row ([CLS] and its
        tokens), which pooling leaves out when `include_prompt` is False."""
        if not prompt or self.include_prompt:
            return 0
        return 1 + len(self.preprocessor.python_tokenizer().tokenize(prompt))

    def embed_inputs(self, inputs, prompt_length=0, truncate_dim=None):
        """The embeddings [batch, dim] of encoder inputs, in the graph: the
        model, with the first `prompt_length` positions left out of pooling,
        cut to `truncate_dim` (default: the model's) columns."""
        if prompt_length:
            sequence = self.encoder(inputs, training=False)["sequence_output"]
            mask = inputs["input_mask"]
            width = tf.shape(mask)[1]
            kept = tf.range(width) >= prompt_length
            mask = mask * tf.cast(kept, mask.dtype)[tf.newaxis, :]
            embeddings = self.pooling_layer(sequence, mask)
            if self.pooled_norm is not None:
                embeddings = self.pooled_norm(embeddings)
            if self.dense is not None:
                embeddings = self.dense(embeddings)
            embeddings = self.output_layer(embeddings)
        else:
            embeddings = self(inputs, training=False)
        embeddings = tf.cast(embeddings, tf.float32)
        truncate_dim = truncate_dim or self.truncate_dim
        if truncate_dim:
            embeddings = embeddings[:, :truncate_dim]
        return embeddings

    def embed_strings(self, texts, prompt="", truncate_dim=None):
        """Embeddings [batch, dim] of a string tensor [batch], in the graph,
        with `prompt` (a Python str) prepended to each text."""
        texts = self._prompted_texts(texts, prompt, "embed text")
        return self.embed_inputs(
            self.preprocessor(texts), self.prompt_length(prompt), truncate_dim
        )

    def encode(
        self,
        sentences,
        batch_size=DEFAULT_BATCH_SIZE,
        show_progress_bar=None,
        normalize_embeddings=False,
        convert_to_numpy=True,
        convert_to_tensor=False,
        prompt_name=None,
        prompt=None,
        truncate_dim=None,
        progress=None,
    ):
        """Embeds `sentences`; returns float32 [len(sentences), dim] in their
        order, as sentence-transformers' `encode`.

        Sentences are sorted by length (longest first), cut into batches of
        `batch_size`, and each batch is padded to its own longest sentence,
        so short sentences cost little.

        Args:
            sentences: list of str (or one str: returns [dim]).
            batch_size: int > 0. Sentences per forward pass.
            show_progress_bar: bool. A progress bar on stderr.
            normalize_embeddings: L2-normalise (after `truncate_dim`).
            convert_to_numpy: numpy [n, dim] (default); False: a list of
                [dim] tf.Tensors.
            convert_to_tensor: one tf.Tensor [n, dim] (wins over numpy).
            prompt_name: a key of the model's `prompts`; default: its
                `default_prompt_name`.
            prompt: the prompt text itself (wins over `prompt_name`).
            truncate_dim: keep the first columns (Matryoshka); default: the
                model's `truncate_dim`.
            progress: optional callable(done, total) called after each batch.

        Raises:
            ValueError: `batch_size` not positive, an unknown `prompt_name`,
                `truncate_dim` out of range.
            TypeError: a sentence that is not a str (bytes, None, ...).

        Example:
        >>> model.encode(["A man plays a guitar."], prompt_name="query").shape
        (1, 384)
        """
        single, texts = checked_texts(sentences, batch_size)
        prompt = self.resolve_prompt(prompt, prompt_name)
        truncate_dim = self._checked_truncate_dim(truncate_dim) or self.truncate_dim
        key = (prompt, truncate_dim)
        if key not in self._encode_functions:
            # One trace per prompt: the batch and length dims are None.
            self._encode_functions[key] = tf.function(
                lambda batch: self.embed_strings(batch, prompt, truncate_dim),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        output = encode_in_length_order(
            texts,
            self._encode_functions[key],
            truncate_dim or self.model_dim,
            batch_size,
            show_progress_bar,
            progress,
        )
        if normalize_embeddings:
            norms = np.linalg.norm(output, axis=1, keepdims=True)
            output = output / np.maximum(norms, 1e-12)
        if convert_to_tensor:
            output = tf.constant(output)
        elif not convert_to_numpy:
            output = [tf.constant(row) for row in output]
        return output[0] if single else output

    def similarity(self, embeddings_a, embeddings_b):
        """[len(a), len(b)] float32 scores of every pair with the model's
        `similarity_fn_name` (cosine when unset): cosine, dot, euclidean or
        manhattan (the last two negated distances)."""
        return similarity_matrix(
            embeddings_a, embeddings_b, self.similarity_fn_name or "cosine"
        )

    def similarity_pairwise(self, embeddings_a, embeddings_b):
        """[n] float32 scores of row i of `embeddings_a` with row i of
        `embeddings_b` (the model's similarity function)."""
        return similarity_pairwise(
            embeddings_a, embeddings_b, self.similarity_fn_name or "cosine"
        )

    # --- checkpoints ------------------------------------------------------------

    @classmethod
    def from_checkpoint(
        cls,
        path,
        config=None,
        pooling=None,
        normalize=None,
        vocab_file=None,
        do_lower_case=None,
        max_seq_length=None,
        **kwargs,
    ):
        """The model from a sentence-transformers directory, or from any BERT
        checkpoint `BertEncoder` reads with `pooling` given.

        Args:
            path: a sentence-transformers directory (modules.json beside the
                model), a run's output_dir holding one (run_similarity's
                `sentence_transformers/`), or a checkpoint prefix or directory.
            config: optional `BertConfig` (or its file) instead of the one found.
            pooling: the pooling mode(s); required unless `path` is a
                sentence-transformers directory (which says its own).
            normalize: bool; default: what the directory says (else False).
            vocab_file, do_lower_case: the tokenization; default: what the
                checkpoint's files say.
            max_seq_length: longest input in tokens (longer are cut); default:
                sentence_bert_config.json's, else 128.
            **kwargs: `dense_units`, `dense_activation`, ... for a plain BERT
                checkpoint; `dtype`, `name`.

        Raises:
            UserInputError: a sentence-transformers directory with a module or
                setting this model cannot reproduce; `pooling` missing for a
                plain checkpoint.
        """
        path = os.fspath(path) if not hasattr(path, "reader") else path
        asked_length = max_seq_length
        st_dir = sentence_transformers_dir_of(path)
        if st_dir is not None:
            path = st_dir
            info = read_sentence_transformers(path)
            if pooling is not None and pooling_modes(pooling) != info.pooling:
                raise UserInputError(
                    f"pooling={pooling!r} differs from {path}'s own "
                    f"{'+'.join(info.pooling)!r}: leave it out to pool as the "
                    "model was trained",
                    argument="pooling",
                )
            files = info.checkpoint
            pooling = info.pooling
            kwargs.setdefault("dense_units", info.dense_units)
            if info.dense_units:
                kwargs.setdefault("dense_activation", info.dense_activation)
                kwargs.setdefault("dense_use_bias", info.dense_use_bias)
            normalize = info.normalize if normalize is None else normalize
            if info.normalize_before_dense:
                kwargs.setdefault("normalize_before_dense", True)
            if info.truncate_dim is not None:
                # sentence-transformers' saved width (its encode cuts to it).
                kwargs.setdefault("truncate_dim", info.truncate_dim)
            kwargs.setdefault("include_prompt", info.include_prompt)
            kwargs.setdefault("prompts", info.prompts)
            kwargs.setdefault("default_prompt_name", info.default_prompt_name)
            kwargs.setdefault("similarity_fn_name", info.similarity_fn_name)
            max_seq_length = max_seq_length or info.max_seq_length
            do_lower_case = (
                info.do_lower_case if do_lower_case is None else do_lower_case
            )
        else:
            if pooling is None:
                raise UserInputError(
                    f"{path} is not a sentence-transformers directory (no "
                    "modules.json): pass pooling= (e.g. 'mean' or 'cls')",
                    argument="pooling",
                )
            files = path if hasattr(path, "reader") else find_checkpoint(path)
        config, preprocessor = checkpoint_preprocessor(
            files, path, config, vocab_file, do_lower_case, max_seq_length, asked_length
        )
        max_seq_length = preprocessor.seq_length
        model = cls(
            config,
            preprocessor=preprocessor,
            pooling=pooling,
            normalize=bool(normalize),
            **kwargs,
        )
        model.checkpoint_load_report = load_checkpoint(model, files)
        logging.info(
            "Sentence encoder: pooling %s, dense %s, normalize %s, max_seq_length %d",
            "+".join(model.pooling),
            model.dense_units,
            model.normalize,
            max_seq_length,
        )
        return model
