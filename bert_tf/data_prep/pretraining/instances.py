"""The original's instance algorithm: sentence pairs, truncation and masking.

The functions of google-research/bert's ``create_pretraining_data.py`` with
the same random-number call order, so the same seed gives the same instances:
documents shuffled, passed over ``dupe_factor`` times, each document cut into
chunks of a target length (shorter with ``short_seq_prob``), each chunk split
into A and B (B a random segment of another document half the time, the
unused segments then put back), the pair truncated at random ends, 15 % of
its tokens predicted (80 % ``[MASK]``, 10 % kept, 10 % random), and all
instances of all passes shuffled together.
"""

import dataclasses

from bert_tf.data_prep.pretraining.options import GenerationOptions
from bert_tf.text import tokenization


@dataclasses.dataclass
class TrainingInstance:
    """One sentence pair, after masking.

    Attributes:
      tokens: ``[CLS] A [SEP] B [SEP]`` with the masked positions replaced.
      segment_ids: 0 for ``[CLS] A [SEP]``, 1 for ``B [SEP]``.
      masked_lm_positions: the predicted positions, ascending.
      masked_lm_labels: the original tokens at those positions.
      is_random_next: B is a random segment (next_sentence_label 1).
    """

    tokens: list
    segment_ids: list
    masked_lm_positions: list
    masked_lm_labels: list
    is_random_next: bool

    def __str__(self):
        return (
            "tokens: "
            + " ".join(tokenization.printable_text(x) for x in self.tokens)
            + "\nsegment_ids: "
            + " ".join(str(x) for x in self.segment_ids)
            + f"\nis_random_next: {self.is_random_next}"
            + "\nmasked_lm_positions: "
            + " ".join(str(x) for x in self.masked_lm_positions)
            + "\nmasked_lm_labels: "
            + " ".join(tokenization.printable_text(x) for x in self.masked_lm_labels)
        )


def create_training_instances(
    documents,
    vocab_words,
    max_seq_length,
    dupe_factor,
    short_seq_prob,
    masked_lm_prob,
    max_predictions_per_seq,
    rng,
    do_whole_word_mask=False,
):
    """Builds the instances of a list of documents, as the original does.

    The documents are shuffled in place with `rng`, passed over `dupe_factor`
    times, and all instances of all passes are shuffled together at the end.

    Args:
      documents: non-empty documents from ``read_documents`` (shuffled in
        place).
      vocab_words: ``list(tokenizer.vocab.keys())``, the random replacements.
      max_seq_length, dupe_factor, short_seq_prob, masked_lm_prob,
      max_predictions_per_seq, do_whole_word_mask: see ``GenerationOptions``.
      rng: a ``random.Random``.

    Returns:
      A list of ``TrainingInstance``.
    """
    options = GenerationOptions(
        max_seq_length=max_seq_length,
        max_predictions_per_seq=max_predictions_per_seq,
        dupe_factor=dupe_factor,
        masked_lm_prob=masked_lm_prob,
        short_seq_prob=short_seq_prob,
        do_whole_word_mask=do_whole_word_mask,
    )
    return generate(documents, _instance_from_pair, vocab_words, options, rng)


def _instance_from_pair(tokens, num_segment_a, positions, labels, is_random_next):
    return TrainingInstance(
        tokens=tokens,
        segment_ids=[0] * num_segment_a + [1] * (len(tokens) - num_segment_a),
        masked_lm_positions=positions,
        masked_lm_labels=labels,
        is_random_next=is_random_next,
    )


def generate(documents, make, vocab_words, options, rng):
    """The original's create_training_instances, each instance built by `make`.

    `make(tokens, num_segment_a, positions, labels, is_random_next)` turns an
    instance into what is kept (a TrainingInstance, or its serialized record,
    which is a third of the memory); `make` must not use `rng`. The final
    shuffle only depends on the number of items, so shuffling records uses the
    same RNG calls and gives the same order as shuffling instances.

    Args:
      documents: lists of token lists (shuffled in place).
      make: see above.
      vocab_words: the random replacement tokens.
      options: a ``GenerationOptions`` (its random_seed is not used: `rng` is).
      rng: a ``random.Random``.
    """
    rng.shuffle(documents)
    items = []
    for _ in range(options.dupe_factor):
        for document_index in range(len(documents)):
            for pair in _document_pairs(
                documents, document_index, vocab_words, options, rng
            ):
                items.append(make(*pair))
    rng.shuffle(items)
    return items


