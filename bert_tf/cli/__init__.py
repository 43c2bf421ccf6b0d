"""The command-line tools, one module per tool, each with a `main()`.

Installed as ``bert-tf-<tool>`` (``bert-tf-run-classifier``, ...), runnable as
``python -m bert_tf.cli.<tool>``, and called by the checkout's top-level
``<tool>.py`` files. Defining their flags does not import TensorFlow.
"""
