"""The original BERT optimization: LR schedule, AdamWeightDecay, and LAMB.

This reproduces the original `optimization.py` (`create_optimizer` and
`AdamWeightDecayOptimizer`) as Keras 3 objects that work with `model.fit`,
custom loops, and `tf.distribute` strategies:

- `LinearWarmupLinearDecay`: the original learning rate, a linear decay from
  `init_lr` to 0 over `num_train_steps` (measured from step 0), replaced by a
  linear warmup from 0 while `step < num_warmup_steps`.
- `AdamWeightDecay`: Adam with decoupled weight decay. With
  `bias_correction=False` (the original, `"adamw_original"`), its update is
  the original's exactly. With `bias_correction=True` (`"adamw"`), it is AdamW.
- `Lamb`: LAMB as in the paper and TF Model Garden. Weight decay is inside the
  update before the trust ratio, and some variables can be excluded from layer
  adaptation. Keras' own `keras.optimizers.Lamb` does neither.
- `create_optimizer`: the three, by the name the CLIs take as a flag.

Weight decay exclusions are regexes matched with `re.search`, as in the
original. They match the original checkpoint variable names
(`bert/encoder/layer_0/attention/output/LayerNorm/gamma`, `output_bias`,
`cls/predictions/output_bias`), not Keras' variable paths. So "bias" and
"LayerNorm" exclude the same variables as in the original.
`original_variable_names(model)` gives the optimizer those names.

The optimizers do not clip gradients. The original clips the whole gradient by
global norm 1.0 after the cross-replica sum, so that is the training loop's job.
Keras' `global_clipnorm` would clip each replica's gradients before the sum.
A loop that sums and clips itself turns the optimizer's own cross-replica sum
off with `set_gradient_aggregation(optimizer, False)`, so each step moves the
gradient over the network once.

Per-variable learning rates: `learning_rate_multipliers` maps regexes to
factors. A variable whose original name (or Keras path) matches one is updated
with `learning_rate * factor`, decay included, as a PyTorch parameter group
with its own lr would be. The usual BERT-CRF recipe trains the CRF transitions
(`cls/crf/`) at a much larger learning rate than the encoder: they start at 0
and Adam moves each by about one learning rate per step, so at 1e-4 they
hardly leave 0 in a fine-tuning run.

First step: the optimizer's learning rate is `schedule(optimizer.iterations)`,
and `iterations` is 0 during the first update. It is incremented only after
the update. The original's `global_step` behaves the same way, so the first
update uses the LR of step 0, which is 0 with warmup.
"""

import re
import types

import keras
import tensorflow as tf

# The original's `create_optimizer` exclusions.
DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY = ("LayerNorm", "layer_norm", "bias")

# Values of the CLIs' `--optimizer` flag, in the order shown in help texts.
OPTIMIZER_NAMES = ("adamw_original", "adamw", "lamb")


