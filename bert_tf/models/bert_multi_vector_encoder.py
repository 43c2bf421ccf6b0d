"""`BertMultiVectorEncoder`: texts to per-token vectors (ColBERT), MaxSim."""

import os

import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf.checkpoints.loading import load_checkpoint
from bert_tf.checkpoints.multi_vector_checkpoint import EXPANSION_STRATEGIES
from bert_tf.checkpoints.multi_vector_checkpoint import MULTI_VECTOR_SIMILARITIES
from bert_tf.checkpoints.multi_vector_checkpoint import read_multi_vector_encoder
from bert_tf.checkpoints.multi_vector_checkpoint import save_multi_vector_encoder
from bert_tf.models.bert_encoder import global_dtype_policy
from bert_tf.models.task_model import BertTaskModel
from bert_tf.models.task_model import build_encoder
from bert_tf.models.task_model import encode as encode_inputs
from bert_tf.models.text_encoder import DEFAULT_BATCH_SIZE
from bert_tf.models.text_encoder import TextEncoderMixin
from bert_tf.models.text_encoder import checked_prompts
from bert_tf.models.text_encoder import checked_texts
from bert_tf.models.text_encoder import checkpoint_preprocessor
from bert_tf.models.text_encoder import length_ordered_batches
from bert_tf.models.text_encoder import projection_layers
from bert_tf.retrieval.max_sim import max_sim
from bert_tf.retrieval.max_sim import max_sim_pairwise
from bert_tf.retrieval.max_sim import pad_token_vectors
from bert_tf.text import tokenization

TASKS = (None, "query", "document")
# Documents scored at once by `similarity` (bounds its [q, d, s, t] product).
_SIMILARITY_DOCUMENTS = 256


def _ids_of(vocab, words, what):
    """The ids of `words` in `vocab` as sentence-transformers resolves them:
    a word that is no single token (it would be [UNK]) is left out."""
    ids, missing = [], []
    for word in words:
        if word in vocab:
            ids.append(vocab[word])
        else:
            missing.append(word)
    if missing:
        logging.warning(
            "%s %s are no single vocabulary tokens: left out", what, missing
        )
    return ids


