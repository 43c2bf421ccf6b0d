"""Run by every Python process the tests start (`cli_script.script_env` puts
this folder on PYTHONPATH).

Keras imports scikit-learn at start-up when it is installed, for its
scikit-learn wrappers: about 1.5 s of CPU per process. bert_tf never uses
them, and `pip install .` does not install scikit-learn (only the test
extras pull it in, through sentence-transformers), so the tools under test
start here as they do on a user's machine. The pytest workers themselves
keep scikit-learn (test_classification_metrics compares with it).
"""

import sys

sys.modules.setdefault("sklearn", None)