@keras.saving.register_keras_serializable(package="bert_tf")
class LinearWarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """The original BERT learning rate: linear warmup, then linear decay to 0.

    `decayed = init_lr * (1 - min(step, num_train_steps) / num_train_steps)`
    (`tf.train.polynomial_decay` with power 1, end 0). While
    `step < num_warmup_steps`, the LR is `init_lr * step / num_warmup_steps`
    instead. The decay runs from step 0, not from the end of warmup, so the
    LR never reaches `init_lr` with warmup: at step `num_warmup_steps` it is
    `init_lr * (1 - num_warmup_steps / num_train_steps)`, as in the original.
    The LR at step 0 is exactly 0 with warmup, and `init_lr` without it.
    From `num_train_steps` on, it is 0.

    Args:
        init_lr: float, the peak learning rate (`--learning_rate`).
        num_train_steps: int > 0, the step at which the LR reaches 0.
        num_warmup_steps: int >= 0. 0 means no warmup.
        name: optional name scope for the ops.

    Example:
    >>> schedule = LinearWarmupLinearDecay(5e-5, num_train_steps=1000,
    ...                                    num_warmup_steps=100)
    >>> [round(float(schedule(step)), 9) for step in (0, 50, 100, 1000)]
    [0.0, 2.5e-05, 4.5e-05, 0.0]
    """

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, name=None):
        super().__init__()
        if int(num_train_steps) != num_train_steps or num_train_steps <= 0:
            raise ValueError(
                f"num_train_steps must be a positive integer, got {num_train_steps}"
            )
        if int(num_warmup_steps) != num_warmup_steps or num_warmup_steps < 0:
            raise ValueError(
                "num_warmup_steps must be a non-negative integer, got "
                f"{num_warmup_steps}"
            )
        self.init_lr = float(init_lr)
        self.num_train_steps = int(num_train_steps)
        self.num_warmup_steps = int(num_warmup_steps)
        self.name = name

    def __call__(self, step):
        with tf.name_scope(self.name or "LinearWarmupLinearDecay"):
            # float32 throughout, with the original's operation order, so the
            # values match the TF1 graph's.
            init_lr = tf.constant(self.init_lr, tf.float32)
            step = tf.cast(step, tf.float32)
            decay_steps = tf.constant(float(self.num_train_steps), tf.float32)
            decayed = init_lr * (1.0 - tf.minimum(step, decay_steps) / decay_steps)
            if not self.num_warmup_steps:
                return decayed
            warmup_steps = tf.constant(float(self.num_warmup_steps), tf.float32)
            warmup = init_lr * (step / warmup_steps)
            return tf.where(step < warmup_steps, warmup, decayed)

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "name": self.name,
        }


def original_variable_names(model):
    """Maps each variable's Keras path to its original checkpoint name.

    Pass the result to the optimizers as `variable_names`, so their weight
    decay and layer adaptation exclusions see the original names. bert_tf
    models list their variables in `model.checkpoint_variables()`. A variable
    the model does not list, such as one in a layer the user added, maps to
    its own path.

    Args:
        model: a Keras model or layer, usually a bert_tf model. It must be
            built.

    Returns:
        dict `{variable.path: original name}`.

    Raises:
        ValueError: two different variables share a path and would get
            different names. The optimizer could not tell them apart.

    Example:
    >>> names = original_variable_names(classifier)
    >>> names["classifier/output_bias"]
    'output_bias'
    """
    names = {}
    owners = {}

    def add(path, name, variable):
        if path in owners and owners[path] is not variable and names[path] != name:
            raise ValueError(
                f"Variable path {path!r} is used by two variables, named "
                f"{names[path]!r} and {name!r}. Give the layers distinct "
                "names so the optimizer can tell them apart."
            )
        names.setdefault(path, name)
        owners.setdefault(path, variable)

    listed = getattr(model, "checkpoint_variables", None)
    if listed is not None:
        for name, variable in listed().items():
            add(variable.path, name, variable)
    for variable in model.variables:
        add(variable.path, names.get(variable.path, variable.path), variable)
    return names


def _variable_path(variable):
    """`variable.path`, or for a raw `tf.Variable` its name without `:0`."""
    path = getattr(variable, "path", None)
    if path is not None:
        return path
    return re.sub(r":\d+$", "", variable.name)


def _matches(patterns, name):
    return any(re.search(pattern, name) is not None for pattern in patterns)


