"""Reading a TensorFlow Datasets dataset instead of the original's files."""

import dataclasses

from bert_tf.data_prep.tfds_input import check_supported
from bert_tf.errors import UserInputError
from bert_tf.options.option import option


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

    tfds_name: str | None = option(
        None,
        "Read a TensorFlow Datasets dataset instead of files, e.g. glue/mrpc, "
        "squad/v1.1 (needs the tensorflow-datasets package: bert_tf[tfds]).",
    )
    tfds_data_dir: str | None = option(
        None, "TFDS data directory (default: TFDS's own, ~/tensorflow_datasets)."
    )
    tfds_download: bool = option(
        True,
        "Download and prepare the TFDS dataset when it is not in --tfds_data_dir.",
    )
    tfds_split_train: str | None = option(
        None, "TFDS split to train on (default: the dataset's train split)."
    )
    tfds_split_eval: str | None = option(
        None,
        "TFDS split to evaluate on (default: validation; MNLI: validation_matched).",
    )
    tfds_split_predict: str | None = option(
        None, "TFDS split to predict (default: test; SQuAD: validation)."
    )
    tfds_text_a_feature: str | None = option(
        None, "TFDS feature of the first text (default: the config's, e.g. sentence1)."
    )
    tfds_text_b_feature: str | None = option(
        None,
        "TFDS feature of the second text (default: the config's; an empty "
        "value makes a single-sentence task).",
    )
    tfds_label_feature: str | None = option(
        None, "TFDS label feature (default: label)."
    )

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
