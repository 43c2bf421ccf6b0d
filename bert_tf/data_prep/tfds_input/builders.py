"""TFDS builders and rows, shared by the GLUE, SQuAD and CoNLL-2003 readers."""

from absl import logging

from bert_tf.errors import UserInputError

_INSTALL_HINT = (
    "reading TFDS datasets (tfds_name) needs the optional package "
    "tensorflow-datasets: pip install 'bert_tf[tfds]' (or pip install "
    "tensorflow-datasets importlib_resources)"
)


def import_tfds():
    """Returns the `tensorflow_datasets` module, or an ImportError saying how to
    install it."""
    try:
        import tensorflow_datasets
    except ImportError as exc:
        raise ImportError(_INSTALL_HINT) from exc
    return tensorflow_datasets


def config_key(tfds_name):
    """`glue/mrpc:2.0.0` -> `glue/mrpc` (lower case, no version)."""
    return tfds_name.split(":")[0].strip().lower()


def check_supported(tfds_name, supported):
    """Raises a ValueError listing `supported` when `tfds_name` is not one."""
    if config_key(tfds_name) not in supported:
        raise UserInputError(
            f"tfds_name={tfds_name!r} is not supported here; supported: "
            f"{', '.join(sorted(supported))}",
            argument="tfds_name",
        )


def load_builder(tfds_name, data_dir=None, download=True):
    """The prepared `tfds` builder of `tfds_name` (downloading it if allowed).

    Raises:
      ImportError: tensorflow-datasets is not installed.
      ValueError: the dataset is not prepared in `data_dir` and `download` is
        False.
    """
    tfds = import_tfds()
    builder = tfds.builder(tfds_name, data_dir=data_dir)
    if not builder.is_prepared():
        if not download:
            raise UserInputError(
                f"TFDS dataset {tfds_name} is not prepared in {builder.data_dir} "
                "(data_dir); allow the download (download=true) or "
                "prepare it with `tfds build`",
                argument={"data_dir": "tfds_data_dir", "download": "tfds_download"},
            )
        logging.info("Downloading and preparing TFDS %s", tfds_name)
        builder.download_and_prepare()
    return builder


def check_split(builder, tfds_name, split, parameter, flag):
    """A clear error for an unknown split name (`split` may use TFDS's slicing
    syntax, `train[:10%]+validation`), naming the `parameter` that gave it
    (the tools' `flag`); a builder without split metadata is left to TFDS."""
    known = builder.info.splits
    names = [part.split("[")[0].strip() for part in split.split("+")]
    if known and any(name not in known for name in names):
        raise UserInputError(
            f"TFDS {tfds_name} has no split ({parameter}={split!r}); its splits: "
            f"{', '.join(sorted(builder.info.splits.keys()))}",
            argument={parameter: flag},
        )


def rows(builder, split):
    """The split's rows as dicts of numpy values, in stored order."""
    tfds = import_tfds()
    return tfds.as_numpy(builder.as_dataset(split=split, shuffle_files=False))


def scalar_rows(builder, split, batch_size=4096):
    """As `rows`, for datasets whose features are all scalars (GLUE): read in
    batches, which is several times faster than one element at a time."""
    tfds = import_tfds()
    dataset = builder.as_dataset(split=split, shuffle_files=False).batch(batch_size)
    for batch in tfds.as_numpy(dataset):
        names = list(batch)
        for values in zip(*(batch[name] for name in names), strict=True):
            yield dict(zip(names, values, strict=True))


def as_str(value):
    """A TFDS string value (bytes) as str."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)