class _BertOptimizer(keras.optimizers.Optimizer):
    """Shared arguments, slots and per-variable decisions of the optimizers.

    Keras' `weight_decay` is not used: Keras would apply it as a separate step
    and could not include it in the LAMB update. The subclasses add
    `weight_decay_rate * param` to the update themselves.
    """

    # The defaults are the original's `create_optimizer` values; the default
    # name is the class's (`AdamWeightDecay`, `Lamb`). Arguments after
    # `exclude_from_weight_decay` are keyword-only, so a positional call
    # cannot bind a subclass's own argument to `variable_names`.
    def __init__(
        self,
        learning_rate,
        weight_decay_rate=0.01,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        exclude_from_weight_decay=DEFAULT_EXCLUDE_FROM_WEIGHT_DECAY,
        *,
        variable_names=None,
        learning_rate_multipliers=None,
        name=None,
        **kwargs,
    ):
        if kwargs.pop("weight_decay", None) is not None:
            raise ValueError(
                "Use weight_decay_rate: Keras' weight_decay would decay the "
                "weights a second time, outside the update."
            )
        if isinstance(learning_rate, int):
            # Keras accepts only floats, schedules and callables.
            learning_rate = float(learning_rate)
        if name is None:
            name = type(self).__name__
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.weight_decay_rate = float(weight_decay_rate)
        self.beta_1 = float(beta_1)
        self.beta_2 = float(beta_2)
        self.epsilon = float(epsilon)
        # Stored under another name: `exclude_from_weight_decay` is a method
        # of Keras' optimizer, which is also supported (see below).
        self._weight_decay_patterns = tuple(exclude_from_weight_decay or ())
        # A read-only view is not wrapped by TF's attribute tracking, which
        # would otherwise make the name map part of the optimizer's checkpoint.
        self._variable_names = types.MappingProxyType(dict(variable_names or {}))
        self._lr_multipliers = _checked_multipliers(learning_rate_multipliers)
        self._decay_flags = ()
        self._lr_factors = ()

    def original_name(self, variable):
        """The name the exclusion regexes see: the original name if mapped."""
        path = _variable_path(variable)
        return self._variable_names.get(path, path)

    def exclude_from_weight_decay(self, var_list=None, var_names=None):
        """Keras' exclusion API, used in addition to the regexes.

        `var_names` substrings are matched like the regexes, against the
        original name and the Keras variable name. Call it before `build`.
        """
        if self.built:
            raise ValueError(
                "exclude_from_weight_decay() must be called before the "
                "optimizer is built."
            )
        super().exclude_from_weight_decay(var_list=var_list, var_names=var_names)

    def _decay_applies(self, variable):
        if not self.weight_decay_rate:
            # The original skips decay entirely when the rate is 0.
            return False
        if self._var_key(variable) in getattr(self, "_exclude_from_weight_decay", ()):
            return False
        name = self.original_name(variable)
        keras_pattern = getattr(self, "_exclude_from_weight_decay_pattern", None)
        if keras_pattern is not None and (
            keras_pattern.search(name) or keras_pattern.search(variable.name)
        ):
            return False
        return not _matches(self._weight_decay_patterns, name)

    def _multiplier_for(self, variable):
        names = (self.original_name(variable), _variable_path(variable))
        for pattern, multiplier in self._lr_multipliers:
            if any(re.search(pattern, name) for name in names):
                return multiplier
        return 1.0

    def learning_rate_multiplier(self, variable):
        """The factor on `variable`'s learning rate (1.0 unless a
        `learning_rate_multipliers` regex matched). The optimizer must be built."""
        return self._lr_factors[self._get_variable_index(variable)]

    def _variable_learning_rate(self, learning_rate, index, dtype):
        learning_rate = tf.cast(learning_rate, dtype)
        factor = self._lr_factors[index]
        if factor == 1.0:
            return learning_rate
        return learning_rate * tf.cast(factor, dtype)

    def uses_weight_decay(self, variable):
        """Whether `variable` is decayed. The optimizer must be built."""
        return self._decay_flags[self._get_variable_index(variable)]

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        # Named like the original's slots (`<param>/adam_m`, `<param>/adam_v`).
        self._m, self._v = self.add_optimizer_variables(var_list, ["adam_m", "adam_v"])
        # Decided once per variable, in Python, so the update step has no
        # string matching in it and a traced step has no branches.
        self._decay_flags = tuple(self._decay_applies(v) for v in var_list)
        self._lr_factors = tuple(self._multiplier_for(v) for v in var_list)

    def get_slot(self, variable, slot_name):
        """The `"m"` or `"v"` slot of `variable` (a Keras Variable)."""
        slots = {"m": self._m, "v": self._v}
        if slot_name not in slots:
            raise ValueError(f"slot_name must be 'm' or 'v', got {slot_name!r}")
        return slots[slot_name][self._get_variable_index(variable)]

    def _moments(self, gradient, variable):
        """Densified gradient and the new m and v, before they are assigned."""
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        next_m, next_v = _next_moments(
            self._m[index],
            self._v[index],
            _dense_gradient(gradient, dtype),
            *self._betas(dtype),
        )
        return index, next_m, next_v

    def _betas(self, dtype):
        """beta_1, 1 - beta_1, beta_2, 1 - beta_2 as `dtype` tensors.

        (1 - beta) is computed in Python, then rounded once to float32, as in
        the original graph.
        """
        return (
            tf.cast(self.beta_1, dtype),
            tf.cast(1.0 - self.beta_1, dtype),
            tf.cast(self.beta_2, dtype),
            tf.cast(1.0 - self.beta_2, dtype),
        )

    def _bias_denominators(self, dtype):
        """(1 - beta_1**t, 1 - beta_2**t) with t = iterations + 1."""
        # `iterations` is 0 during the first update, so t = 1 there.
        t = tf.cast(self.iterations + 1, dtype)
        return (
            1.0 - tf.pow(tf.cast(self.beta_1, dtype), t),
            1.0 - tf.pow(tf.cast(self.beta_2, dtype), t),
        )

    def _bias_corrected(self, next_m, next_v, dtype):
        m_denominator, v_denominator = self._bias_denominators(dtype)
        return next_m / m_denominator, next_v / v_denominator

    def get_config(self):
        config = super().get_config()
        # Always None here (rejected in __init__); weight_decay_rate is used.
        config.pop("weight_decay", None)
        config.update(
            {
                "weight_decay_rate": self.weight_decay_rate,
                "beta_1": self.beta_1,
                "beta_2": self.beta_2,
                "epsilon": self.epsilon,
                "exclude_from_weight_decay": list(self._weight_decay_patterns),
                "learning_rate_multipliers": dict(self._lr_multipliers),
            }
        )
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class AdamWeightDecay(_BertOptimizer):
    """Adam with decoupled weight decay, as in the original BERT.

    Per variable, with gradient `g` and parameter `p`:

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g**2
        update = m / (sqrt(v) + epsilon)            # bias_correction=False
        update = m_hat / (sqrt(v_hat) + epsilon)    # bias_correction=True
        update += weight_decay_rate * p             # unless excluded
        p -= learning_rate * update

    With `bias_correction=True`, `m_hat = m / (1 - beta_1**t)` and
    `v_hat = v / (1 - beta_2**t)`, where `t = iterations + 1`. The decay does
    not pass through m or v. `tf.IndexedSlices` gradients are densified: as in
    the original, every row's m and v decay and every row is decayed, not only
    the rows looked up. Gradients are not clipped (see the module docstring).

    Create the optimizer inside `strategy.scope()`, as you would the model.
    In a replica context (`strategy.run`), `apply` sums the gradients over
    replicas (Keras' `all_reduce`), then runs this update once per variable
    copy, so each replica's loss must be divided by the global batch size.
    To clip the summed gradient as the original does, sum and clip first and
    turn the optimizer's own sum off (`set_gradient_aggregation`).

    Args:
        learning_rate: float, `LearningRateSchedule`, or callable.
        weight_decay_rate: float. 0 disables decay.
        beta_1: float, the decay of m.
        beta_2: float, the decay of v.
        epsilon: float, added to `sqrt(v)`.
        exclude_from_weight_decay: regexes. A variable whose original name
            matches any of them (`re.search`) is not decayed.
        bias_correction: bool. False is the original, True is AdamW.
        variable_names: dict `{variable.path: original name}`, usually
            `original_variable_names(model)`. Unmapped variables are matched by
            path. It is not part of `get_config`. For bert_tf models the Keras
            paths (`.../layer_norm/gamma`, `.../bias`) give the same decisions,
            so an optimizer revived from a `.keras` file still decays the same
            variables.
        learning_rate_multipliers: optional `{regex: factor}`. A variable
            whose original name or Keras path matches a regex (`re.search`,
            first match in order) is updated with `learning_rate * factor`;
            the weight decay term is scaled with it. Others use factor 1.
        name: optimizer name.
        **kwargs: other Keras optimizer arguments (`use_ema`,
            `gradient_accumulation_steps`, ...). `weight_decay` is rejected.

    Example:
    >>> optimizer = AdamWeightDecay(
    ...     LinearWarmupLinearDecay(5e-5, num_train_steps=1000, num_warmup_steps=100),
    ...     weight_decay_rate=0.01,
    ...     variable_names=original_variable_names(classifier),
    ... )
    >>> optimizer.apply_gradients(zip(grads, classifier.trainable_variables))
    """

    def __init__(self, learning_rate, *args, bias_correction=False, **kwargs):
        super().__init__(learning_rate, *args, **kwargs)
        self.bias_correction = bool(bias_correction)

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        if self.bias_correction:
            m_denominator, v_denominator = self._bias_denominators(dtype)
        else:
            # The original has no bias correction ("mostly an oversight",
            # google-research/bert#153); its warmup makes up for it. x / 1 is
            # exactly x.
            m_denominator = v_denominator = tf.ones([], dtype)
        decay = self.weight_decay_rate if self._decay_flags[index] else 0.0
        arguments = (
            _dense_gradient(gradient, dtype),
            self._variable_learning_rate(learning_rate, index, dtype),
            tf.cast(decay, dtype),
            *self._betas(dtype),
            tf.cast(self.epsilon, dtype),
            m_denominator,
            v_denominator,
        )
        variables = [variable, self._m[index], self._v[index]]
        # The tf.Variable behind each Keras variable (tests pass tf.Variables).
        values = [v.value if isinstance(v, keras.Variable) else v for v in variables]
        if any(isinstance(v, tf.distribute.DistributedValues) for v in values):
            _adam_weight_decay_update(*variables, *arguments)
        else:
            # One XLA kernel per variable reads and writes p, m and v once,
            # with the same float32 arithmetic; the op-by-op update makes ~10
            # passes over memory (at BERT-base on 2 CPU cores: 0.36 s of
            # optimizer time per step down to 0.10 s).
            # One compiled function per optimizer: a module-level one kept
            # the variables of the first model trained in the process in its
            # trace, so training a second model in that process failed
            # ("Called a function referencing variables which have been
            # deleted").
            fused = self.__dict__.get("_fused_update")
            if fused is None:
                fused = tf.function(
                    _adam_weight_decay_update,
                    jit_compile=True,
                    reduce_retracing=True,
                    autograph=False,
                )
                self.__dict__["_fused_update"] = fused  # not a tracked attribute
            fused(*values, *arguments)

    def get_config(self):
        config = super().get_config()
        config["bias_correction"] = self.bias_correction
        return config


