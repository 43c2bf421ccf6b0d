"""A linear-chain conditional random field over the tags of a sequence."""

import keras
import tensorflow as tf

# Added to the score of a transition IOB2 forbids when decoding with
# constraints: no sum of real scores comes near it, and it stays finite so
# max/argmax never meet -inf - -inf.
FORBIDDEN_SCORE = -1e9


def iob2_allowed(labels):
    """(allowed transitions [from, to], allowed first tags) of IOB2 `labels`.

    IOB2 forbids `I-X` after anything but `B-X` or `I-X`, and `I-X` first;
    every other tag ("O", "B-X", tags outside the scheme) may follow anything.
    Returns nested lists of bools.
    """
    labels = [str(label) for label in labels]

    def inside_type(label):
        return label[2:] if label.startswith("I-") else None

    allowed = []
    for previous in labels:
        row = []
        for tag in labels:
            entity_type = inside_type(tag)
            row.append(entity_type is None or previous in (f"B-{entity_type}", tag))
        allowed.append(row)
    starts = [inside_type(tag) is None for tag in labels]
    return allowed, starts


def compact(values, mask):
    """Moves the masked-in steps of each row to its front, in order.

    Args:
        values: [batch, steps, ...] tensor.
        mask: [batch, steps] bool.

    Returns:
        (`values` reordered, lengths [batch] int32): row b's first
        `lengths[b]` steps are its masked-in steps; the rest follow.
    """
    # A stable sort of 0 (in) before 1 (out) keeps each group's order.
    order = tf.argsort(tf.cast(~mask, tf.int32), axis=1, stable=True)
    lengths = tf.reduce_sum(tf.cast(mask, tf.int32), axis=1)
    return tf.gather(values, order, batch_dims=1), lengths


