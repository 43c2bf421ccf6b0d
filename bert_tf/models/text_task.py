"""`BertTextTask`: raw strings in `fit`, `evaluate` and `predict`.

What the raw-text task models add to a task model over token ids: they own a
`BertPreprocessor` and map it over their input pipeline (as KerasHub's tasks
do), compile with defaults that fit logits, and load from a checkpoint
directory with the vocabulary found beside it.
"""

import keras
import numpy as np
import tensorflow as tf

from bert_tf.checkpoints.loading import checkpoint_vocabulary
from bert_tf.checkpoints.loading import find_checkpoint
from bert_tf.text.preprocessing import BertPreprocessor

# Keras loss names that read probabilities unless told `from_logits=True`;
# the text tasks output logits, so these names get logits-aware losses.
_LOGITS_LOSSES = {
    "sparse_categorical_crossentropy": keras.losses.SparseCategoricalCrossentropy,
    "categorical_crossentropy": keras.losses.CategoricalCrossentropy,
    "binary_crossentropy": keras.losses.BinaryCrossentropy,
}
_DEFAULT_BATCH_SIZE = 32
# Weight decay skips biases and LayerNorm parameters, as the original's
# optimizer does.
_NO_DECAY = ["bias", "gamma", "beta"]


def default_optimizer():
    """AdamW as BERT is fine-tuned: lr 5e-5, decay 0.01, epsilon 1e-6, gradients
    clipped to global norm 1.0 (the original's constant-rate parts; its warmup
    and linear decay need the step count, which `compile` does not know)."""
    optimizer = keras.optimizers.AdamW(
        learning_rate=5e-5, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0
    )
    optimizer.exclude_from_weight_decay(var_names=_NO_DECAY)
    return optimizer


def logits_loss(loss, num_labels):
    """`loss` made to read logits; "auto" is cross-entropy (or MSE for 1 label).

    Raises:
        ValueError: a loss object that reads probabilities (`from_logits=False`).
    """
    if loss == "auto":
        if num_labels == 1:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if isinstance(loss, str) and loss in _LOGITS_LOSSES:
        return _LOGITS_LOSSES[loss](from_logits=True)
    reads_probabilities = (
        isinstance(loss, keras.losses.Loss)
        and loss.get_config().get("from_logits") is False
    ) or any(loss is getattr(keras.losses, name, None) for name in _LOGITS_LOSSES)
    if reads_probabilities:
        raise ValueError(
            f"loss {loss!r} reads probabilities, but this model outputs logits: "
            "pass a loss with from_logits=True, a loss name such as "
            '"sparse_categorical_crossentropy" (read as from logits), or "auto"'
        )
    return loss


def _as_strings(texts):
    """A [batch] string tensor, or a tuple of two for pairs."""
    if isinstance(texts, tuple):
        return tuple(_as_strings(t) for t in texts)
    if isinstance(texts, (tf.Tensor, dict)):
        return texts
    return tf.constant(np.asarray(texts, dtype=object).astype(str))