@keras.saving.register_keras_serializable(package="bert_tf")
class BertMultiVectorEncoder(TextEncoderMixin, BertTaskModel):
    """A multi-vector (ColBERT-style) model: encoder, optional per-token
    Dense, optional per-token L2 normalisation; texts are scored by MaxSim
    (sentence-transformers' `MultiVectorEncoder`).

    The model maps the int32 encoder inputs to float32 token vectors
    [batch, tokens, dim]; `scoring_mask` says which of them count for a
    task. `encode_query`/`encode_document` take raw strings and return one
    [n_tokens, dim] array per text (its scored tokens), `similarity` their
    MaxSim scores. `from_checkpoint` reads a directory sentence-transformers
    saved; `save` writes one back; a `.keras` file carries the vocabulary.

    Args:
        encoder: `BertEncoder`, or a `BertConfig` to build one from.
        preprocessor: `BertPreprocessor` with `padding="longest"` (its
            `seq_length`: the longest input of a text without a task), or
            None (no `encode`).
        dense_units: int or None. Width of a per-token Dense projection.
        dense_activation, dense_use_bias: its activation and bias.
        normalize: L2-normalise each token vector (last).
        normalize_before_dense: L2-normalise before the Dense too.
        mask_module: whether the model has sentence-transformers'
            MultiVectorMask (scores expansion tokens, applies the skiplist).
        skiplist_words: tokens left out of scoring for `skiplist_tasks`.
        skiplist_tasks: "query" and/or "document" (a text without a task
            counts as a document).
        keep_only_token_ids: optional ids; documents score only these.
        query_length, document_length: token budgets of queries and
            documents ([CLS] and [SEP] included; None: `seq_length`).
        query_expansion: None, or {"strategy": "fixed"|"min", "length": n,
            "attend": bool, "token": None|str}: queries padded to n tokens
            with [MASK] (or `token`), which score (ColBERT's expansion).
        prompts, default_prompt_name: as `BertSentenceEncoder`'s.
        similarity_fn_name: "maxsim" (default) or "meanmaxsim".
        truncate_dim: keep the first columns of each token vector, then
            L2-normalise (sentence-transformers' rule).
        skiplist_ids, expansion_token_id: the resolved ids (default: looked
            up in the preprocessor's vocabulary).
        dtype: optional dtype policy for every layer; vectors stay float32.

    Example:
    >>> model = bert_tf.BertMultiVectorEncoder.from_checkpoint("colbert-dir")
    >>> q = model.encode_query(["who wrote hamlet?"])
    >>> d = model.encode_document(["Hamlet is a play by Shakespeare."])
    >>> model.similarity(q, d).shape
    (1, 1)
    """

    default_name = "bert_multi_vector_encoder"
    directory_writer = staticmethod(save_multi_vector_encoder)
    reads_pooled_output = False
    # encode_query/encode_document pass the task: lengths, expansion, mask.
    encodes_tasks = True

    def __init__(
        self,
        encoder,
        preprocessor=None,
        dense_units=None,
        dense_activation="linear",
        dense_use_bias=False,
        normalize=True,
        normalize_before_dense=False,
        mask_module=True,
        skiplist_words=(),
        skiplist_tasks=("document",),
        keep_only_token_ids=None,
        query_length=None,
        document_length=None,
        query_expansion=None,
        prompts=None,
        default_prompt_name=None,
        similarity_fn_name=None,
        truncate_dim=None,
        skiplist_ids=None,
        expansion_token_id=None,
        **kwargs,
    ):
        if preprocessor is not None and preprocessor.padding != "longest":
            raise ValueError(
                "preprocessor must pad to each batch's longest text "
                "(padding='longest'): the task lengths set the width"
            )
        if query_expansion is not None:
            query_expansion = dict(query_expansion)
            if query_expansion.get("strategy") not in EXPANSION_STRATEGIES:
                raise ValueError(
                    f"query_expansion strategy {query_expansion.get('strategy')!r}: "
                    f"expected one of {EXPANSION_STRATEGIES}"
                )
            query_expansion.setdefault("attend", False)
            query_expansion.setdefault("token", None)
        # sentence-transformers gives every MultiVectorEncoder a "query" and a
        # "document" prompt (empty unless set), so encode_query never falls
        # back to the default prompt.
        prompts = checked_prompts(
            {"query": "", "document": "", **(prompts or {})},
            default_prompt_name,
            similarity_fn_name,
            MULTI_VECTOR_SIMILARITIES,
        )
        with global_dtype_policy(kwargs.get("dtype")):
            encoder = build_encoder(encoder)
            # === Layers ===
            pre_norm, dense, last = projection_layers(
                dense_units,
                dense_activation,
                dense_use_bias,
                normalize,
                normalize_before_dense,
                (
                    "normalize_tokens_before_dense",
                    "normalize_tokens",
                    "token_embeddings",
                ),
            )
            # === Functional model ===
            inputs, encoded = encode_inputs(encoder)
            vectors = encoded["sequence_output"]
            if pre_norm is not None:
                vectors = pre_norm(vectors)
            if dense is not None:
                vectors = dense(vectors)
            outputs = last(vectors)
            self._init_graph(encoder, inputs, outputs, **kwargs)
        # === Config ===
        self._set_text_config(
            preprocessor, prompts, default_prompt_name, similarity_fn_name
        )
        self.dense = dense
        self.dense_units = dense_units
        self.dense_activation = dense_activation
        self.dense_use_bias = bool(dense_use_bias)
        self.normalize = bool(normalize)
        self.normalize_before_dense = bool(normalize_before_dense)
        self.mask_module = bool(mask_module)
        self.skiplist_words = tuple(skiplist_words)
        tasks = [skiplist_tasks] if isinstance(skiplist_tasks, str) else skiplist_tasks
        self.skiplist_tasks = tuple(tasks)
        self.keep_only_token_ids = (
            None if keep_only_token_ids is None else tuple(keep_only_token_ids)
        )
        self.query_length = query_length
        self.document_length = document_length
        self.query_expansion = query_expansion
        self.truncate_dim = None
        self.truncate_dim = self._checked_truncate_dim(truncate_dim)
        vocab = None
        if preprocessor is not None and (
            (skiplist_ids is None and self.skiplist_words)
            or (expansion_token_id is None and query_expansion is not None)
        ):
            vocab = tokenization.load_vocab(preprocessor.vocab_file)
        if skiplist_ids is None:
            skiplist_ids = (
                _ids_of(vocab, self.skiplist_words, "skiplist_words") if vocab else []
            )
        self.skiplist_ids = tuple(int(i) for i in skiplist_ids)
        if expansion_token_id is None and vocab is not None:
            token = query_expansion["token"] or "[MASK]"
            if token not in vocab:
                raise ValueError(
                    f"query_expansion token {token!r} is not in the vocabulary"
                )
            expansion_token_id = vocab[token]
        self.expansion_token_id = expansion_token_id

    @property
    def model_dim(self):
        """The width of the model's token vectors, before any `truncate_dim`."""
        return self.dense_units or self.encoder.config.hidden_size

    @property
    def embedding_dim(self):
        """The width of `encode`'s token vectors (`truncate_dim` when set)."""
        return self.truncate_dim or self.model_dim

    def task_arguments(self):
        return {
            "dense_units": self.dense_units,
            "dense_activation": self.dense_activation,
            "dense_use_bias": self.dense_use_bias,
            "normalize": self.normalize,
            "normalize_before_dense": self.normalize_before_dense,
            "mask_module": self.mask_module,
            "skiplist_words": list(self.skiplist_words),
            "skiplist_tasks": list(self.skiplist_tasks),
            "keep_only_token_ids": (
                None
                if self.keep_only_token_ids is None
                else list(self.keep_only_token_ids)
            ),
            "query_length": self.query_length,
            "document_length": self.document_length,
            "query_expansion": self.query_expansion,
            "prompts": self.prompts,
            "default_prompt_name": self.default_prompt_name,
            "similarity_fn_name": self.similarity_fn_name,
            "truncate_dim": self.truncate_dim,
            "skiplist_ids": list(self.skiplist_ids),
            "expansion_token_id": self.expansion_token_id,
        }

    # --- in the graph ---------------------------------------------------------

    def task_length(self, task):
        """A task's token budget ([CLS] and [SEP] included), as
        sentence-transformers' Transformer sets its max_length: an expanding
        query's "fixed" length, else the task's own length, else the
        model's longest input."""
        expansion = self.query_expansion if task == "query" else None
        if expansion is not None and expansion["strategy"] == "fixed":
            length = expansion["length"]
        elif task == "query":
            length = self.query_length or self.preprocessor.seq_length
        elif task == "document":
            length = self.document_length or self.preprocessor.seq_length
        else:
            length = self.preprocessor.seq_length
        return min(length, self.encoder.config.max_position_embeddings)

    def task_inputs(self, texts, task=None, prompt="", preprocessor=None):
        """`(inputs, expansion_mask)` of a string tensor [batch] for `task`
        (None, "query" or "document"), in the graph: the encoder inputs
        (each text cut to the task's length; a query padded with expansion
        tokens where the model expands queries) and a bool [batch, width]
        of the expansion positions (None without expansion). `preprocessor`:
        the tokenizer to run (an export's, of the same vocabulary); default:
        the model's."""
        if task not in TASKS:
            raise ValueError(f"task={task!r}: expected one of {TASKS}")
        texts = self._prompted_texts(texts, prompt, "embed text")
        preprocessor = preprocessor or self.preprocessor
        tokens = preprocessor.tokenize(texts)
        kept = tf.minimum(tokens.row_lengths(), self.task_length(task) - 2)
        inputs = preprocessor.pack([tokens], lengths=[kept])
        return self.expand_inputs(inputs, task)

    def expand_inputs(self, inputs, task=None):
        """`(inputs, expansion_mask)`: packed `inputs` of `task` with a
        query's expansion tokens (`task_inputs`' second half; any packer's
        inputs, e.g. a LiteRT file's)."""
        expansion = self.query_expansion if task == "query" else None
        if expansion is None:
            return inputs, None
        floor = expansion["length"]
        # "min" pads a batch of short queries up to the floor; "fixed" is
        # exactly the floor wide (its budget).
        missing = tf.maximum(floor - tf.shape(inputs["input_ids"])[1], 0)
        inputs = {k: tf.pad(v, [[0, 0], [0, missing]]) for k, v in inputs.items()}
        width = tf.shape(inputs["input_ids"])[1]
        # expand_dims, not [tf.newaxis]: LiteRT has no kernel for a strided
        # slice that adds an axis (the LiteRT export runs this graph).
        expanded = (inputs["input_mask"] == 0) & tf.expand_dims(
            tf.range(width) < floor, 0
        )
        inputs["input_ids"] = tf.where(
            expanded,
            tf.constant(self.expansion_token_id, tf.int32),
            inputs["input_ids"],
        )
        if expansion["attend"]:
            inputs["input_mask"] = tf.where(expanded, 1, inputs["input_mask"])
        return inputs, expanded

    def scoring_mask(self, inputs, task=None, expansion_mask=None):
        """bool [batch, width]: which token vectors of `inputs` count for
        `task`, as sentence-transformers' MultiVectorMask says: the real
        tokens (and a query's expansion tokens), less the skiplist's (for
        `skiplist_tasks`), and for a document only `keep_only_token_ids`."""
        ids = inputs["input_ids"]
        mask = inputs["input_mask"] > 0
        if not self.mask_module:
            return mask
        if task == "query" and expansion_mask is not None:
            mask = mask | expansion_mask

        def among(token_ids):
            table = tf.constant(token_ids, ids.dtype)
            return tf.reduce_any(tf.expand_dims(ids, -1) == table, axis=-1)

        if (task or "document") in self.skiplist_tasks and self.skiplist_ids:
            mask = mask & ~among(self.skiplist_ids)
        if task != "query" and self.keep_only_token_ids:
            mask = mask & among(self.keep_only_token_ids)
        return mask

    def embed_strings(
        self, texts, task=None, prompt="", truncate_dim=None, preprocessor=None
    ):
        """`(vectors, mask)` of a string tensor [batch], in the graph:
        float32 [batch, width, dim] token vectors (cut to `truncate_dim`
        columns and L2-normalised when set) and their bool scoring mask
        (`preprocessor`: as `task_inputs`)."""
        inputs, expanded = self.task_inputs(texts, task, prompt, preprocessor)
        return self.embed_inputs(inputs, task, expanded, truncate_dim)

    def embed_inputs(self, inputs, task=None, expansion_mask=None, truncate_dim=None):
        """`(vectors, mask)` of packed `inputs` (as `embed_strings`)."""
        vectors = tf.cast(self(inputs, training=False), tf.float32)
        truncate_dim = truncate_dim or self.truncate_dim
        if truncate_dim:
            vectors = tf.math.l2_normalize(vectors[..., :truncate_dim], axis=-1)
        return vectors, self.scoring_mask(inputs, task, expansion_mask)

    # --- raw text -------------------------------------------------------------

    def encode(
        self,
        sentences,
        prompt_name=None,
        prompt=None,
        batch_size=DEFAULT_BATCH_SIZE,
        show_progress_bar=None,
        output_value="token_embeddings",
        convert_to_numpy=True,
        normalize_embeddings=False,
        truncate_dim=None,
        task=None,
        progress=None,
    ):
        """Token vectors of `sentences`, as sentence-transformers'
        `MultiVectorEncoder.encode`: one float32 [n_tokens, dim] array per
        sentence (its scored tokens, in order), in the sentences' order.

        Args:
            sentences: list of str (or one str: returns one array).
            prompt_name, prompt: as `BertSentenceEncoder.encode`.
            batch_size: int > 0. Texts per forward pass.
            show_progress_bar: bool. A progress bar on stderr.
            output_value: "token_embeddings", or None: per text a dict of its
                unsliced "token_embeddings" [width, dim], "attention_mask"
                (the scoring mask) and "input_ids", padded to its batch.
            convert_to_numpy: numpy arrays (default); False: tf.Tensors.
            normalize_embeddings: L2-normalise each token vector.
            truncate_dim: keep the first columns, then L2-normalise;
                default: the model's.
            task: None, "query" or "document" (`encode_query` and
                `encode_document` set it): lengths, expansion and mask.
            progress: optional callable(done, total) after each batch.

        Raises:
            ValueError: `batch_size` not positive, an unknown prompt, task or
                output_value, `truncate_dim` out of range.
            TypeError: a sentence that is not a str.
        """
        if output_value not in ("token_embeddings", None):
            raise ValueError(
                f"output_value={output_value!r}: expected 'token_embeddings' or None"
            )
        if task not in TASKS:
            raise ValueError(f"task={task!r}: expected one of {TASKS}")
        single, texts = checked_texts(sentences, batch_size)
        prompt = self.resolve_prompt(prompt, prompt_name)
        truncate_dim = self._checked_truncate_dim(truncate_dim) or self.truncate_dim
        key = (task, prompt, truncate_dim)
        if key not in self._encode_functions:
            # One trace per task and prompt: batch and width dims are None.
            self._encode_functions[key] = tf.function(
                lambda batch: self.embed_strings(batch, task, prompt, truncate_dim),
                input_signature=[tf.TensorSpec([None], tf.string)],
            )
        encode_batch = self._encode_functions[key]
        outputs = [None] * len(texts)
        for rows, batch in length_ordered_batches(
            texts, batch_size, show_progress_bar, progress
        ):
            if output_value is None:
                inputs, _ = self.task_inputs(batch, task, prompt)
                vectors, mask = encode_batch(batch)
                ids = inputs["input_ids"].numpy()
            else:
                vectors, mask = encode_batch(batch)
            vectors, mask = vectors.numpy(), mask.numpy()
            for j, row in enumerate(rows):
                if output_value is None:
                    outputs[row] = {
                        "token_embeddings": vectors[j],
                        "attention_mask": mask[j],
                        "input_ids": ids[j],
                    }
                    continue
                kept = vectors[j][mask[j]]
                if normalize_embeddings:
                    norms = np.linalg.norm(kept, axis=-1, keepdims=True)
                    kept = kept / np.maximum(norms, 1e-12)
                outputs[row] = kept if convert_to_numpy else tf.constant(kept)
        return outputs[0] if single else outputs

    def _length_normalize(self, length_normalize):
        if length_normalize is None:
            return self.similarity_fn_name == "meanmaxsim"
        return bool(length_normalize)

    def similarity(self, queries, documents, length_normalize=None):
        """float32 [len(queries), len(documents)] MaxSim scores (divided by
        each query's token count for "meanmaxsim", or when
        `length_normalize`) of `encode`'s outputs: lists of [n_tokens, dim]
        arrays, or one such array (a batch of one)."""
        q, q_mask = pad_token_vectors(queries)
        d, d_mask = pad_token_vectors(documents)
        if not len(q) or not len(d):
            return np.zeros((len(q), len(d)), np.float32)
        normalize = self._length_normalize(length_normalize)
        scores = [
            max_sim(
                q,
                q_mask,
                d[start : start + _SIMILARITY_DOCUMENTS],
                d_mask[start : start + _SIMILARITY_DOCUMENTS],
                normalize,
            ).numpy()
            for start in range(0, len(d), _SIMILARITY_DOCUMENTS)
        ]
        return np.concatenate(scores, axis=1)

    def similarity_pairwise(self, queries, documents, length_normalize=None):
        """float32 [n] MaxSim of query i with document i."""
        q, q_mask = pad_token_vectors(queries)
        d, d_mask = pad_token_vectors(documents)
        if len(q) != len(d):
            raise ValueError(
                f"{len(q)} queries and {len(d)} documents: pairs need as many"
            )
        if not len(q):
            return np.zeros((0,), np.float32)
        return max_sim_pairwise(
            q, q_mask, d, d_mask, self._length_normalize(length_normalize)
        ).numpy()

    # --- checkpoints ------------------------------------------------------------

    @classmethod
    def from_checkpoint(
        cls,
        path,
        config=None,
        vocab_file=None,
        do_lower_case=None,
        max_seq_length=None,
        **kwargs,
    ):
        """The model of a directory sentence-transformers saved as a
        `MultiVectorEncoder`.

        Args:
            path: the directory (modules.json, config_sentence_transformers.json
                with model_type "MultiVectorEncoder").
            config: optional `BertConfig` (or its file) instead of the one found.
            vocab_file, do_lower_case: the tokenization; default: the
                directory's.
            max_seq_length: longest input of a text without a task; default:
                the directory's (its tokenizer's model_max_length).
            **kwargs: constructor arguments to override (`query_length`,
                `truncate_dim`, ...); `dtype`, `name`.

        Raises:
            UserInputError: a module, key or value this model cannot reproduce
                (one line naming the file and the key).
        """
        path = os.fspath(path)
        info = read_multi_vector_encoder(path)
        config, preprocessor = checkpoint_preprocessor(
            info.checkpoint,
            path,
            config,
            vocab_file,
            info.checkpoint.do_lower_case if do_lower_case is None else do_lower_case,
            max_seq_length or info.max_seq_length,
            max_seq_length,
        )
        arguments = {
            "dense_units": info.dense_units,
            "dense_activation": info.dense_activation or "linear",
            "dense_use_bias": info.dense_use_bias,
            "normalize": info.normalize,
            "normalize_before_dense": info.normalize_before_dense,
            "mask_module": info.mask_module,
            "skiplist_words": info.skiplist_words,
            "skiplist_tasks": info.skiplist_tasks,
            "keep_only_token_ids": info.keep_only_token_ids,
            "query_length": info.query_length,
            "document_length": info.document_length,
            "query_expansion": info.query_expansion,
            "prompts": info.prompts,
            "default_prompt_name": info.default_prompt_name,
            "similarity_fn_name": info.similarity_fn_name,
            "truncate_dim": info.truncate_dim,
        }
        model = cls(config, preprocessor=preprocessor, **{**arguments, **kwargs})
        model.checkpoint_load_report = load_checkpoint(model, info.checkpoint)
        logging.info(
            "Multi-vector encoder: dense %s, normalize %s, query expansion %s, "
            "max_seq_length %d",
            model.dense_units,
            model.normalize,
            model.query_expansion,
            preprocessor.seq_length,
        )
        return model
