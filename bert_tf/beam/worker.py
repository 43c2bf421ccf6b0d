"""Beam's SDK worker of the local multi-process runner, printing nothing twice.

Beam's worker (``apache_beam.runners.worker.sdk_worker_main``) forwards its
log records to the runner, which logs them (at the runner's level, see
`bert_tf.beam.runner_options`). Its import also set up a stderr handler (a
root-logger warning at import calls ``basicConfig``), so each message was
printed twice, and a failed step's traceback is printed to stderr besides
being sent to the runner, which raises it. This entry point gives the root
logger a do-nothing handler first, and with ``--quiet`` sends the worker's
stderr to /dev/null once the worker runs (the runner has every error).

Example (what the runner starts; not for users):

```
python -m bert_tf.beam.worker --quiet
```
"""

import logging
import os
import sys


def main():
    logging.getLogger().addHandler(logging.NullHandler())
    from apache_beam.runners.worker import sdk_worker_main

    stderr = sys.stderr
    if "--quiet" in sys.argv[1:]:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 (the process's)
    try:
        sdk_worker_main.main(sys.argv)
    except BaseException:
        sys.stderr = stderr  # a worker that cannot start says why
        raise


if __name__ == "__main__":
    main()