class BertTextTask:
    """Mixin for a task model with a `preprocessor` (a `BertPreprocessor`).

    `x` may be a list, array or tensor of strings, a tuple of two of them
    (sentence pairs), the preprocessed dict of int32 inputs, or a
    `tf.data.Dataset` of any of these (with labels, batched or not).
    """

    def __init__(self, encoder, num_labels, preprocessor=None, **kwargs):
        if preprocessor is None:
            raise ValueError(f"{type(self).__name__} needs a preprocessor")
        super().__init__(encoder, num_labels, **kwargs)
        self.preprocessor = preprocessor

    def preprocess_samples(self, x, y=None, sample_weight=None):
        if not isinstance(x, dict):
            x = self.preprocessor(x)
        return keras.utils.pack_x_y_sample_weight(x, y, sample_weight)

    def _preprocess_element(self, *element):
        return self.preprocess_samples(*keras.utils.unpack_x_y_sample_weight(element))

    def _preprocess_function(self):
        # One tf.function for every dataset the model maps: the tokenizer's
        # graph is traced once per input structure instead of once per
        # fit/evaluate/predict call (seconds each).
        if getattr(self, "_cached_preprocess_function", None) is None:
            self._cached_preprocess_function = tf.function(self._preprocess_element)
        return self._cached_preprocess_function

    def _dataset(self, x, y=None, sample_weight=None, batch_size=None, shuffle=False):
        batch_size = batch_size or _DEFAULT_BATCH_SIZE
        if isinstance(x, tf.data.Dataset):
            if y is not None or sample_weight is not None:
                raise ValueError(
                    "x is a tf.data.Dataset: put the labels (and weights) in it, "
                    "not in y / sample_weight"
                )
            dataset = x.map(
                self._preprocess_function(), num_parallel_calls=tf.data.AUTOTUNE
            )
            ids = keras.utils.unpack_x_y_sample_weight(dataset.element_spec)[0]
            if ids["input_ids"].shape.rank == 1:  # unbatched examples
                dataset = dataset.batch(batch_size)
            return dataset.prefetch(tf.data.AUTOTUNE)
        data = keras.utils.pack_x_y_sample_weight(
            _as_strings(x),
            None if y is None else np.asarray(y),
            None if sample_weight is None else np.asarray(sample_weight),
        )
        dataset = tf.data.Dataset.from_tensor_slices(data)
        if shuffle:
            dataset = dataset.shuffle(
                int(dataset.cardinality()), reshuffle_each_iteration=True
            )
        return (
            dataset.batch(batch_size)
            .map(self._preprocess_function(), num_parallel_calls=tf.data.AUTOTUNE)
            .prefetch(tf.data.AUTOTUNE)
        )

    def compile(self, optimizer="auto", loss="auto", *, metrics="auto", **kwargs):
        """`keras.Model.compile` with defaults for fine-tuning on logits.

        Args:
            optimizer: "auto" (AdamW as BERT is fine-tuned: lr 5e-5, weight
                decay 0.01 except biases and LayerNorm, epsilon 1e-6, global
                norm clip 1.0) or any Keras optimizer.
            loss: "auto" (sparse categorical cross-entropy from logits; mean
                squared error with one label), a cross-entropy name (read as
                from logits), or a loss object with `from_logits=True`; one
                that reads probabilities is an error.
            metrics: "auto" (sparse categorical accuracy; none with one
                label) or any Keras metrics.
            **kwargs: passed to `keras.Model.compile`; `jit_compile` defaults
                to False (XLA-compiling the whole step costs a minute or more
                on CPU and gains nothing there; pass True on accelerators).
        """
        kwargs.setdefault("jit_compile", False)
        arguments = dict(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        if isinstance(optimizer, str) and optimizer == "auto":
            optimizer = default_optimizer()
        if isinstance(metrics, str) and metrics == "auto":
            metrics = self.default_metrics()
        super().compile(
            optimizer=optimizer,
            loss=logits_loss(loss, self.num_labels),
            metrics=metrics,
            **kwargs,
        )
        # What a .keras file records is the call as made ("auto" included),
        # so loading rebuilds the same defaults (the AdamW decay exclusions
        # are not part of the optimizer's config).
        self._compile_arguments = arguments

    def get_compile_config(self):
        if self.compiled and hasattr(self, "_compile_arguments"):
            return {
                name: keras.saving.serialize_keras_object(value)
                for name, value in self._compile_arguments.items()
            }
        return {}

    def compile_from_config(self, config):
        """Compiles as the saved model was (`keras.saving.load_model` calls
        this; the optimizer's saved state is loaded into it afterwards)."""
        self.compile(
            **{
                name: value
                if isinstance(value, str)
                else keras.saving.deserialize_keras_object(value)
                for name, value in config.items()
            }
        )
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def default_metrics(self):
        if self.num_labels == 1:
            return None
        return [keras.metrics.SparseCategoricalAccuracy()]

    def fit(
        self,
        x=None,
        y=None,
        batch_size=None,
        sample_weight=None,
        validation_data=None,
        shuffle=True,
        **kwargs,
    ):
        """`keras.Model.fit` on raw text (see the class for the forms of `x`)."""
        if kwargs.get("validation_split"):
            raise ValueError(
                "validation_split is not supported on raw text: pass validation_data"
            )
        kwargs.pop("validation_split", None)
        dataset = self._dataset(x, y, sample_weight, batch_size, shuffle=shuffle)
        if validation_data is not None:
            if isinstance(validation_data, tf.data.Dataset):
                validation_data = self._dataset(validation_data)
            else:
                validation_data = self._dataset(
                    *keras.utils.unpack_x_y_sample_weight(validation_data),
                    batch_size=kwargs.pop("validation_batch_size", None) or batch_size,
                )
        # The dataset is shuffled above, when `shuffle`.
        return super().fit(
            dataset, validation_data=validation_data, shuffle=False, **kwargs
        )

    def evaluate(self, x=None, y=None, batch_size=None, sample_weight=None, **kwargs):
        """`keras.Model.evaluate` on raw text."""
        if kwargs.get("_use_cached_eval_dataset"):  # fit's own validation
            return super().evaluate(
                x, y, batch_size, sample_weight=sample_weight, **kwargs
            )
        dataset = self._dataset(x, y, sample_weight, batch_size)
        return super().evaluate(dataset, **kwargs)

    def predict(self, x, batch_size=None, **kwargs):
        """`keras.Model.predict` on raw text: the logits."""
        return super().predict(self._dataset(x, batch_size=batch_size), **kwargs)

    def __call__(self, inputs, *args, **kwargs):
        # Raw strings are preprocessed first; the model itself takes ids.
        if not isinstance(inputs, dict) and not isinstance(inputs, keras.KerasTensor):
            inputs = self.preprocessor(_as_strings(inputs))
        return super().__call__(inputs, *args, **kwargs)

    @classmethod
    def from_checkpoint(
        cls,
        path,
        config=None,
        vocab_file=None,
        do_lower_case=None,
        seq_length=128,
        **kwargs,
    ):
        """The model from a checkpoint (any form `BertEncoder` loads), with a
        `BertPreprocessor` over the vocabulary found beside it.

        Args:
            path: checkpoint prefix or directory.
            config: optional `BertConfig` (or its file) instead of the one
                beside the checkpoint.
            vocab_file: the vocabulary (vocab.txt or tokenizer.json) when
                none is beside the checkpoint; one beside it must be the same.
            do_lower_case: bool, or None for what the checkpoint's tokenizer
                files say (HF tokenizer_config.json, KerasHub tokenizer.json),
                else True (the uncased models).
            seq_length: int. Length the preprocessor packs to.
            **kwargs: the task's own arguments (e.g. `num_labels`).
        """
        files = find_checkpoint(path)
        vocab_file, options = checkpoint_vocabulary(files, vocab_file, path)
        if do_lower_case is None:
            do_lower_case = files.do_lower_case is not False
        preprocessor = BertPreprocessor(
            vocab_file, do_lower_case, seq_length, **options
        )
        return super().from_checkpoint(
            files, config=config, preprocessor=preprocessor, **kwargs
        )

    def get_config(self):
        return {
            **super().get_config(),
            "preprocessor": keras.saving.serialize_keras_object(self.preprocessor),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["preprocessor"] = keras.saving.deserialize_keras_object(
            config["preprocessor"]
        )
        return super().from_config(config)
