"""A small KerasHub BertTextClassifier with random weights, for parity tests."""

import numpy as np


def random_keras_hub_classifier(
    keras_hub, vocab, num_classes, hidden=8, sequence_length=12, seed=0
):
    """KerasHub's task over a 2-layer backbone, every weight ~N(0, 0.3) (so
    LayerNorm scales and biases are exercised too); lower-casing tokenizer."""
    import keras

    keras.utils.set_random_seed(seed)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=len(vocab),
        num_layers=2,
        num_heads=2,
        hidden_dim=hidden,
        intermediate_dim=2 * hidden,
        max_sequence_length=32,
    )
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab, lowercase=True)
    preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
        tokenizer, sequence_length=sequence_length
    )
    task = keras_hub.models.BertTextClassifier(
        backbone, num_classes=num_classes, preprocessor=preprocessor
    )
    rng = np.random.default_rng(seed)
    for weight in task.weights:
        weight.assign(rng.normal(0.0, 0.3, weight.shape).astype("float32"))
    return task
