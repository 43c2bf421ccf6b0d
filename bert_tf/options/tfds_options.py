"""Reading a TensorFlow Datasets dataset instead of the original's files."""

import dataclasses

from bert_tf.data_prep.tfds_input import check_supported
from bert_tf.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class TfdsOptions:
    """The --tfds_* flags (None fields: the dataset's defaults).

    Args:
      tfds_name: the dataset, e.g. glue/mrpc (None: read files).
      tfds_data_dir: TFDS data directory.
      tfds_download: download and prepare the dataset when missing.
      tfds_split_train, tfds_split_eval, tfds_split_predict: splits.
      tfds_text_a_feature, tfds_text_b_feature, tfds_label_feature: the
        features of a text classification dataset.

    Example:

    ```python
    TfdsOptions(tfds_name="glue/mrpc").check(("data_dir",), {}, GLUE_CONFIGS)
    ```
    """

    tfds_name: str | None = None
    tfds_data_dir: str | None = None
    tfds_download: bool = True
    tfds_split_train: str | None = None
    tfds_split_eval: str | None = None
    tfds_split_predict: str | None = None
    tfds_text_a_feature: str | None = None
    tfds_text_b_feature: str | None = None
    tfds_label_feature: str | None = None

    def check(self, file_options, supported):
        """Checks the options against each other and the file options.

        Args:
          file_options: `{flag name: value}` of the options naming input
            files, exclusive with --tfds_name.
          supported: the TFDS configs the tool reads.
        """
        if not self.tfds_name:
            for field in dataclasses.fields(self):
                if field.name in ("tfds_name", "tfds_download"):
                    continue
                if getattr(self, field.name) not in (None, ""):
                    raise UserInputError(f"--{field.name} needs --tfds_name")
            return
        for name, value in file_options.items():
            if value:
                raise UserInputError(
                    f"--tfds_name reads the data from TFDS: drop --{name} (the two "
                    "are exclusive)"
                )
        check_supported(self.tfds_name, supported)