@keras.saving.register_keras_serializable(package="bert_tf")
class Lamb(_BertOptimizer):
    """LAMB (You et al., 2019), as in TF Model Garden's `lamb.py`.

    Per variable, with gradient `g`, parameter `p` and `t = iterations + 1`:

        m = beta_1 * m + (1 - beta_1) * g
        v = beta_2 * v + (1 - beta_2) * g**2
        update = (m / (1 - beta_1**t)) / (sqrt(v / (1 - beta_2**t)) + epsilon)
        update += weight_decay_rate * p    # unless excluded from weight decay
        ratio = ||p|| / ||update|| if both norms > 0 else 1
        ratio = 1                          # if excluded from layer adaptation
        p -= learning_rate * ratio * update

    The decay is inside the update, before the trust ratio. Keras'
    `keras.optimizers.Lamb` decays outside the ratio and cannot exclude
    variables from adaptation. `tf.IndexedSlices` gradients are densified,
    which gives the same result as Model Garden's sparse path. Gradients are
    not clipped (see the module docstring).

    Args:
        learning_rate: float, `LearningRateSchedule`, or callable.
        weight_decay_rate: float.
        beta_1: float, the decay of m.
        beta_2: float, the decay of v.
        epsilon: float, added to `sqrt(v_hat)`.
        exclude_from_weight_decay: regexes matched with `re.search` against
            the original name.
        exclude_from_layer_adaptation: regexes for variables updated with
            ratio 1. None means the same as `exclude_from_weight_decay`; an
            empty list excludes nothing. Model Garden treats an empty list like
            None.
        variable_names: as in `AdamWeightDecay`; not part of `get_config`.
        learning_rate_multipliers: as in `AdamWeightDecay` (the factor scales
            the step before the trust ratio).
        name: optimizer name.
        **kwargs: other Keras optimizer arguments. `weight_decay` is rejected.

    Example:
    >>> optimizer = Lamb(
    ...     LinearWarmupLinearDecay(1e-3, num_train_steps=10000,
    ...                             num_warmup_steps=1000),
    ...     variable_names=original_variable_names(pretrainer),
    ... )
    """

    def __init__(
        self, learning_rate, *args, exclude_from_layer_adaptation=None, **kwargs
    ):
        super().__init__(learning_rate, *args, **kwargs)
        if exclude_from_layer_adaptation is None:
            exclude_from_layer_adaptation = self._weight_decay_patterns
        self._adaptation_patterns = tuple(exclude_from_layer_adaptation or ())
        self._adapt_flags = ()

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._adapt_flags = tuple(
            not _matches(self._adaptation_patterns, self.original_name(v))
            for v in var_list
        )

    def uses_layer_adaptation(self, variable):
        """Whether `variable`'s update is scaled by the trust ratio."""
        return self._adapt_flags[self._get_variable_index(variable)]

    def update_step(self, gradient, variable, learning_rate):
        dtype = variable.dtype
        index, next_m, next_v = self._moments(gradient, variable)
        m_hat, v_hat = self._bias_corrected(next_m, next_v, dtype)
        update = m_hat / (tf.sqrt(v_hat) + tf.cast(self.epsilon, dtype))
        if self._decay_flags[index]:
            update += tf.cast(self.weight_decay_rate, dtype) * variable
        step = self._variable_learning_rate(learning_rate, index, dtype) * update
        if self._adapt_flags[index]:
            param_norm = tf.norm(variable)
            update_norm = tf.norm(update)
            one = tf.ones_like(param_norm)
            usable = tf.logical_and(param_norm > 0, update_norm > 0)
            # The inner where keeps x/0 out of the unused branch.
            ratio = tf.where(
                usable, param_norm / tf.where(usable, update_norm, one), one
            )
            step = ratio * step
        self.assign_sub(variable, step)
        self.assign(self._m[index], next_m)
        self.assign(self._v[index], next_v)

    def get_config(self):
        config = super().get_config()
        config["exclude_from_layer_adaptation"] = list(self._adaptation_patterns)
        return config


