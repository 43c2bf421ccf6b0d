"""embed.py --prompt_name and --truncate_dim against sentence-transformers' encode of the same directory."""

import os

import numpy as np
import pytest
from cli_script import REPO
from cli_script import run_script

SCRIPT = os.path.join(REPO, "embed.py")
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
        f"embed: error: --prompt_name=question: {directory} has the prompts "
        "['document', 'query']"
    ]
    too_wide = run_script(
        SCRIPT,
        f"--init_checkpoint={directory}",
        f"--input_file={source}",
        f"--output_file={output}",
        "--truncate_dim=0",
        check=False,
    )
    assert too_wide.returncode == 2
    assert "--truncate_dim" in too_wide.stderr