@keras.saving.register_keras_serializable(package="bert_tf")
class CRF(keras.layers.Layer):
    """Linear-chain CRF: tag-to-tag, first-tag and last-tag scores.

    A sequence's score is `start_transitions[y_1] + sum_t emissions[t, y_t] +
    sum_t transitions[y_(t-1), y_t] + end_transitions[y_n]` over the steps the
    mask keeps (a tagger keeps the first word piece of each word): masked-out
    steps are skipped, not scored, so the chain links consecutive words. The
    loss is the negative log-likelihood (forward algorithm); `decode` is
    Viterbi. Both run in the graph, vectorised over the batch, with XLA, and
    always in float32 (the layer's policy): sums over a whole sentence lose too
    much in float16.

    With `iob2_labels`, decoding is constrained to well-formed IOB2 sequences
    (no `I-X` after `O` or another type, none first): those transitions get
    `FORBIDDEN_SCORE`. Training is not constrained.

    Args:
        num_tags: int. Number of tags.
        iob2_labels: optional list of the `num_tags` tags, in id order, to
            constrain decoding to IOB2.

    Call arguments:
        emissions: [batch, steps, num_tags] scores (any float dtype).
        mask: [batch, steps] bool (or 0/1): the steps of the chain.

    Returns (call and `decode`): [batch, steps] int32 Viterbi tags at the mask's
    steps, 0 elsewhere.

    Example:
    >>> crf = CRF(num_tags=3)
    >>> emissions = tf.random.normal([2, 5, 3])
    >>> mask = tf.constant([[0, 1, 1, 0, 1], [0, 1, 0, 0, 0]], tf.bool)
    >>> crf.decode(emissions, mask).shape
    TensorShape([2, 5])
    >>> crf.log_likelihood(emissions, tf.zeros([2, 5], tf.int32), mask).shape
    TensorShape([2])
    """

    def __init__(self, num_tags, iob2_labels=None, **kwargs):
        # float32 whatever the global policy: see the docstring.
        kwargs["dtype"] = "float32"
        super().__init__(**kwargs)
        if iob2_labels is not None:
            iob2_labels = [str(label) for label in iob2_labels]
            if len(iob2_labels) != num_tags:
                raise ValueError(
                    f"iob2_labels has {len(iob2_labels)} tags, num_tags is {num_tags}"
                )
        self.num_tags = num_tags
        self.iob2_labels = iob2_labels

    def build(self, input_shape=None):
        # Zeros: untrained, decoding is the per-step argmax of the emissions.
        self.transitions = self.add_weight(
            name="transitions",
            shape=(self.num_tags, self.num_tags),
            initializer="zeros",
        )
        self.start_transitions = self.add_weight(
            name="start_transitions", shape=(self.num_tags,), initializer="zeros"
        )
        self.end_transitions = self.add_weight(
            name="end_transitions", shape=(self.num_tags,), initializer="zeros"
        )
        self.built = True

    def _decoding_scores(self):
        """(transitions, start transitions) with the constraints applied."""
        transitions = tf.convert_to_tensor(self.transitions)
        start = tf.convert_to_tensor(self.start_transitions)
        if self.iob2_labels is None:
            return transitions, start
        allowed, allowed_start = iob2_allowed(self.iob2_labels)
        transitions += tf.where(tf.constant(allowed), 0.0, FORBIDDEN_SCORE)
        start += tf.where(tf.constant(allowed_start), 0.0, FORBIDDEN_SCORE)
        return transitions, start

    @staticmethod
    def _chain(emissions, mask):
        """Compacted float32 emissions [steps, batch, tags] (time major), the
        in-chain flags [steps, batch] and the lengths [batch].

        The flags are compared time major rather than transposed: oneDNN's
        Transpose takes floats only, and TensorFlow logs an E-level line
        ("oneDNN supports DT_BOOL only on platforms with AVX-512") the first
        time a graph transposes anything else.
        """
        emissions = tf.cast(emissions, tf.float32)
        mask = tf.cast(mask, tf.bool)
        emissions, lengths = compact(emissions, mask)
        steps = tf.range(tf.shape(emissions)[1])
        valid = steps[:, None] < lengths[None, :]
        return tf.transpose(emissions, [1, 0, 2]), valid, lengths

    def log_likelihood(self, emissions, tags, mask):
        """log p(tags | emissions) of each sequence [batch], float32 (0 for a
        sequence with no step in the mask). `tags` [batch, steps] int: read at
        the mask's steps only (e.g. -1 elsewhere)."""
        transitions = tf.convert_to_tensor(self.transitions)
        start = tf.convert_to_tensor(self.start_transitions)
        end = tf.convert_to_tensor(self.end_transitions)
        em, valid, lengths = self._chain(emissions, mask)
        tags, _ = compact(tf.cast(tags, tf.int32), tf.cast(mask, tf.bool))
        in_row = tf.range(tf.shape(tags)[1])[None, :] < lengths[:, None]
        tags = tf.where(in_row, tags, 0)  # [batch, steps]
        present = lengths > 0
        weights = tf.cast(in_row, tf.float32)

        # The score of the given tags.
        emitted = tf.gather(tf.transpose(em, [1, 0, 2]), tags, batch_dims=2)
        score = tf.reduce_sum(emitted * weights, axis=1)
        pairs = tf.stack([tags[:, :-1], tags[:, 1:]], axis=-1)
        score += tf.reduce_sum(tf.gather_nd(transitions, pairs) * weights[:, 1:], 1)
        last = tf.gather(tags, tf.maximum(lengths - 1, 0), batch_dims=1)
        score += tf.gather(start, tags[:, 0]) + tf.gather(end, last)

        # The log-partition: forward algorithm, one step per word.
        def forward(alpha, step):
            emission, in_chain, first = step
            following = tf.reduce_logsumexp(
                alpha[:, :, None] + transitions[None], axis=1
            )
            following = tf.where(first, start[None], following) + emission
            return tf.where(in_chain[:, None], following, alpha)

        firsts = tf.range(tf.shape(em)[0]) == 0
        alpha = tf.foldl(
            forward,
            (em, valid, firsts),
            initializer=tf.zeros_like(em[0]),
        )
        log_partition = tf.reduce_logsumexp(alpha + end[None], axis=1)
        return tf.where(present, score - log_partition, 0.0)

    def decode(self, emissions, mask):
        """Viterbi tags [batch, steps] int32 at the mask's steps, 0 elsewhere."""
        transitions, start = self._decoding_scores()
        end = tf.convert_to_tensor(self.end_transitions)
        mask = tf.cast(mask, tf.bool)
        em, valid, _ = self._chain(emissions, mask)
        identity = tf.range(self.num_tags)

        def viterbi(carry, step):
            best, _ = carry
            emission, in_chain, first = step
            candidates = best[:, :, None] + transitions[None]
            following = tf.reduce_max(candidates, axis=1)
            following = tf.where(first, start[None], following) + emission
            # Outside the chain a step passes every tag through unchanged.
            pointer = tf.argmax(candidates, axis=1, output_type=tf.int32)
            pointer = tf.where(in_chain[:, None] & ~first, pointer, identity[None])
            return tf.where(in_chain[:, None], following, best), pointer

        firsts = tf.range(tf.shape(em)[0]) == 0
        batch = tf.shape(em)[1]
        initial = (
            tf.zeros_like(em[0]),
            tf.zeros([batch, self.num_tags], tf.int32),
        )
        best, pointers = tf.scan(viterbi, (em, valid, firsts), initializer=initial)
        last = tf.argmax(best[-1] + end[None], axis=1, output_type=tf.int32)

        # Back from the last step: the tag at t is pointers[t + 1][tag at t + 1].
        following_pointers = tf.concat(
            [pointers[1:], tf.tile(identity[None, None], [1, batch, 1])], axis=0
        )

        def back(tag, pointer):
            return tf.gather(pointer, tag, batch_dims=1)

        # [compacted steps, batch]: read in place (an int32 Transpose would
        # log oneDNN's line, see `_chain`).
        path = tf.scan(back, following_pointers, initializer=last, reverse=True)

        # Back to the input's positions: tags[b, s] = path[index[b, s], b].
        index = tf.maximum(tf.cumsum(tf.cast(mask, tf.int32), axis=1) - 1, 0)
        rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(index))
        tags = tf.gather_nd(path, tf.stack([index, rows], axis=-1))
        return tf.where(mask, tags, 0)

    def decode_in_place(self, emissions, mask):
        """`decode`'s tags, computed where the steps are (no compaction).

        For LiteRT: builtin ops only, and loops whose state keeps its shape
        (`decode`'s `tf.scan` needs TensorLists, which the LiteRT converter
        lowers only when their element shapes are static). Steps outside the
        mask pass every tag through; each row's first masked-in step takes
        the start transitions. The O(steps^2) pointer bookkeeping is cheap next
        to an encoder over the same steps.
        """
        transitions, start = self._decoding_scores()
        end = tf.convert_to_tensor(self.end_transitions)
        mask = tf.cast(mask, tf.bool)
        em = tf.transpose(tf.cast(emissions, tf.float32), [1, 0, 2])
        # Batch major, read a step at a time (no bool Transpose, see `_chain`).
        first = mask & (tf.cumsum(tf.cast(mask, tf.int32), axis=1) == 1)
        steps, batch = tf.shape(em)[0], tf.shape(em)[1]
        identity = tf.range(self.num_tags)[None]
        step_index = tf.range(steps)[:, None, None]

        def forward(t, best, pointers):
            in_chain, first_t = mask[:, t], first[:, t]
            candidates = best[:, :, None] + transitions[None]
            following = tf.reduce_max(candidates, axis=1)
            following = tf.where(first_t[:, None], start[None], following) + em[t]
            pointer = tf.argmax(candidates, axis=1, output_type=tf.int32)
            keep = (in_chain & ~first_t)[:, None]
            pointer = tf.where(keep, pointer, identity)
            best = tf.where(in_chain[:, None], following, best)
            pointers = tf.where(step_index == t, pointer[None], pointers)
            return t + 1, best, pointers

        _, best, pointers = tf.while_loop(
            lambda t, *_: t < steps,
            forward,
            (
                tf.constant(0),
                tf.zeros([batch, self.num_tags]),
                tf.zeros([steps, batch, self.num_tags], tf.int32),
            ),
        )
        last = tf.argmax(best + end[None], axis=1, output_type=tf.int32)
        tags_index = tf.range(steps)[None, :]

        # Back from the last step: the tag at t is pointers[t + 1][tag at t + 1];
        # the path is written batch major ([batch, steps], no Transpose).
        def backward(t, tag, path):
            path = tf.where(tags_index == t, tag[:, None], path)
            # (At t = 0 the result is not used: any step's pointers do.)
            following = tf.gather(pointers, tf.minimum(tf.maximum(t, 1), steps - 1))
            one_hot = tf.one_hot(tag, self.num_tags, dtype=tf.int32)
            return t - 1, tf.reduce_sum(following * one_hot, axis=1), path

        _, _, path = tf.while_loop(
            lambda t, *_: t >= 0,
            backward,
            (steps - 1, last, tf.zeros([batch, steps], tf.int32)),
        )
        return tf.where(mask, path, 0)

    def call(self, emissions, mask):
        return self.decode(emissions, mask)

    def compute_output_shape(self, emissions_shape, mask_shape=None):
        return tuple(emissions_shape[:-1])

    def get_config(self):
        config = super().get_config()
        config.update({"num_tags": self.num_tags, "iob2_labels": self.iob2_labels})
        return config
