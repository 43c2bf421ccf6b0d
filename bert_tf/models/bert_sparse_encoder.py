"""`BertSparseEncoder`: texts to vocabulary-wide sparse weights (SPLADE)."""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.checkpoints.name_map import encoder_variables
from bert_tf.checkpoints.name_map import masked_lm_variables
from bert_tf.checkpoints.sentence_transformers_checkpoint import SIMILARITY_FUNCTIONS
from bert_tf.checkpoints.sentence_transformers_checkpoint import (
    sentence_transformers_dir_of,
)
from bert_tf.checkpoints.sparse_encoder_checkpoint import SPLADE_ROUTE
from bert_tf.checkpoints.sparse_encoder_checkpoint import STATIC_ROUTE
from bert_tf.checkpoints.sparse_encoder_checkpoint import TASKS
from bert_tf.checkpoints.sparse_encoder_checkpoint import read_sparse_encoder
from bert_tf.checkpoints.sparse_encoder_checkpoint import save_sparse_encoder
from bert_tf.errors import UserInputError
from bert_tf.layers.masked_lm_head import MaskedLMHead
from bert_tf.layers.sparse_static_embedding import SparseStaticEmbedding
from bert_tf.layers.splade_pooling import SpladePooling
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
from bert_tf.text.preprocessing import BertPreprocessor

_ROUTES = (SPLADE_ROUTE, STATIC_ROUTE, None)


def _checked_max_active_dims(max_active_dims):
    if max_active_dims is None:
        return None
    if isinstance(max_active_dims, bool) or not isinstance(max_active_dims, int):
        raise TypeError(f"max_active_dims must be an int, got {max_active_dims!r}")
    if max_active_dims < 1:
        raise ValueError(
            f"max_active_dims must be a positive integer, got {max_active_dims}"
        )
    return max_active_dims


def keep_top_weights(weights, k):
    """`weights` [batch, vocab] with all but each row's `k` largest (by
    absolute value) set to 0, as sentence-transformers' `max_active_dims`."""
    k = tf.minimum(k, tf.shape(weights)[1])
    _, indices = tf.math.top_k(tf.abs(weights), k)
    rows = tf.tile(tf.range(tf.shape(weights)[0])[:, tf.newaxis], [1, k])
    return tf.scatter_nd(
        tf.stack([rows, indices], -1),
        tf.gather(weights, indices, batch_dims=1),
        tf.shape(weights),
    )


def _dense_rows(embeddings):
    """float32 [n, vocab] numpy rows of dense or `tf.sparse` embeddings."""
    if isinstance(embeddings, tf.SparseTensor):
        embeddings = tf.sparse.to_dense(embeddings)
    array = np.asarray(embeddings, np.float32)
    return array[None, :] if array.ndim == 1 else array


