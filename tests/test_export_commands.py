"""SavedModel exports made by the command-line tools: export_saved_model.py from a
checkpoint, run_squad.py --export_dir, and the export of a run_classifier.py run.

The models (tests/conftest.py) and references (tests/export_references.py) are
tests/test_export.py's: small random-weight models with the real uncased BERT
vocabulary, and the Keras models fed by the Python tokenizer and the original's
packing.
"""

import json
import os
import re
import shutil

import numpy as np
import pytest
import tensorflow as tf
from export_references import SEQ_LENGTH
from export_references import keras_probabilities
from tiny_models import tiny_bert_config

import bert_tf
from bert_tf.text import tokenization

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_export_script_from_a_checkpoint(models, vocab_file, tmp_path):
    from cli_script import run_script

    checkpoint_dir = tmp_path / "mrpc_output"
    checkpoint_dir.mkdir()
    bert_tf.save_tf1_checkpoint(
        models["classifier"], str(checkpoint_dir / "model.ckpt-7")
    )
    shutil.copyfile(vocab_file, checkpoint_dir / "vocab.txt")
    serving = tmp_path / "serving"
    result = run_script(
        os.path.join(REPO, "export_saved_model.py"),
        "--model_type=classifier",
        "--task_name=MRPC",
        f"--init_checkpoint={checkpoint_dir}",
        f"--max_seq_length={SEQ_LENGTH}",
        f"--export_dir={serving}",
        "--export_version=3",
    )
    assert result.stdout.strip() == str(serving / "3")
    signature = tf.saved_model.load(str(serving / "3")).signatures["serving_default"]
    texts_a, texts_b = ["He said so.", "Prices rose"], ["He did say it.", "Prices fell"]
    outputs = signature(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
    expected = keras_probabilities(models, vocab_file, texts_a, texts_b)
    np.testing.assert_allclose(outputs["probabilities"], expected, atol=1e-5)
    assert {s.decode() for s in outputs["labels"].numpy()} <= {"0", "1"}

    wrong = run_script(
        os.path.join(REPO, "export_saved_model.py"),
        "--model_type=classifier",
        f"--init_checkpoint={checkpoint_dir}",
        f"--export_dir={serving}",
        f"--max_seq_length={SEQ_LENGTH}",
        check=False,
    )
    assert wrong.returncode != 0 and "--task_name or --labels" in wrong.stderr


def _long_context_questions(shared_data, tmp_path, count, tokenizer, window_tokens):
    """A SQuAD dev subset in the 2.0 format (every question answerable): the
    first `count` questions whose context has more word pieces than one
    window holds."""
    path = os.path.join(shared_data, "squad", "dev-v1.1.json")
    if not os.path.exists(path):
        pytest.skip(f"{path} is missing")
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    kept, questions = [], 0
    for article in data["data"]:
        paragraphs = []
        for paragraph in article["paragraphs"]:
            if len(tokenizer.tokenize(paragraph["context"])) <= window_tokens:
                continue
            qas = [
                dict(qa, is_impossible=False)
                for qa in paragraph["qas"][: count - questions]
            ]
            paragraph = dict(paragraph, qas=qas)
            questions += len(paragraph["qas"])
            paragraphs.append(paragraph)
            if questions >= count:
                break
        if paragraphs:
            kept.append(dict(article, paragraphs=paragraphs))
        if questions >= count:
            break
    subset = tmp_path / "dev-subset.json"
    subset.write_text(json.dumps({"data": kept, "version": "v2.0"}))
    return str(subset), kept


@pytest.mark.slow
def test_span_answers_equal_run_squad_predictions(
    models, vocab_file, shared_data, tmp_path
):
    """run_squad.py --do_predict --export_dir on SQuAD dev questions whose
    context spans several windows (SQuAD 2.0 rules: null score and
    threshold): the SavedModel's answers are predictions.json's, its null
    score differences null_odds.json's, its n-best lists nbest_predictions'."""
    from cli_script import run_script

    seq_length, query_length, stride = 64, 16, 24
    tokenizer = tokenization.FullTokenizer(vocab_file, True)
    predict_file, articles = _long_context_questions(
        shared_data, tmp_path, 60, tokenizer, seq_length - 3 - query_length
    )
    checkpoint = tmp_path / "span"
    checkpoint.mkdir()
    bert_tf.save_tf1_checkpoint(models["span"], str(checkpoint / "model.ckpt-1"))
    output, serving = tmp_path / "out", tmp_path / "serving"
    run_script(
        os.path.join(REPO, "run_squad.py"),
        "--do_predict=true",
        f"--predict_file={predict_file}",
        f"--vocab_file={vocab_file}",
        f"--init_checkpoint={checkpoint}",
        f"--output_dir={output}",
        f"--max_seq_length={seq_length}",
        f"--max_query_length={query_length}",
        f"--doc_stride={stride}",
        "--max_answer_length=12",
        "--n_best_size=8",
        "--version_2_with_negative=true",
        "--null_score_diff_threshold=-0.05",
        f"--export_dir={serving}",
        timeout=600,
    )
    predictions = json.loads((output / "predictions.json").read_text())
    null_odds = json.loads((output / "null_odds.json").read_text())
    nbest = json.loads((output / "nbest_predictions.json").read_text())
    signature = tf.saved_model.load(str(serving / "1")).signatures["serving_default"]
    questions = [
        (qa["id"], qa["question"], paragraph["context"])
        for article in articles
        for paragraph in article["paragraphs"]
        for qa in paragraph["qas"]
    ]
    assert len(questions) >= 50
    answered = 0
    for i in range(0, len(questions), 16):
        chunk = questions[i : i + 16]
        out = signature(
            question=tf.constant([q for _, q, _ in chunk]),
            context=tf.constant([c for _, _, c in chunk]),
        )
        for row, (qid, _, context) in enumerate(chunk):
            text = out["answer_text"][row].numpy().decode()
            assert text == predictions[qid], qid
            np.testing.assert_allclose(
                out["null_score_diff"][row], null_odds[qid], atol=1e-5
            )
            want = [entry["text"] for entry in nbest[qid]]
            got = [t.decode() for t in out["nbest_text"][row].numpy()]
            assert got[: len(want)] == want and not any(got[len(want) :]), qid
            np.testing.assert_allclose(
                out["nbest_probability"][row][: len(want)],
                [entry["probability"] for entry in nbest[qid]],
                atol=1e-5,
            )
            if text:
                answered += 1
                start, end = out["answer_start"][row], out["answer_end"][row]
                raw = context.encode("utf-8")[start:end].decode()
                assert re.sub(r"[ \t\r\n\u202f]+", " ", raw) == text
    assert answered >= 10


@pytest.mark.slow
def test_a_pair_tasks_run_exports_pairs_without_its_task_name(shared_data, tmp_path):
    """An MRPC run exported with neither task_name nor text_pair serves
    (text_a, text_b), as the run was trained, and answers as the run's
    checkpoint does through bert_tf.pipeline (the Keras model)."""
    from cli_script import run_script

    from bert_tf.options.export_options import ExportOptions
    from bert_tf.options.saved_model_export_options import SavedModelExportOptions
    from bert_tf.tasks import saved_model_export

    vocab = os.path.join(shared_data, "vocab", "bert-base-uncased", "vocab.txt")
    config = tmp_path / "bert_config.json"
    tiny_bert_config(30522).to_json_file(config)
    output = tmp_path / "mrpc_output"
    run_script(
        os.path.join(REPO, "run_classifier.py"),
        "--task_name=MRPC",
        "--do_train",
        f"--data_dir={os.path.join(shared_data, 'glue', 'MRPC')}",
        f"--vocab_file={vocab}",
        f"--bert_config_file={config}",
        f"--max_seq_length={SEQ_LENGTH}",
        "--train_batch_size=32",
        "--num_train_epochs=0.02",
        f"--output_dir={output}",
    )
    version = saved_model_export.run(
        SavedModelExportOptions(
            "classifier",
            str(output),
            ExportOptions(str(tmp_path / "serving")),
            max_seq_length=SEQ_LENGTH,
        )
    )
    signature = tf.saved_model.load(version).signatures["serving_default"]
    assert set(signature.structured_input_signature[1]) == {"text_a", "text_b"}
    rows = [
        line.split("\t")
        for line in open(
            os.path.join(shared_data, "glue", "MRPC", "dev.tsv"), encoding="utf-8"
        )
        .read()
        .splitlines()[1:9]
    ]
    texts_a, texts_b = [r[3] for r in rows], [r[4] for r in rows]
    served = signature(text_a=tf.constant(texts_a), text_b=tf.constant(texts_b))
    classify = bert_tf.pipeline("text-classification", str(output))
    answers = classify(texts_a, text_pair=texts_b)
    np.testing.assert_allclose(
        served["probabilities"].numpy().max(axis=1),
        [a["score"] for a in answers],
        atol=1e-5,
    )
    assert [s.decode() for s in served["labels"].numpy()] == [
        a["label"] for a in answers
    ]