def create_optimizer(
    name,
    init_lr,
    num_train_steps,
    num_warmup_steps,
    model=None,
    weight_decay_rate=0.01,
    learning_rate_multipliers=None,
):
    """The optimizer of the original `create_optimizer`, or a variant of it.

    All three use `LinearWarmupLinearDecay(init_lr, num_train_steps,
    num_warmup_steps)`, beta_1 0.9, beta_2 0.999, epsilon 1e-6, and exclude
    "LayerNorm", "layer_norm" and "bias" from weight decay. None of them clips
    gradients; clip by global norm 1.0 in the training loop, after the
    cross-replica sum, as the original does.

    Args:
        name: `"adamw_original"` (the original: `AdamWeightDecay` without
            bias correction), `"adamw"` (with bias correction) or `"lamb"`.
        init_lr: float, the peak learning rate.
        num_train_steps: int, steps until the LR reaches 0.
        num_warmup_steps: int, linear warmup steps (0: none).
        model: optional built bert_tf model. Its variables' original names
            decide the exclusions (`original_variable_names`). Without it,
            Keras paths are matched.
        weight_decay_rate: float.
        learning_rate_multipliers: optional `{regex: factor}`: variables whose
            original name matches train at `factor` times the schedule's LR
            (e.g. `{r"^cls/crf/": 100.0}` for a CRF head).

    Returns:
        A Keras optimizer. Create it inside `strategy.scope()` when
        distributing.

    Raises:
        ValueError: `name` is not one of `OPTIMIZER_NAMES`.

    Example:
    >>> optimizer = create_optimizer("adamw_original", 2e-5, num_train_steps=1000,
    ...                              num_warmup_steps=100, model=classifier)
    """
    if name not in OPTIMIZER_NAMES:
        raise ValueError(
            f"Unknown optimizer {name!r}: optimizer must be one of "
            f"{', '.join(OPTIMIZER_NAMES)}."
        )
    schedule = LinearWarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    variable_names = original_variable_names(model) if model is not None else None
    # The betas, epsilon and exclusions are the optimizers' defaults.
    common = dict(
        weight_decay_rate=weight_decay_rate,
        variable_names=variable_names,
        learning_rate_multipliers=learning_rate_multipliers,
    )
    if name == "lamb":
        return Lamb(schedule, **common)
    return AdamWeightDecay(schedule, bias_correction=(name == "adamw"), **common)