@keras.saving.register_keras_serializable(package="bert_tf")
class BertSparseEncoder(TextEncoderMixin, BertTaskModel):
    """A learned sparse (SPLADE) text encoder: encoder, masked-LM head,
    SPLADE pooling (sentence-transformers' `SparseEncoder`).

    The model maps the int32 encoder inputs to float32 weights [batch,
    vocab_size]: for each vocabulary entry, log(1 + ReLU(logit)) of the
    masked-LM head pooled over the text's tokens by max or sum; most are 0.
    `encode` takes raw strings. An inference-free model (sentence-
    transformers' `Router` with a `SparseStaticEmbedding` query route) also
    holds `static_embedding`: queries then get one learned weight per token
    they contain, without running the network.

    `from_checkpoint` reads a SparseEncoder directory as sentence-transformers
    saves it (or a BERT checkpoint with its masked-LM head: max pooling, as
    sentence-transformers makes of one); `save` writes one back. A `.keras`
    file carries the vocabulary and the static weights.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        preprocessor: `BertPreprocessor` (`padding="longest"`), or None (no
            `encode`).
        pooling_strategy: "max" or "sum" over the tokens.
        activation_function: "relu" (log1p(relu(x))) or "log1p_relu"
            (log1p once more).
        prompts: {name: text} prepended by `encode` (see `encode_query`).
        default_prompt_name: the prompt `encode` uses when none is named.
        similarity_fn_name: "dot" (default), "cosine", "euclidean" or
            "manhattan".
        max_active_dims: int or None. Keep only each vector's largest
            weights (`encode`'s default).
        routes: {"default", "query", "document": "splade", "static" or None}:
            what `encode`, `encode_query` and `encode_document` run (None:
            that task has no route). Default: "splade" for all.
        query_preprocessor: the static route's tokenizer (its own vocabulary
            file and settings); default: `preprocessor`.
        static_max_length: int or None. Tokens the static route keeps.
        static_frozen: bool. The static weights are not trained.
        dtype: optional dtype policy for every layer; weights stay float32.

    Example:
    >>> model = bert_tf.BertSparseEncoder.from_checkpoint("splade-dir")
    >>> weights = model.encode(["A man is playing a guitar."])
    >>> model.decode(weights[0], top_k=3)
    [('guitar', 2.1), ('playing', 1.7), ('man', 1.2)]
    """

    default_name = "bert_sparse_encoder"
    directory_writer = staticmethod(save_sparse_encoder)
    # SPLADE reads the token logits, never the tanh pooler.
    reads_pooled_output = False
    preprocessor_keys = ("preprocessor", "query_preprocessor")
    # encode_query/encode_document pass the task: the Router's route.
    encodes_tasks = True

    def __init__(
        self,
        encoder,
        preprocessor=None,
        pooling_strategy="max",
        activation_function="relu",
        prompts=None,
        default_prompt_name=None,
        similarity_fn_name=None,
        max_active_dims=None,
        routes=None,
        query_preprocessor=None,
        static_max_length=None,
        static_frozen=False,
        **kwargs,
    ):
        prompts = checked_prompts(
            prompts, default_prompt_name, similarity_fn_name, SIMILARITY_FUNCTIONS
        )
        routes = {**dict.fromkeys(TASKS, SPLADE_ROUTE), **(routes or {})}
        if set(routes) != set(TASKS) or not set(routes.values()) <= set(_ROUTES):
            raise ValueError(
                f"routes={routes!r}: expected {{{', '.join(TASKS)}: one of {_ROUTES}}}"
            )
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder)
            config = encoder.config
            # === Layers ===
            masked_lm = MaskedLMHead.for_encoder(encoder, name="masked_lm")
            pooling = SpladePooling(
                pooling_strategy, activation_function, name="splade_pooling"
            )
            static_embedding = None
            if STATIC_ROUTE in routes.values():
                static_embedding = SparseStaticEmbedding(
                    config.vocab_size,
                    max_length=static_max_length,
                    trainable=not static_frozen,
                    name="static_embedding",
                )
            # === Functional model ===
            inputs, encoded = encode_inputs(encoder)
            logits = masked_lm(encoded["sequence_output"])  # every position
            outputs = pooling(logits, inputs["input_mask"])
            self._init_graph(encoder, inputs, outputs, **kwargs)
        # === Config ===
        self._set_text_config(
            preprocessor, prompts, default_prompt_name, similarity_fn_name
        )
        self.max_active_dims = _checked_max_active_dims(max_active_dims)
        self.routes = routes
        self.query_preprocessor = query_preprocessor
        self.masked_lm = masked_lm
        self.pooling = pooling
        self.static_embedding = static_embedding
        self.pooling_strategy = pooling_strategy
        self.activation_function = activation_function
        self.static_max_length = static_max_length
        self.static_frozen = bool(static_frozen)

    @property
    def vocab_size(self):
        """The width of the vectors: the vocabulary's size."""
        return self.encoder.config.vocab_size

    def task_arguments(self):
        return {
            "pooling_strategy": self.pooling_strategy,
            "activation_function": self.activation_function,
            "prompts": self.prompts,
            "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name,
            "max_active_dims": self.max_active_dims,
            "routes": self.routes,
            "static_max_length": self.static_max_length,
            "static_frozen": self.static_frozen,
        }

    def checkpoint_variables(self):
        return {
            **encoder_variables(self.encoder),
            **masked_lm_variables(self.masked_lm),
        }

    # --- raw text -------------------------------------------------------------

    def route(self, task=None):
        """ "splade" or "static": what encoding for `task` (None, "query" or
        "document") runs, as sentence-transformers' Router resolves it.

        Raises:
            ValueError: the model has no route for `task`.
        """
        key = "default" if task is None else task
        if key not in self.routes:
            raise ValueError(f"task={task!r}: expected None, 'query' or 'document'")
        if self.routes[key] is None:
            raise ValueError(f"task={task!r}: the model has no route for it")
        return self.routes[key]

    def embed_strings(
        self, texts, prompt="", task=None, max_active_dims=None, preprocessor=None
    ):
        """Weights [batch, vocab_size] of a string tensor [batch], in the graph,
        with `prompt` (a Python str) prepended to each text, by `task`'s route,
        kept to `max_active_dims` (default: the model's) per row.
        `preprocessor`: the SPLADE route's tokenizer (an export's, of the
        same vocabulary); default: the model's."""
        texts = self._prompted_texts(texts, prompt, "encode text")
        if self.route(task) == STATIC_ROUTE:
            tokenizer = self.query_preprocessor or preprocessor or self.preprocessor
            weights = self.static_embedding(tokenizer.tokenize(texts))
        else:
            preprocessor = preprocessor or self.preprocessor
            weights = self(preprocessor(texts), training=False)
        max_active_dims = max_active_dims or self.max_active_dims
        if max_active_dims:
            weights = keep_top_weights(weights, max_active_dims)
        return weights

    def encode(
        self,
        sentences,
        *,
        prompt_name=None,
        prompt=None,
        batch_size=DEFAULT_BATCH_SIZE,
        show_progress_bar=None,
        convert_to_sparse_tensor=False,
        max_active_dims=None,
        task=None,
        progress=None,
    ):
        """Encodes `sentences`; returns float32 [len(sentences), vocab_size] in
        their order, as sentence-transformers' `encode` (which returns them
        as a torch sparse tensor).

        Args:
            sentences: list of str (or one str: returns [vocab_size]).
            prompt_name: a key of the model's `prompts`; default: its
                `default_prompt_name`.
            prompt: the prompt text itself (wins over `prompt_name`).
            batch_size: int > 0. Sentences per forward pass (longest first).
            show_progress_bar: bool. A progress bar on stderr.
            convert_to_sparse_tensor: return a `tf.SparseTensor` instead.
            max_active_dims: keep each row's largest weights only; default:
                the model's `max_active_dims`.
            task: None, "query" or "document": the Router's route (what
                `encode_query`/`encode_document` pass).
            progress: optional callable(done, total) called after each batch.

        Raises:
            ValueError: `batch_size` or `max_active_dims` not positive, an
                unknown `prompt_name`, a task the model has no route for.
            TypeError: a sentence that is not a str.
        """
        single, texts = checked_texts(sentences, batch_size)
        prompt = self.resolve_prompt(prompt, prompt_name)
        route = self.route(task)
        max_active_dims = _checked_max_active_dims(max_active_dims)
        key = (prompt, route, max_active_dims)
        if key not in self._encode_functions:
            # One trace per prompt and route: batch and length dims are None.
            self._encode_functions[key] = tf.function(
                lambda batch: self.embed_strings(batch, prompt, task, max_active_dims),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        output = encode_in_length_order(
            texts,
            self._encode_functions[key],
            self.vocab_size,
            batch_size,
            show_progress_bar,
            progress,
        )
        if single:
            output = output[0]
        if convert_to_sparse_tensor:
            output = tf.sparse.from_dense(output)
        return output

    def similarity(self, embeddings_a, embeddings_b):
        """[len(a), len(b)] float32 scores of every pair with the model's
        `similarity_fn_name` (dot product when unset, as SparseEncoder)."""
        return similarity_matrix(
            _dense_rows(embeddings_a),
            _dense_rows(embeddings_b),
            self.similarity_fn_name or "dot",
        )

    def similarity_pairwise(self, embeddings_a, embeddings_b):
        """[n] float32 scores of row i of `embeddings_a` with row i of
        `embeddings_b` (the model's similarity function)."""
        return similarity_pairwise(
            _dense_rows(embeddings_a),
            _dense_rows(embeddings_b),
            self.similarity_fn_name or "dot",
        )

    # --- reading the vectors --------------------------------------------------

    def vocabulary(self):
        """The tokens by id (the preprocessor's vocab.txt lines)."""
        if self.preprocessor is None:
            raise ValueError("a model without a preprocessor has no vocabulary")
        text = self.preprocessor._require_vocabulary().decode("utf-8")
        return [line.strip() for line in text.splitlines()]

    @staticmethod
    def token_weights(embeddings, top_k=None):
        """The non-zero entries of each vector, largest first: a list of
        `(token_ids int64 [k], weights float32 [k])`, one per row (one pair for
        a single [vocab_size] vector), cut to `top_k` when given."""
        if top_k is not None and top_k <= 0:
            raise ValueError(f"top_k must be a positive integer, got {top_k}")
        if isinstance(embeddings, tf.SparseTensor):
            single = embeddings.shape.rank == 1
        else:
            single = np.ndim(embeddings) == 1
        pairs = []
        for row in _dense_rows(embeddings):
            ids = np.flatnonzero(row)
            order = np.argsort(-row[ids], kind="stable")[:top_k]
            pairs.append((ids[order].astype(np.int64), row[ids[order]]))
        return pairs[0] if single else pairs

    def decode(self, embeddings, top_k=None):
        """`(token, weight)` pairs of each vector's non-zero entries, largest
        first (sentence-transformers' `decode`): a list per row, or one list
        for a single [vocab_size] vector."""
        tokens = self.vocabulary()
        pairs = self.token_weights(embeddings, top_k)

        def named(pair):
            ids, weights = pair
            return [(tokens[i], float(w)) for i, w in zip(ids, weights, strict=True)]

        if isinstance(pairs, tuple):
            return named(pairs)
        return [named(pair) for pair in pairs]

    @staticmethod
    def sparsity(embeddings):
        """{"active_dims": mean non-zeros per vector, "sparsity_ratio": mean
        share of zeros}, as sentence-transformers' `sparsity`."""
        rows = _dense_rows(embeddings)
        active = np.count_nonzero(rows, axis=1)
        return {
            "active_dims": float(active.mean()),
            "sparsity_ratio": float(1 - (active / rows.shape[1]).mean()),
        }

    # --- checkpoints ------------------------------------------------------------

    @classmethod
    def from_checkpoint(
        cls,
        path,
        config=None,
        pooling_strategy=None,
        activation_function=None,
        vocab_file=None,
        do_lower_case=None,
        max_seq_length=None,
        **kwargs,
    ):
        """The model from a sentence-transformers SparseEncoder directory, or
        from a BERT checkpoint with its masked-LM head.

        Args:
            path: a SparseEncoder directory (modules.json), or a checkpoint
                prefix or directory (`find_checkpoint`) whose masked-LM head
                (`cls/predictions/*`) the SPLADE weights come from.
            config: optional `BertConfig` (or its file) instead of the one found.
            pooling_strategy, activation_function: for a plain checkpoint
                (default "max", "relu"); a directory says its own.
            vocab_file, do_lower_case: the tokenization; default: what the
                checkpoint's files say.
            max_seq_length: longest input in tokens; default: the directory's
                (sentence-transformers: the tokenizer's model_max_length), else
                128.
            **kwargs: `prompts`, `similarity_fn_name`, `max_active_dims`, ...
                (a directory's own are the defaults); `dtype`, `name`.

        Raises:
            UserInputError: a directory with a module, route or key this model
                cannot reproduce; a checkpoint without the masked-LM head.
        """
        path = os.fspath(path) if not hasattr(path, "reader") else path
        asked_length = max_seq_length
        st_dir = sentence_transformers_dir_of(path)
        static = None
        if st_dir is not None:
            path = st_dir
            info = read_sparse_encoder(path)
            for name, given, own in (
                ("pooling_strategy", pooling_strategy, info.pooling_strategy),
                ("activation_function", activation_function, info.activation_function),
            ):
                if given is not None and given != own:
                    raise UserInputError(
                        f"{name}={given!r} differs from {path}'s own {own!r}: leave "
                        "it out to encode as the model was trained",
                        argument=name,
                    )
            files = info.checkpoint
            pooling_strategy = info.pooling_strategy
            activation_function = info.activation_function
            for key in ("prompts", "default_prompt_name", "similarity_fn_name"):
                kwargs.setdefault(key, getattr(info, key))
            kwargs.setdefault("max_active_dims", info.max_active_dims)
            kwargs.setdefault("routes", info.routes)
            max_seq_length = max_seq_length or info.max_seq_length
            static = info.static
        else:
            files = path if hasattr(path, "reader") else find_checkpoint(path)
        config, preprocessor = checkpoint_preprocessor(
            files, path, config, vocab_file, do_lower_case, max_seq_length, asked_length
        )
        if static is not None:
            tokenizer = static.tokenizer
            kwargs.setdefault(
                "query_preprocessor",
                BertPreprocessor(
                    tokenizer.vocab_file,
                    tokenizer.do_lower_case is not False,
                    preprocessor.seq_length,
                    padding="longest",
                    **tokenizer.options(),
                ),
            )
            kwargs.setdefault("static_max_length", tokenizer.model_max_length)
            kwargs.setdefault("static_frozen", static.frozen)
        model = cls(
            config,
            preprocessor=preprocessor,
            pooling_strategy=pooling_strategy or "max",
            activation_function=activation_function or "relu",
            **kwargs,
        )
        report = load_checkpoint(model, files)
        head = sorted(masked_lm_variables(model.masked_lm))
        if any(name in report.missing for name in head):
            raise UserInputError(
                f"{files.reader.path}: no masked-LM head ({head[0]}, ...): SPLADE "
                "reads its logits; use a checkpoint saved with it (BertForMaskedLM)"
            )
        model.checkpoint_load_report = report
        if model.static_embedding is not None and static is not None:
            model.static_embedding.weight.assign(static.weight)
        logging.info(
            "Sparse encoder: %s pooling, %s, max_seq_length %d, routes %s",
            model.pooling_strategy,
            model.activation_function,
            preprocessor.seq_length,
            model.routes,
        )
        return model
