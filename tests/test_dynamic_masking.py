"""--dynamic_masking against the original's masking rule, on real records.

Records: create_pretraining_data on the original's sample_text.txt (uncased
vocab, seq 128, 20 predictions). The original's rule: min(20, max(1,
round(0.15 * tokens))) positions, never [CLS]/[SEP]/padding, sorted, 80%
[MASK] / 10% kept / 10% random.
"""

import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.data_prep.dynamic_masking import mask_dynamically
from bert_tf.data_prep.dynamic_masking import original_input_ids
from bert_tf.data_prep.dynamic_masking import special_token_ids
from bert_tf.data_prep.pretraining import create_pretraining_data
from bert_tf.data_prep.pretraining import parse_pretraining_record
from bert_tf.tasks import pretraining

SEQ, PREDICTIONS = 128, 20


@pytest.fixture(scope="module")
def records(shared_data, tmp_path_factory):
    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    path = tmp_path_factory.mktemp("dynamic") / "sample.tfrecord"
    create_pretraining_data(
        os.path.join(shared_data, "bert_sample_text", "sample_text.txt"),
        str(path),
        vocab,
        do_lower_case=True,
        max_seq_length=SEQ,
        max_predictions_per_seq=PREDICTIONS,
        random_seed=12345,
        dupe_factor=10,
    )
    parsed = [
        {k: v.numpy() for k, v in parse_pretraining_record(r, SEQ, PREDICTIONS).items()}
        for r in tf.data.TFRecordDataset(str(path))
    ]
    return str(path), vocab, parsed


def test_original_tokens_are_restored(records):
    _, vocab, parsed = records
    mask_id = special_token_ids(vocab)["[MASK]"]
    for features in parsed[:200]:
        restored = original_input_ids(features).numpy()
        assert mask_id not in restored
        weights = features["masked_lm_weights"] > 0
        positions = features["masked_lm_positions"][weights]
        np.testing.assert_array_equal(
            restored[positions], features["masked_lm_ids"][weights]
        )
        others = np.ones(SEQ, bool)
        others[positions] = False
        np.testing.assert_array_equal(restored[others], features["input_ids"][others])


@pytest.mark.slow
def test_masks_follow_the_original_rule(records):
    _, vocab, parsed = records
    special = special_token_ids(vocab)
    counts = {"mask": 0, "kept": 0, "random": 0}
    predicted = real = 0
    for index, features in enumerate(parsed * 3):
        out = {
            k: np.asarray(v)
            for k, v in mask_dynamically(
                features, [7, index], special, vocab_size=30522
            ).items()
        }
        original = original_input_ids(features).numpy()
        n_real = int(features["input_mask"].sum())
        weights = out["masked_lm_weights"] > 0
        expected = min(PREDICTIONS, max(1, int(round(n_real * 0.15))))
        assert weights.sum() == expected
        assert weights[: weights.sum()].all()  # real predictions come first
        positions = out["masked_lm_positions"][weights]
        assert list(positions) == sorted(positions)
        assert len(set(positions)) == len(positions)
        assert (positions < n_real).all()
        assert not np.isin(
            original[positions], [special["[CLS]"], special["[SEP]"]]
        ).any()
        np.testing.assert_array_equal(
            out["masked_lm_ids"][weights], original[positions]
        )
        unchanged = np.ones(SEQ, bool)
        unchanged[positions] = False
        np.testing.assert_array_equal(out["input_ids"][unchanged], original[unchanged])
        new = out["input_ids"][positions]
        counts["mask"] += int((new == special["[MASK]"]).sum())
        counts["kept"] += int((new == original[positions]).sum())
        counts["random"] += int(
            ((new != special["[MASK]"]) & (new != original[positions])).sum()
        )
        predicted += len(positions)
        real += n_real
    total = sum(counts.values())
    assert total == predicted > 3000
    # Binomial noise on ~4,000 draws: a few tenths of a percent.
    assert counts["mask"] / total == pytest.approx(0.80, abs=0.025)
    assert counts["kept"] / total == pytest.approx(0.10, abs=0.02)  # + random hits
    assert counts["random"] / total == pytest.approx(0.10, abs=0.02)
    assert predicted / real == pytest.approx(0.15, abs=0.01)


@pytest.mark.slow
def test_new_masks_each_epoch_and_the_same_after_a_resume(records):
    path, vocab, parsed = records
    from bert_tf.options import PretrainingOptions

    options = pretraining.dynamic_masking_options(
        PretrainingOptions(dynamic_masking=True, masked_lm_prob=0.15),
        vocab,
        type("Config", (), {"vocab_size": 30522}),
    )
    batch = 8
    dataset_fn = pretraining.training_dataset_fn(
        [path], SEQ, PREDICTIONS, batch, seed=3, dynamic_masking=options
    )
    context = tf.distribute.InputContext()
    epoch = len(parsed) // batch
    batches = list(dataset_fn(context, 0).take(2 * epoch + 3))
    resumed = list(dataset_fn(context, epoch).take(3))
    for a, b in zip(batches[epoch : epoch + 3], resumed, strict=True):
        for name in a:
            np.testing.assert_array_equal(a[name], b[name])

    # Every record, keyed by its original tokens, gets different masks in
    # different epochs (the order also changes, so compare per record).
    def masks_by_record(chunk):
        masks = {}
        for features in chunk:
            restored = tf.map_fn(
                original_input_ids,
                features,
                fn_output_signature=tf.TensorSpec([SEQ], tf.int32),
            ).numpy()
            for row, positions in zip(
                restored, features["masked_lm_positions"].numpy(), strict=True
            ):
                masks.setdefault(row.tobytes(), []).append(tuple(positions))
        return masks

    # Each record comes back every epoch (the shuffle buffer blurs the epoch
    # boundary) with masks drawn anew.
    seen = masks_by_record(batches[: 2 * epoch])
    repeated = [masks for masks in seen.values() if len(masks) >= 2]
    assert len(repeated) > 0.5 * len(seen)
    fresh = sum(len(set(masks)) == len(masks) for masks in repeated)
    assert fresh > 0.9 * len(repeated)


def test_vocab_without_mask_is_refused(tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("[PAD]\n[CLS]\n[SEP]\nhello\n")
    with pytest.raises(ValueError, match=r"vocab\.txt.*\[MASK\]"):
        special_token_ids(str(vocab))
