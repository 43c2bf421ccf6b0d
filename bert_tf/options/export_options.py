"""Where and how a run exports its SavedModel for TF Serving."""

import dataclasses
import os

from bert_tf.errors import UserInputError
from bert_tf.options.checks import check_choices
from bert_tf.options.option import option

SERVING_TOKENIZERS = ("bert", "fast_bert")
SERVING_DTYPES = ("float32", "bfloat16", "float16")


@dataclasses.dataclass(frozen=True)
class ExportOptions:
    """--export_dir and the serving flags.

    Args:
      export_dir: the SavedModel goes to export_dir/<version>/.
      serving_tokenizer: in-graph tokenizer, one of `SERVING_TOKENIZERS`.
      serving_dtype: serving precision, one of `SERVING_DTYPES`.
      export_version: version directory (None: the next free one).

    Example:

    ```python
    ExportOptions(export_dir="/tmp/mrpc_export", serving_tokenizer="fast_bert")
    ```
    """

    export_dir: str = option(
        help="If set, export a SavedModel for TF Serving to export_dir/<version>/ at "
        "the end (raw-text `serving_default` and int32 `serve_tokenized` signatures, "
        "plus model.keras)."
    )
    serving_tokenizer: str = option(
        "bert",
        "In-graph tokenizer of the exported SavedModel: bert (tensorflow-text "
        "BertTokenizer ops, TF Serving >= 2.3, ids equal to the original's) or "
        "fast_bert (FastBertTokenizer, TF Serving >= 2.12, faster, differs on rare "
        "Unicode).",
        choices=SERVING_TOKENIZERS,
    )
    serving_dtype: str = option(
        "float32",
        "Precision the exported SavedModel computes in (weights stored in it, "
        "LayerNorm statistics and outputs float32).",
        choices=SERVING_DTYPES,
    )
    export_version: int | None = option(
        None,
        "Version directory of the export (export_dir/<export_version>/); default: "
        "1, or one more than the highest version already in export_dir.",
    )

    def __post_init__(self):
        check_choices(self)
        if self.export_version is not None and self.export_version < 1:
            raise UserInputError(
                f"--export_version={self.export_version}: must be positive (TF "
                "Serving serves the highest numbered version)"
            )
        self.check_target()

    def check_target(self):
        """The export would fail: export_dir is not a directory, or the
        version exists. Checked when made, so that a run_* tool finds it
        before training (local paths; remote ones when exporting)."""
        directory = self.export_dir
        if not directory or "://" in str(directory):
            return
        if os.path.exists(directory) and not os.path.isdir(directory):
            raise UserInputError(
                f"--export_dir={directory}: exists and is not a directory"
            )
        if self.export_version is not None:
            version_dir = os.path.join(directory, str(self.export_version))
            if os.path.lexists(version_dir):
                raise UserInputError(
                    f"--export_dir={directory}: version {self.export_version} "
                    f"already exists ({version_dir}); choose another "
                    "--export_version, or leave it out for the next free one"
                )