def _checked_multipliers(multipliers):
    """`{regex: factor}` as a tuple of (regex, float) pairs, in the given order
    (the first match wins); each regex compiled and each factor > 0."""
    pairs = []
    for pattern, factor in dict(multipliers or {}).items():
        try:
            re.compile(pattern)
        except re.error as error:
            raise ValueError(
                f"learning_rate_multipliers: {pattern!r} is not a regex ({error})"
            ) from None
        if not float(factor) > 0:
            raise ValueError(
                f"learning_rate_multipliers[{pattern!r}] must be positive, got {factor}"
            )
        pairs.append((pattern, float(factor)))
    return tuple(pairs)


def _next_moments(m, v, gradient, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2):
    """Adam's new first and second moments, in the original's float32 order."""
    next_m = beta_1 * m + one_minus_beta_1 * gradient
    next_v = beta_2 * v + one_minus_beta_2 * tf.square(gradient)
    return next_m, next_v


def _dense_gradient(gradient, dtype):
    # An embedding lookup gives `tf.IndexedSlices`. The original applies a
    # dense update to every row: m and v decay on rows without gradient and
    # weight decay reaches every row. Densifying does the same.
    if isinstance(gradient, tf.IndexedSlices):
        gradient = tf.convert_to_tensor(gradient)
    return tf.cast(gradient, dtype)


