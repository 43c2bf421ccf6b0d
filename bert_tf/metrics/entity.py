"""Entity-level precision, recall and F1 as conlleval scores them.

An entity is a (type, first token, last token) span; a predicted entity counts
only when a gold entity has the same type and exactly the same boundaries.
Spans are read as conlleval.pl (and `seqeval` in its default mode) read them,
which also gives ill-formed sequences a meaning: an entity starts at `B-X`,
`S-X`, at `I-X`/`E-X` after `O`, `E-`, `S-` or a tag of another type, and ends
before `B-`, `S-`, `O`, a tag of another type, or after `E-X`/`S-X`. So IOB1,
IOB2 and BIOES tags are all scored by the same rule. Sentences are scored as
one sequence with an `O` between them, so no entity spans two sentences.
"""

import collections


def _split(tag):
    if tag == "O":
        return "O", "_"
    prefix, _, entity_type = tag.partition("-")
    return prefix, entity_type or "_"


def _ends(prev_prefix, prefix, prev_type, entity_type):
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return prev_prefix not in ("O", ".") and prev_type != entity_type


def _starts(prev_prefix, prefix, prev_type, entity_type):
    if prefix in ("B", "S"):
        return True
    if prev_prefix in ("E", "S", "O") and prefix in ("E", "I"):
        return True
    return prefix not in ("O", ".") and prev_type != entity_type


def get_entities(tags):
    """`(type, first, last)` of each entity of one tag sequence (inclusive)."""
    entities = []
    prev_prefix, prev_type, begin = "O", "_", 0
    for i, tag in enumerate(list(tags) + ["O"]):
        prefix, entity_type = _split(tag)
        if _ends(prev_prefix, prefix, prev_type, entity_type):
            entities.append((prev_type, begin, i - 1))
        if _starts(prev_prefix, prefix, prev_type, entity_type):
            begin = i
        prev_prefix, prev_type = prefix, entity_type
    return entities


def _entity_sets(sequences):
    """Entities of a list of sentences, keyed by (sentence, type, first, last)."""
    return {
        (n, *entity)
        for n, tags in enumerate(sequences)
        for entity in get_entities(tags)
    }


def _prf(correct, predicted, gold):
    precision = correct / predicted if predicted else 0.0
    recall = correct / gold if gold else 0.0
    total = precision + recall
    f1 = 2 * precision * recall / total if total else 0.0
    return precision, recall, f1


def entity_scores(gold_sequences, predicted_sequences):
    """conlleval's scores of predicted tag sequences against gold ones.

    Args:
        gold_sequences: list of sentences, each a list of tags.
        predicted_sequences: the same shape.

    Returns: a dict with `precision`, `recall`, `f1` (entity level, micro
    over all types), `accuracy` (token level), and per entity type
    `precision_<TYPE>`, `recall_<TYPE>`, `f1_<TYPE>`, `support_<TYPE>` (gold
    entities of that type).
    """
    if len(gold_sequences) != len(predicted_sequences):
        raise ValueError(
            f"{len(gold_sequences)} gold sentences but "
            f"{len(predicted_sequences)} predicted ones"
        )
    tokens = correct_tokens = 0
    for n, (gold, predicted) in enumerate(
        zip(gold_sequences, predicted_sequences, strict=True)
    ):
        if len(gold) != len(predicted):
            raise ValueError(
                f"sentence {n}: {len(gold)} gold tags but {len(predicted)} predicted"
            )
        tokens += len(gold)
        correct_tokens += sum(g == p for g, p in zip(gold, predicted, strict=True))
    gold_entities = _entity_sets(gold_sequences)
    predicted_entities = _entity_sets(predicted_sequences)
    correct = gold_entities & predicted_entities
    precision, recall, f1 = _prf(
        len(correct), len(predicted_entities), len(gold_entities)
    )
    results = {
        "precision": precision,
        "recall": recall,
        "f1": f1,
        "accuracy": correct_tokens / tokens if tokens else 0.0,
    }
    by_type = collections.defaultdict(lambda: [0, 0, 0])
    for entities, column in ((correct, 0), (predicted_entities, 1), (gold_entities, 2)):
        for entity in entities:
            by_type[entity[1]][column] += 1
    for entity_type in sorted(by_type):
        counts = by_type[entity_type]
        p, r, f = _prf(*counts)
        results[f"precision_{entity_type}"] = p
        results[f"recall_{entity_type}"] = r
        results[f"f1_{entity_type}"] = f
        results[f"support_{entity_type}"] = counts[2]
    return results
