"""--prompt_name and --truncate_dim of embed.py and the embedding exports against sentence-transformers' encode."""

import os

import numpy as np
import pytest
from cli_script import REPO
from cli_script import run_script

SCRIPT = os.path.join(REPO, "embed.py")
EXPORT = os.path.join(REPO, "export_saved_model.py")
SENTENCES = [
    "Who won Super Bowl 50?",
    "The Denver Broncos defeated the Carolina Panthers 24-10.",
    "short",
]


@pytest.mark.slow
def test_prompt_name_and_truncate_dim_equal_sentence_transformers(minilm_dir, tmp_path):
    sentence_transformers = pytest.importorskip("sentence_transformers")
    model = sentence_transformers.SentenceTransformer(
        minilm_dir,
        device="cpu",
        prompts={"query": "query: ", "document": "passage: "},
    )
    directory = str(tmp_path / "prompted")
    model.save(directory)
    source = tmp_path / "in.txt"
    source.write_text("\n".join(SENTENCES) + "\n", encoding="utf-8")
    output = tmp_path / "vectors.npy"
    run_script(
        SCRIPT,
        f"--init_checkpoint={directory}",
        f"--input_file={source}",
        f"--output_file={output}",
        "--prompt_name=query",
        "--truncate_dim=128",
    )
    expected = model.encode(SENTENCES, prompt_name="query", truncate_dim=128)
    vectors = np.load(output)
    assert vectors.shape == (3, 128)
    np.testing.assert_allclose(vectors, expected, atol=2e-5)
    # The prompt changed the vectors (not only the cut).
    plain = model.encode(SENTENCES, truncate_dim=128)
    assert np.abs(vectors - plain).max() > 1e-2

    # The SavedModel serves the same vectors.
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the SavedModel's tokenizer ops)

    export_dir = tmp_path / "export"
    run_script(
        EXPORT,
        "--model_type=embedding",
        f"--init_checkpoint={directory}",
        f"--export_dir={export_dir}",
        "--prompt_name=query",
        "--truncate_dim=128",
    )
    served = tf.saved_model.load(str(export_dir / "1")).signatures["serving_default"]
    embeddings = served(text=tf.constant(SENTENCES))["embeddings"].numpy()
    np.testing.assert_allclose(embeddings, expected, atol=2e-5)

    bad = run_script(
        SCRIPT,
        f"--init_checkpoint={directory}",
        f"--input_file={source}",
        f"--output_file={output}",
        "--prompt_name=question",
        check=False,
    )
    assert bad.returncode == 2
    errors = [line for line in bad.stderr.splitlines() if "error:" in line]
    assert errors == [
        "embed: error: --prompt_name=question: the model's prompts are "
        "['document', 'query']"
    ]


def test_export_options_take_them_for_embeddings_only(minilm_dir, tmp_path):
    from bert_tf.errors import UserInputError
    from bert_tf.options import ExportOptions
    from bert_tf.options import SavedModelExportOptions
    from bert_tf.options.litert_export_options import LiteRTExportOptions

    export = ExportOptions(str(tmp_path / "export"))
    with pytest.raises(
        UserInputError, match="--prompt_name: for --model_type=embedding"
    ):
        SavedModelExportOptions(
            "classifier", minilm_dir, export, labels=("0", "1"), prompt_name="query"
        )
    with pytest.raises(UserInputError, match="--truncate_dim: must be positive"):
        SavedModelExportOptions("embedding", minilm_dir, export, truncate_dim=0)
    with pytest.raises(UserInputError, match="--truncate_dim: for --model_type"):
        LiteRTExportOptions(
            "encoder", minilm_dir, str(tmp_path / "m.tflite"), truncate_dim=8
        )
    assert (
        LiteRTExportOptions(
            "embedding", minilm_dir, str(tmp_path / "m.tflite"), truncate_dim=8
        ).truncate_dim
        == 8
    )
