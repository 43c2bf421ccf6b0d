"""The ``[corpus]`` extra: its modules, imported with one line naming the install."""

import importlib

from bert_tf.errors import UserInputError

INSTALL = 'pip install "bert_tf[corpus]"'
# module -> what needs it.
MODULES = {
    "wikiextractor.extract": "wikitext extraction (WikiExtractor)",
    "blingfire": "sentence splitting (Bling Fire)",
    "datasketch": "near-duplicate removal (datasketch MinHash)",
    "pyarrow.parquet": "Parquet input (pyarrow)",
}


def import_extra(module):
    """The module `module` of the extra, or a UserInputError naming the install.

    Example:

    ```python
    blingfire = import_extra("blingfire")
    ```
    """
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise UserInputError(
            f"prepare_corpus needs {MODULES[module]}, not installed: {INSTALL}"
        ) from error


def check_extra(modules=("wikiextractor.extract", "blingfire", "datasketch")):
    """Imports `modules` now, so a missing extra is named before any work."""
    for module in modules:
        import_extra(module)
