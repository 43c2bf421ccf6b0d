"""Length-grouped training batches: the plan alone, then run_similarity's
input pipeline built on it (every row once per epoch, exact resume, less
padding than plain shuffled batches)."""

import os
import types

import numpy as np

from bert_tf.data_prep.length_grouped_batches import length_grouped_batches


def _skewed_lengths(rows, seed=0):
    # Sentence lengths as in STS-B: most short, a long tail.
    rng = np.random.default_rng(seed)
    return np.clip(rng.lognormal(2.6, 0.45, rows).astype(int), 3, 128)


def test_every_row_once_per_epoch_in_plain_shuffles_order():
    lengths = _skewed_lengths(960)
    plan = length_grouped_batches(lengths, batch_size=16, num_batches=150, seed=7)
    assert plan.shape == (150, 16)
    # 150 batches of 16 = 2.5 epochs: grouping only reorders rows within a
    # window, so every row is used twice or three times, 2,400 uses in all.
    counts = np.bincount(plan.ravel(), minlength=960)
    assert counts.min() == 2 and counts.max() == 3 and counts.sum() == 2400
    np.testing.assert_array_equal(
        plan, length_grouped_batches(lengths, 16, 150, seed=7)
    )
    assert not np.array_equal(plan, length_grouped_batches(lengths, 16, 150, seed=8))


def test_batches_are_of_similar_length_and_pad_less_than_random_ones():
    lengths = _skewed_lengths(5749)
    batches = 5749 * 4 // 16
    plan = length_grouped_batches(lengths, 16, batches, seed=1)
    rng = np.random.default_rng(1)
    random_plan = np.concatenate([rng.permutation(5749) for _ in range(4)])
    random_plan = random_plan[: batches * 16].reshape(batches, 16)
    real = lengths[plan].sum()
    grouped_padded = (lengths[plan].max(1) * 16).sum()
    random_padded = (lengths[random_plan].max(1) * 16).sum()
    assert grouped_padded / real < 1.2
    assert random_padded / real > 1.5
    # Neighbouring batches are not sorted: the window's batches are shuffled.
    widths = lengths[plan[:50]].max(1)
    assert not np.all(np.diff(widths) >= 0)


def _write_pairs(path, rows):
    lines = ["index\tgenre\tfilename\tyear\told_index\tsource1\tsource2\t"]
    lines[0] += "sentence1\tsentence2\tscore"
    words = "the cat sat on a mat while dogs ran in circles around old trees".split()
    for i, (length_a, length_b) in enumerate(rows):
        a = " ".join(words[j % len(words)] for j in range(length_a))
        b = " ".join(words[(j + 3) % len(words)] for j in range(length_b))
        lines.append(f"{i}\tg\tf\ty\t{i}\ts\ts\t{a}\t{b}\t{i / 10:.1f}")
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _task(minilm_dir, train_file, output_dir, group_by_length):
    from bert_tf.options.run_options import RunOptions
    from bert_tf.options.similarity_options import SimilarityOptions
    from bert_tf.options.training_options import TrainingOptions
    from bert_tf.tasks.similarity import SimilarityTask
    from bert_tf.text.preprocessing import BertPreprocessor

    run = RunOptions(
        output_dir=str(output_dir),
        init_checkpoint=minilm_dir,
        do_train=True,
        training=TrainingOptions(train_batch_size=4, num_train_epochs=3.0),
    )
    task = SimilarityTask(
        run,
        # CoSENT: the scores (row numbers / 10, to track rows) are only ranked.
        SimilarityOptions(
            train_file=train_file, loss="cosent", group_by_length=group_by_length
        ),
    )
    task.prepare(None)
    # The pipeline needs only the model's tokenizer.
    task.model = types.SimpleNamespace(
        preprocessor=BertPreprocessor(
            os.path.join(minilm_dir, "vocab.txt"), True, 64, padding="longest"
        )
    )
    return task


def _batches(task, skip, count):
    data = task.training_data()
    dataset = data.dataset_fn(None, skip).take(count)
    return [
        (round(float(s), 1), b["input_ids"].shape[1])
        for b in dataset
        for s in b["scores"].numpy()
    ]


def test_similarity_pipeline_grouped_resumes_exactly_and_pads_less(
    minilm_dir, tmp_path
):
    rng = np.random.default_rng(3)
    # Pairs of like length (as in STS-B), lengths 1 to 39 words.
    rows = [(int(n), int(n) + 1) for n in rng.integers(1, 39, size=40)]
    train_file = _write_pairs(tmp_path / "train.tsv", rows)
    grouped = _task(minilm_dir, train_file, tmp_path / "a", None)
    assert grouped.options.group_by_length  # the default of scored pairs
    epoch = _batches(grouped, 0, 10)
    # Every row once in the first epoch (scores are the row numbers / 10).
    assert sorted(s for s, _ in epoch) == [round(i / 10, 1) for i in range(40)]
    # A run resumed at batch 6 sees batches 6... of the uninterrupted run.
    assert _batches(grouped, 6, 4) == epoch[6 * 4 :]
    plain = _task(minilm_dir, train_file, tmp_path / "b", False)
    plain_epoch = _batches(plain, 0, 10)
    assert sorted(s for s, _ in plain_epoch) == sorted(s for s, _ in epoch)
    # Padded word pieces of the epoch (each row's batch width, both texts).
    assert sum(w for _, w in epoch) < 0.8 * sum(w for _, w in plain_epoch)


def test_ranking_losses_do_not_group_by_default():
    from bert_tf.options.similarity_options import SimilarityOptions

    assert not SimilarityOptions(loss="mnr", score_column=None).group_by_length
    assert SimilarityOptions(loss="mnr", group_by_length=True).group_by_length
    assert SimilarityOptions(loss="cosent").group_by_length