def _document_pairs(all_documents, document_index, vocab_words, options, rng):
    """Yields the instances of one document (one pass) as plain tuples:
    (tokens, num_segment_a, masked_lm_positions, masked_lm_labels,
    is_random_next), num_segment_a being len("[CLS] A [SEP]")."""
    document = all_documents[document_index]
    max_num_tokens = options.max_num_tokens

    # Mostly full sequences (padding is wasted compute), but sometimes shorter
    # ones so that pre-training matches the shorter fine-tuning inputs.
    target_seq_length = max_num_tokens
    if rng.random() < options.short_seq_prob:
        target_seq_length = rng.randint(2, max_num_tokens)

    current_chunk = []
    current_length = 0
    i = 0
    while i < len(document):
        segment = document[i]
        current_chunk.append(segment)
        current_length += len(segment)
        if i == len(document) - 1 or current_length >= target_seq_length:
            if current_chunk:
                # How many segments of the chunk go into A.
                a_end = 1
                if len(current_chunk) >= 2:
                    a_end = rng.randint(1, len(current_chunk) - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a.extend(current_chunk[j])

                tokens_b = []
                if len(current_chunk) == 1 or rng.random() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    # With a large corpus one try would do; 10 keep a tiny
                    # corpus from pairing a document with itself too often.
                    for _ in range(10):
                        random_document_index = rng.randint(0, len(all_documents) - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = rng.randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b.extend(random_document[j])
                        if len(tokens_b) >= target_b_length:
                            break
                    # The segments of the chunk not used in A are "put back"
                    # so they are not wasted.
                    num_unused_segments = len(current_chunk) - a_end
                    i -= num_unused_segments
                else:
                    is_random_next = False
                    for j in range(a_end, len(current_chunk)):
                        tokens_b.extend(current_chunk[j])
                truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng)
                if not tokens_a or not tokens_b:
                    raise AssertionError("empty segment after truncation")

                tokens = ["[CLS]", *tokens_a, "[SEP]", *tokens_b, "[SEP]"]
                tokens, positions, labels = create_masked_lm_predictions(
                    tokens,
                    options.masked_lm_prob,
                    options.max_predictions_per_seq,
                    vocab_words,
                    rng,
                    options.do_whole_word_mask,
                )
                yield tokens, len(tokens_a) + 2, positions, labels, is_random_next
            current_chunk = []
            current_length = 0
        i += 1


def create_masked_lm_predictions(
    tokens,
    masked_lm_prob,
    max_predictions_per_seq,
    vocab_words,
    rng,
    do_whole_word_mask=False,
):
    """Chooses and masks the predicted positions, as the original does.

    Returns:
      (output_tokens, masked_lm_positions, masked_lm_labels), positions sorted.
    """
    output_tokens = list(tokens)
    num_to_predict = min(
        max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob)))
    )
    if not do_whole_word_mask:
        # Every candidate group is a single position and no two overlap, so
        # the original's selection loop takes the first num_to_predict of the
        # shuffled candidates. Shuffling bare indexes instead of one-element
        # lists makes the same RNG calls and the same permutation.
        cand_indexes = [
            i for i, token in enumerate(tokens) if token != "[CLS]" and token != "[SEP]"
        ]
        rng.shuffle(cand_indexes)
        chosen = cand_indexes[:num_to_predict]
        for index in chosen:
            output_tokens[index] = _masked_token(tokens[index], vocab_words, rng)
        chosen.sort()
        return output_tokens, chosen, [tokens[index] for index in chosen]

    cand_indexes = []
    for i, token in enumerate(tokens):
        if token == "[CLS]" or token == "[SEP]":
            continue
        # Whole-word masking: a "##" piece belongs to the previous word, and
        # the word's pieces are masked (or not) together.
        if cand_indexes and token.startswith("##"):
            cand_indexes[-1].append(i)
        else:
            cand_indexes.append([i])

    rng.shuffle(cand_indexes)
    masked = []  # (index, label)
    covered_indexes = set()
    for index_set in cand_indexes:
        if len(masked) >= num_to_predict:
            break
        # A whole word that would overshoot the budget is skipped, not cut.
        if len(masked) + len(index_set) > num_to_predict:
            continue
        if any(index in covered_indexes for index in index_set):
            continue
        for index in index_set:
            covered_indexes.add(index)
            output_tokens[index] = _masked_token(tokens[index], vocab_words, rng)
            masked.append((index, tokens[index]))
    masked.sort(key=lambda item: item[0])
    return (
        output_tokens,
        [index for index, _ in masked],
        [label for _, label in masked],
    )


def _masked_token(token, vocab_words, rng):
    # The RNG call order matters for identical output: random() for the 80%
    # test, random() for the 50/50 test, then randint.
    if rng.random() < 0.8:
        return "[MASK]"
    if rng.random() < 0.5:
        return token
    return vocab_words[rng.randint(0, len(vocab_words) - 1)]


def truncate_seq_pair(tokens_a, tokens_b, max_num_tokens, rng):
    """Shrinks the longer of A and B, from the front or back at random, in place.

    Unlike the classifier rule, the side is random so that the model does not
    learn that segments always end (or start) cleanly.
    """
    while len(tokens_a) + len(tokens_b) > max_num_tokens:
        trunc_tokens = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
        if rng.random() < 0.5:
            del trunc_tokens[0]
        else:
            trunc_tokens.pop()
