"""The error raised for bad user input: files, rows, flags, checkpoints."""


class UserInputError(ValueError):
    """Bad input the user can fix: a malformed row, a missing file, a bad flag.

    The message is one line that names the place (``file:line: reason`` or
    ``--flag: reason``). The command-line tools print just that line and exit
    with status 2 (the traceback only with ``--verbosity=1``); other
    exceptions are bugs and keep their traceback. A `ValueError`, so code that
    catches ValueError keeps working.

    Example:

    >>> raise UserInputError("train.tsv:7: expected 3 columns, got 2")
    Traceback (most recent call last):
    ...
    bert_tf.errors.UserInputError: train.tsv:7: expected 3 columns, got 2

    A library error names the parameter (``pooling='cls' differs ...``);
    ``argument="pooling"`` lets the command-line tools name the flag of the
    same name instead (``--pooling='cls' differs ...``): each mention of the
    message's arguments becomes the flag (of a name without "_", which may
    be a plain word, only ``name=``). `argument` may be a tuple of names
    (a message about two parameters), or a `{parameter: flag name}` dict
    where the tool's flag is named otherwise (``eval_split`` is
    ``--tfds_split_eval``).
    """

    def __init__(self, message, argument=None):
        super().__init__(message)
        if isinstance(argument, dict):
            self.flags = {name: flag for name, flag in argument.items() if name}
        elif isinstance(argument, (tuple, list)):
            self.flags = {name: name for name in argument}
        else:
            self.flags = {argument: argument} if argument else {}
        self.arguments = tuple(self.flags)
        self.argument = self.arguments[0] if self.arguments else None


class LostWorkerError(RuntimeError):
    """A worker of a multi-worker run stopped (killed, crashed, unreachable).

    Raised by the Trainer on the workers that survive, instead of
    TensorFlow's collective-op error; the command-line tools print its one
    line and exit with status 3 (`LOST_WORKER_EXIT_CODE`), which a restart
    loop (Slurm, Kubernetes) takes as "restart all workers": training resumes
    from the last checkpoint in output_dir.

    Args:
        worker: the lost worker as TF_CONFIG names it (``"worker 1
            (10.0.0.2:2222)"``), or None when the error does not say.
        output_dir: the run's output directory (named in the message).

    Example:

    >>> raise LostWorkerError("worker 1 (127.0.0.1:2222)", "/runs/1")
    Traceback (most recent call last):
    ...
    bert_tf.errors.LostWorkerError: worker 1 (127.0.0.1:2222) was lost during training; restart all workers: training resumes from the last checkpoint in /runs/1
    """

    def __init__(self, worker, output_dir):
        self.worker = worker
        self.output_dir = output_dir
        super().__init__(
            f"{worker or 'a worker'} was lost during training; restart all "
            "workers: training resumes from the last checkpoint in "
            f"{output_dir}"
        )
