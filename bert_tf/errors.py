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
    same name instead (``--pooling='cls' differs ...``).
    """

    def __init__(self, message, argument=None):
        super().__init__(message)
        self.argument = argument
