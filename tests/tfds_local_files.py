"""Builds official TFDS datasets offline, from local copies of their downloads.

Test and benchmark code only: TFDS's own builders parse the local files
(their downloads patched with `unittest.mock`), so what is built is what
`tfds.load` would build from the downloaded originals.
"""

import os
import pathlib
import urllib.parse
from unittest import mock

from bert_tf.data_prep.tfds_input import import_tfds


def _file_name(url):
    """The name of the file a download URL points at (query removed, %2F
    decoded: `.../o/data%2Fmrpc_dev_ids.tsv?alt=media` -> `mrpc_dev_ids.tsv`)."""
    path = urllib.parse.unquote(urllib.parse.urlparse(url).path)
    return os.path.basename(path)


def prepare_from_local_files(tfds_name, data_dir, local_files):
    """Builds the official TFDS dataset `tfds_name` into `data_dir` from local
    copies of the files its builder downloads (no network).

    The builder's own code parses the files, so the result is what
    `tfds.load` would build from the downloaded originals.

    Args:
      tfds_name: e.g. "glue/mrpc", "glue/sst2", "squad/v1.1".
      data_dir: TFDS data directory to write.
      local_files: {downloaded file name: local path}; the name is the last
        part of the URL (`SST-2.zip`, `msr_paraphrase_train.txt`,
        `mrpc_dev_ids.tsv`, `dev-v1.1.json`), and for an archive the path is
        the folder it extracts to.

    Returns:
      The prepared builder.
    """
    tfds = import_tfds()

    def local(url):
        name = _file_name(url)
        if name not in local_files:
            raise ValueError(
                f"TFDS {tfds_name} downloads {url}: give local_files[{name!r}]"
            )
        # A Path: some builders join the extracted folder with `/`.
        return pathlib.Path(local_files[name])

    def resolve(_, urls):
        if isinstance(urls, dict):
            return {key: local(url) for key, url in urls.items()}
        if isinstance(urls, list | tuple):
            return [local(url) for url in urls]
        return local(urls)

    manager = tfds.download.DownloadManager
    with (
        mock.patch.object(manager, "download", resolve),
        mock.patch.object(manager, "download_and_extract", resolve),
    ):
        builder = tfds.builder(tfds_name, data_dir=data_dir)
        builder.download_and_prepare(
            download_config=tfds.download.DownloadConfig(try_download_gcs=False)
        )
    return builder
