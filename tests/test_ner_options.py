"""NerOptions' CRF learning rate: its default, its checks, what the optimizer gets."""

import pytest

from bert_tf.errors import UserInputError
from bert_tf.options.checks import run_defining
from bert_tf.options.ner_options import CRF_LEARNING_RATE_MULTIPLIER
from bert_tf.options.ner_options import NerOptions


def test_crf_learning_rate_multiplier_defaults_to_100_with_use_crf():
    assert CRF_LEARNING_RATE_MULTIPLIER == 100.0
    crf = NerOptions(use_crf=True)
    assert crf.crf_learning_rate_multiplier == 100.0
    # Resolved, so a run's identity records the factor it trained with.
    assert run_defining(crf)["crf_learning_rate_multiplier"] == 100.0
    assert (
        NerOptions(
            use_crf=True, crf_learning_rate_multiplier=10
        ).crf_learning_rate_multiplier
        == 10
    )
    softmax = NerOptions()
    assert softmax.crf_learning_rate_multiplier is None
    assert "crf_learning_rate_multiplier" not in run_defining(softmax)


def test_crf_learning_rate_multiplier_checks():
    with pytest.raises(UserInputError, match="add --use_crf"):
        NerOptions(crf_learning_rate_multiplier=100.0)
    with pytest.raises(UserInputError, match="must be positive, got 0"):
        NerOptions(use_crf=True, crf_learning_rate_multiplier=0.0)


def test_the_optimizer_gets_the_crf_scope_at_the_multiplier():
    from bert_tf.tasks.ner import crf_learning_rate_multipliers
    from bert_tf.training import optimization

    assert crf_learning_rate_multipliers(NerOptions()) is None
    multipliers = crf_learning_rate_multipliers(
        NerOptions(use_crf=True, crf_learning_rate_multiplier=30.0)
    )
    assert multipliers == {"^cls/crf/": 30.0}
    names = {
        "crf/transitions": "cls/crf/transitions",
        "token_classifier/output_weights": "cls/token_classifier/output_weights",
        "layer_0/output/kernel": "bert/encoder/layer_0/output/dense/kernel",
    }
    import keras

    variables = [keras.Variable([0.0], name=path.replace("/", "_")) for path in names]
    optimizer = optimization.AdamWeightDecay(
        1e-4,
        variable_names={
            v.path: names[p] for v, p in zip(variables, names, strict=True)
        },
        learning_rate_multipliers=multipliers,
    )
    optimizer.build(variables)
    assert [optimizer.learning_rate_multiplier(v) for v in variables] == [
        30.0,
        1.0,
        1.0,
    ]