def _adam_weight_decay_update(
    variable,
    m,
    v,
    gradient,
    learning_rate,
    decay,
    beta_1,
    one_minus_beta_1,
    beta_2,
    one_minus_beta_2,
    epsilon,
    m_denominator,
    v_denominator,
):
    """AdamWeightDecay's update of one variable (see the class docstring)."""
    next_m, next_v = _next_moments(
        m, v, gradient, beta_1, one_minus_beta_1, beta_2, one_minus_beta_2
    )
    update = (next_m / m_denominator) / (tf.sqrt(next_v / v_denominator) + epsilon)
    # decay is 0 for excluded variables: update + 0 * p is update exactly.
    update = update + decay * variable
    variable.assign_sub(learning_rate * update)
    m.assign(next_m)
    v.assign(next_v)


def set_gradient_aggregation(optimizer, enabled):
    """Whether `optimizer.apply` in a replica context sums gradients over replicas.

    Keras' optimizers (TensorFlow backend) all-reduce the gradients they are
    given inside `strategy.run` before updating. A loop that has summed them
    already (to clip the global gradient, as the original does) turns that
    off, so the step holds one all-reduce instead of two. The setting stays
    until changed. A `LossScaleOptimizer`'s inner optimizer does the sum, so
    it is set there. Works for any Keras optimizer, not only this module's.

    Args:
        optimizer: a Keras optimizer, or a `LossScaleOptimizer` around one.
        enabled: True is Keras' default (sum in `apply`); False: the
            gradients given to `apply` are already the replicas' sum, the same
            on every replica.

    Example:
    >>> set_gradient_aggregation(optimizer, False)
    >>> # inside strategy.run:
    >>> grads = tf.distribute.get_replica_context().all_reduce("sum", grads)
    >>> grads, _ = tf.clip_by_global_norm(grads, 1.0)
    >>> optimizer.apply(grads, model.trainable_variables)
    """
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    if enabled:
        inner.__dict__.pop("_all_reduce_sum_gradients", None)
    else:
        # An instance attribute over Keras' method: every replica thread and
        # every apply (also the LossScaleOptimizer's own per-replica calls)
        # sees it, which a per-call or thread-local switch would not.
        inner._all_reduce_sum_gradients = _already_summed


def _already_summed(grads_and_vars):
    return list(grads_and_vars)
