"""The same features give the same TFRecord bytes in every process.

`tf.train.Example.SerializeToString()` writes the feature map in an order that
follows a per-process hash seed, so two runs of run_classifier.py or
run_squad.py on the same data wrote files that differ byte for byte (the
records parse to the same features). The writers serialize deterministically.
"""

import subprocess
import sys
import textwrap

import pytest
from cli_script import REPO
from cli_script import script_env

WRITE = textwrap.dedent(
    """
    import sys
    from bert_tf.data_prep import classifier_features, classifier_records, squad

    class Feature:
        def __init__(self, **values):
            self.__dict__.update(values)

    ids = [101, 7592, 102, 0]
    classifier = [
        classifier_features.InputFeatures(
            input_ids=ids, input_mask=[1, 1, 1, 0], segment_ids=[0, 0, 0, 0],
            label_id=label, is_real_example=True,
        )
        for label in (0, 1)
    ]
    classifier_records.write_classifier_records(classifier, sys.argv[1], False)
    with squad.FeatureWriter(sys.argv[2], is_training=True) as writer:
        writer.process_feature(Feature(
            unique_id=1000000000, input_ids=ids, input_mask=[1, 1, 1, 0],
            segment_ids=[0, 0, 1, 0], start_position=1, end_position=1,
            is_impossible=False,
        ))
    """
)


def _write_in_new_process(directory):
    paths = [
        str(directory / "classifier.tf_record"),
        str(directory / "squad.tf_record"),
    ]
    subprocess.run(
        [sys.executable, "-c", WRITE, *paths],
        check=True,
        cwd=REPO,
        env=script_env(),
    )
    return [open(path, "rb").read() for path in paths]


@pytest.mark.slow
def test_records_are_byte_identical_across_processes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = _write_in_new_process(tmp_path / "a")
    second = _write_in_new_process(tmp_path / "b")
    assert all(first)
    assert first == second
